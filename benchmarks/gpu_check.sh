#!/usr/bin/env bash
# The whole GPU check in one call (the device machine's time is scarce): GPU tests, the grader on every
# example, repeated gradings, the reference suite's benchmark and the batch throughput. Logs go to $OUT
# (the device tool's output folder) or results/.
#   bash benchmarks/gpu_check.sh
set -uo pipefail
out=${OUT:-results}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -m pytest -q -rs -m gpu tests 2>&1 | tee "$out/pytest-gpu.log" | tail -5
for f in submissions/*.cu; do
  echo "=== $f"; python3 -m grader.cli "$f"; echo "exit $?"
done > "$out/examples.log" 2>&1
for f in submissions/rope/*.cu; do  # the second exercise's examples (docs/exercises.md)
  echo "=== $f"; python3 -m grader.cli --exercise rope "$f"; echo "exit $?"
done >> "$out/examples.log" 2>&1
grep -E "^===|^Verdict|^exit|^Hint|^Flag" "$out/examples.log"
python3 benchmarks/stability.py --repeats 5 --out "$out/stability.json" 2>&1 | tail -9
python3 benchmarks/reference_perf.py --out "$out/reference_perf.json" > "$out/reference_perf.log" 2>&1
tail -30 "$out/reference_perf.log"
python3 benchmarks/batch_throughput.py --copies 3 --json "$out/batch_throughput.json" 2>&1 | head -3
