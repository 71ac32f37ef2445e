"""The process Nsight Compute profiles for `grade --counters` (grader.feedback.counters runs it under `ncu`):

    python -m grader.pipeline.profiled FILE [--exercise NAME] [--rows R --cols C] [--device N]

It reads and compiles the submission with the pipeline's own front (grader.pipeline.grade: read_submission,
compile_submission, launch_spec; sandboxed, as every compile), draws the exercise's inputs on the GPU as the
timed launches do (Exercise.device: its DeviceSide) at the benchmark Problem whose output is rows x cols (the
graded benchmark shape, Exercise.bench_dims; by default the benchmark Problem of this card), then launches, once
each and in this order, with the grader's own launch code (grader.core.launch):

  1. the submission;
  2. the exercise's model answer and 3. the page's answer (Exercise.references: bias_gelu's biasGeluFused<4>
     and <1> of its chain.cu, rope's ropeInterleavedVec2<4> and ropeInterleaved<1> of its rope.cu), on the
     same inputs, into a second output: what a kernel with wide accesses and one with the page's 4-byte
     accesses need;
  4. the 16-byte copy (copyVec4), 5. the one-float copy (copyScalar).

ncu names launches by their function's name; grader.feedback.counters tells the first three apart by this order
(ncu reports launches in the order they were made; grader.feedback.counters.LAUNCH_ORDER). Prints one JSON line
of what it launched, which nobody reads (ncu's log is the record; the profiled kernel's printf shares this stdout).
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from grader import exercises
from grader.core.launch import bind
from grader.gpu.device import open_gpu
from grader.pipeline.grade import compile_submission, launch_spec
from grader.source.read import read_submission
from grader.timing.timer import FLOOR_SCALAR, FLOOR_VEC4, CopyFloor

SEED = 0
"""The inputs' seed: the counters do not depend on the values drawn, only on the shape."""


def main(argv: list[str]) -> int:
    """Compile FILE, draw the exercise's inputs at the benchmark Problem, make the launches (module docstring)
    once each; returns the exit code (an error propagates as a traceback: the parent reports the run as failed)."""
    p = argparse.ArgumentParser(prog="python -m grader.pipeline.profiled")
    p.add_argument("file")
    p.add_argument("--exercise", default=exercises.DEFAULT, choices=exercises.names())
    p.add_argument("--rows", type=int, help="default: the card's benchmark Problem (Exercise.bench_problem)")
    p.add_argument("--cols", type=int)
    p.add_argument("--device", type=int, default=0)
    args = p.parse_args(argv)
    ex = exercises.get(args.exercise)
    sub = read_submission(args.file, ex)
    gpu = open_gpu(args.device)
    compiled = compile_submission(sub, ex, gpu.info.arch)
    spec = launch_spec(sub, compiled, ex)
    kernel = gpu.load(compiled)[ex.kernel_name]
    problem = (ex.problem(ex.bench_dims(args.rows, args.cols)) if args.rows and args.cols
               else ex.bench_problem(gpu.info.free_bytes, gpu.info.l2_bytes))
    side = ex.device(gpu, problem)
    side.redraw(np.random.default_rng(SEED))
    copy_out = gpu.alloc(problem.n * 4)
    theirs = {**side.buffers, **{o.name: copy_out for o in ex.outputs}}  # the references never overwrite yours
    refs = ex.references(gpu, problem, theirs)
    bind(gpu, kernel, spec, *problem.grid, sub.contract.launch_values(side.buffers, problem))()
    for label in ("model", "page"):
        if label in refs:
            refs[label]()
    copies = CopyFloor(gpu).launches(side.buffers[ex.inputs[0].name], copy_out, problem.n)
    copies[FLOOR_VEC4]()
    copies[FLOOR_SCALAR]()
    gpu.sync()
    print(json.dumps({"exercise": ex.name, "launched": [ex.kernel_name, *refs, FLOOR_VEC4, FLOOR_SCALAR],
                      "n": problem.n}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
