#!/usr/bin/env bash
# The counters' check on the GPU (issue 12): ncu's raw CSV for one submission, `grade --counters` on the
# examples (with the time it adds), `grade selfcheck --counters`. Logs in $OUT (or results/).
set -uo pipefail
out=${OUT:-results}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
ncu --version > "$out/ncu_version.txt" 2>&1
timeout 120 ncu --csv --page raw --print-units base --cache-control all \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum --kernel-name "regex:biasGeluFused|copyVec4" \
  python3 -m grader.profiled submissions/gold_float4.cu --rows 61440 --cols 4096 > "$out/ncu_raw.txt" 2>&1
for f in submissions/gold_float4.cu submissions/page_scalar.cu tests/data/silver/stride_float4.cu submissions/tanh_gelu.cu; do
  b=$(basename "$f" .cu)
  s=$(date +%s.%N); timeout 120 python3 -m grader.cli "$f" > "$out/plain_$b.txt" 2>&1; e=$(date +%s.%N)
  timeout 200 python3 -m grader.cli "$f" --counters > "$out/counters_$b.txt" 2>&1; c=$(date +%s.%N)
  echo "$b plain $(echo "$e - $s" | bc) s, with counters $(echo "$c - $e" | bc) s" | tee -a "$out/times.txt"
done
s=$(date +%s.%N)
timeout 400 python3 -m grader.cli selfcheck --counters --json "$out/selfcheck.json" > "$out/selfcheck.txt" 2>&1
echo "selfcheck exit $? in $(echo "$(date +%s.%N) - $s" | bc) s" | tee -a "$out/times.txt"
