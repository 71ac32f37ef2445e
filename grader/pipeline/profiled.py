"""The process Nsight Compute profiles for `grade --counters` (grader.feedback.counters runs it under `ncu`):

    python -m grader.pipeline.profiled FILE [--rows R --cols C] [--device N]

It compiles the submission (sandboxed, as every compile), fills x and bias on the GPU at rows x cols (the graded
benchmark shape; by default the benchmark shape of this card), then launches, once each and in this order
(LAUNCHES), with the grader's own launch code (grader.core.launch), so the profiled launches are the graded ones:

  1. the submission;
  2. the exercise's model answer, KERNEL<4> of grader/exercises/bias_gelu/chain.cu
     (grader.exercises.bias_gelu.page_kernels: a row
     grid, one float4 per thread): what a kernel with 16-byte accesses needs;
  3. the page's answer, KERNEL<1> (a row grid, one float per thread): what a kernel with 4-byte accesses
     needs;
  4. the 16-byte copy (copyVec4), 5. the one-float copy (copyScalar).

ncu names all three launches of the kernel alike, so grader.feedback.counters tells them apart by this order (ncu
reports launches in the order they were made; grader.feedback.counters.LAUNCH_ORDER). Prints one JSON line of what it
launched, which nobody reads (ncu's log is the record; the profiled kernel's printf shares this stdout).
"""

from __future__ import annotations

import argparse
import json
import sys

from grader.compile.nvrtc import compile_kernels
from grader.core.launch import bind
from grader.exercises import bias_gelu as exercise
from grader.exercises.bias_gelu.exercise import EXERCISE
from grader.exercises.bias_gelu.page_kernels import PAGE, WIDE, chain_kernels, load_chain
from grader.feedback.counters import MODEL, PAGE_ANSWER
from grader.gpu.device import open_gpu
from grader.source.read import read_submission
from grader.source.signature import check_params, source_signature
from grader.timing.timer import FLOOR_SCALAR, FLOOR_VEC4, CopyFloor, InputFiller, bench_shape

LAUNCHES = (exercise.KERNEL_NAME, MODEL, PAGE_ANSWER, FLOOR_VEC4, FLOOR_SCALAR)
"""The labels of the profiled launches, in launch order (module docstring)."""


def references(gpu) -> dict[str, tuple[object, object]]:
    """The model answer and the page's answer compiled for `gpu` and loaded: {label: (Kernel, LaunchSpec)}."""
    defs = {MODEL: chain_kernels(WIDE)[exercise.KERNEL_NAME], PAGE_ANSWER: chain_kernels(PAGE)[exercise.KERNEL_NAME]}
    loaded = load_chain(gpu, list(defs.values()))
    return {label: (loaded[d.expr], d.spec) for label, d in defs.items()}


def main(argv: list[str]) -> int:
    """Compile FILE, fill x and bias at rows x cols, make the LAUNCHES once each; returns the exit code (an
    error propagates as a traceback: the parent reports the run as failed)."""
    p = argparse.ArgumentParser(prog="python -m grader.pipeline.profiled")
    p.add_argument("file")
    p.add_argument("--rows", type=int, help="default: the benchmark shape (grader.timing.timer.bench_shape)")
    p.add_argument("--cols", type=int)
    p.add_argument("--device", type=int, default=0)
    args = p.parse_args(argv)
    sub = read_submission(args.file, EXERCISE)
    gpu = open_gpu(args.device)
    compiled = compile_kernels(sub.compile_text, sub.name, (exercise.KERNEL_NAME,), gpu.info.arch,
                               lineinfo=True)
    info = compiled.kernels[exercise.KERNEL_NAME]
    widths = check_params(sub.contract, [(q.ptx_type, q.size) for q in info.params],
                          source_signature(sub.text, exercise.KERNEL_NAME), exercise.KERNEL_NAME)
    kernel = gpu.load(compiled)[exercise.KERNEL_NAME]
    refs = references(gpu)
    rows, cols = (args.rows, args.cols) if args.rows and args.cols else bench_shape(gpu.info)
    n = rows * cols
    x, bias, out, copy_out = (gpu.alloc(n * 4), gpu.alloc(cols * 4), gpu.alloc(n * 4), gpu.alloc(n * 4))
    fill = InputFiller(gpu)
    fill(x, n, 1, *exercise.INPUT_X_RANGE)
    fill(bias, cols, 2, *exercise.INPUT_BIAS_RANGE)
    spec = sub.contract.launch_spec(widths)
    bind(gpu, kernel, spec, rows, cols, sub.contract.launch_values({"x": x, "bias": bias, "out": out},
                                                                  EXERCISE.problem((rows, cols))))()
    for label in (MODEL, PAGE_ANSWER):
        ref, ref_spec = refs[label]
        bind(gpu, ref, ref_spec, rows, cols, {"x": x, "bias": bias, "out": copy_out, "cols": cols})()
    copies = CopyFloor(gpu).launches(x, copy_out, n)
    copies[FLOOR_VEC4]()
    copies[FLOOR_SCALAR]()
    gpu.sync()
    print(json.dumps({"launched": list(LAUNCHES), "n": n}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
