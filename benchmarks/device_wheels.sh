#!/usr/bin/env bash
# Wheels of the project's Python dependencies that the GPU machine's image lacks (it has cuda-bindings 13.3.1,
# cuda-core 1.2.0, numpy, pytest, tabulate on Python 3.12; no pydantic, no landlockpy: docs/h200.md), downloaded here into
# .whl/ (ignored by git) for that machine's Python. Usage, from the project root:
#   bash benchmarks/device_wheels.sh [EXTRA_PACKAGE==VERSION ...]
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d .whl \
  pydantic pydantic-core annotated-types typing-inspection typing-extensions landlockpy "$@"
ls .whl
cat <<'MSG'
On the GPU machine, with .whl carried there, start the command with:
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit;
then, e.g.:  bash benchmarks/gpu_check.sh
MSG
