"""The process Nsight Compute profiles for `grade --counters` (grader.counters runs it under `ncu`):

    python -m grader.profiled FILE [--rows R --cols C] [--device N]

It compiles the submission (sandboxed, as every compile), fills x and bias on the GPU at rows x cols (the graded
benchmark shape; by default the benchmark shape of this card), then launches the submission once and the 16-byte copy once, with the grader's own launch
code (grader.launch), so the profiled launches are the graded ones. Prints one JSON line of what it launched.
"""

from __future__ import annotations

import argparse
import json
import sys

from grader import exercise
from grader.compile import compile_kernels
from grader.device import open_gpu
from grader.launch import bind
from grader.signature import check_params, source_signature
from grader.source import read_submission
from grader.timing import FLOOR_VEC4, CopyFloor, InputFiller, bench_shape


def main(argv: list[str]) -> int:
    """Compile FILE, fill x and bias at rows x cols, launch the submission and the 16-byte copy once each;
    returns the exit code (an error propagates as a traceback: the parent reports the run as failed)."""
    p = argparse.ArgumentParser(prog="python -m grader.profiled")
    p.add_argument("file")
    p.add_argument("--rows", type=int, help="default: the benchmark shape (grader.timing.bench_shape)")
    p.add_argument("--cols", type=int)
    p.add_argument("--device", type=int, default=0)
    args = p.parse_args(argv)
    sub = read_submission(args.file)
    gpu = open_gpu(args.device)
    compiled = compile_kernels(sub.compile_text, sub.name, (exercise.KERNEL_NAME,), gpu.info.arch)
    info = compiled.kernels[exercise.KERNEL_NAME]
    widths = check_params(sub.contract, [(q.ptx_type, q.size) for q in info.params],
                          source_signature(sub.text, exercise.KERNEL_NAME), exercise.KERNEL_NAME)
    kernel = gpu.load(compiled)[exercise.KERNEL_NAME]
    rows, cols = (args.rows, args.cols) if args.rows and args.cols else bench_shape(gpu.info)
    n = rows * cols
    x, bias, out, copy_out = (gpu.alloc(n * 4), gpu.alloc(cols * 4), gpu.alloc(n * 4), gpu.alloc(n * 4))
    fill = InputFiller(gpu)
    fill(x, n, 1, *exercise.INPUT_X_RANGE)
    fill(bias, cols, 2, *exercise.INPUT_BIAS_RANGE)
    spec = sub.contract.launch_spec(widths)
    bind(gpu, kernel, spec, rows, cols, sub.contract.launch_values({"x": x, "bias": bias, "out": out}, rows, cols))()
    CopyFloor(gpu).launches(x, copy_out, n)[FLOOR_VEC4]()
    gpu.sync()
    print(json.dumps({"launched": [exercise.KERNEL_NAME, FLOOR_VEC4], "n": n}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
