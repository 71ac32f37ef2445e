#!/usr/bin/env bash
# The counters' check on the GPU (issue 12; issue 23's hints: benchmarks/hint_check.py): ncu's raw CSV for one submission, `grade --counters` on the
# examples (with the time it adds), `grade selfcheck --counters`. Logs in $OUT (or results/), few files.
set -uo pipefail
out=${OUT:-results}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
now() { python3 -c 'import time; print(time.monotonic())'; }
{ ncu --version; timeout 120 ncu --csv --page raw --print-units base --cache-control all --clock-control none \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum --kernel-name "regex:biasGeluFused|copyVec4" \
  python3 -m grader.pipeline.profiled submissions/gold_float4.cu --rows 61440 --cols 4096; } > "$out/ncu_raw.txt" 2>&1
for f in submissions/gold_float4.cu submissions/page_scalar.cu tests/data/silver/stride_float4.cu submissions/tanh_gelu.cu; do
  s=$(now); timeout 120 python3 -m grader.cli "$f" > "$out/plain.txt" 2>&1; e=$(now)
  timeout 200 python3 -m grader.cli "$f" --counters; c=$(now)
  python3 -c "print('$f: plain %.1f s, with --counters %.1f s' % ($e - $s, $c - $e))" | tee -a "$out/times.txt"
done > "$out/gradings.txt" 2>&1
s=$(now)
timeout 400 python3 -m grader.cli selfcheck --counters --json > "$out/selfcheck.json" 2> "$out/selfcheck.txt"
echo "selfcheck exit $? in $(python3 -c "print('%.1f' % ($(now) - $s))") s" | tee -a "$out/times.txt"
