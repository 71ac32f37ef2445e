"""Stage 5c, chain: the exercise's chain, timed for the student's part-3 rows; never graded.

The exercise says: add biasGeluFused "to the chain in front of the existing residual add, add its row to the
part 3 table with its own byte count". After the graded measurement, the student's kernel is timed again in a
table of its own, in front of the page's residual add (addResidual), beside the page's staged chain
(addBiasRow, applyGeluErf, addResidual: 7 floats per element) and fused chain (biasGeluResidualFused: 3) and
the copies, at the benchmark shape, so the deleted store and load show in numbers:

    biasGeluFused                 1 kernel   2 floats/elem   (yours)
    biasGeluFused + addResidual   2 kernels  5 floats/elem   (yours, then the page's residual add)
    staged chain<4>               3 kernels  7
    fused chain<4>                1 kernel   3

The page's kernels (grader.exercises.bias_gelu.page_kernels) run at width 4 (WIDE: one float4 per thread), the width
that
reaches the copy floor on a card as fast as the H200 (the page's width 1 does not: 0.57 to 0.81 of it). The
timing holds the GPU's grading lock; a disturbed timing (grader.timing.contention), or a row faster than the copy
floor allows (grader.timing.timer.over_bound), shows no table. The rows printed as the student's are measured as the
graded ones are: inputs redrawn before every round (grader.check.draws), the student's outputs poisoned first and
checked on the GPU after it, against the inputs as drawn (grader.exercises.bias_gelu.device.DeviceCheck); a wrong one
fails the
submission (WrongOutput), as a wrong graded launch does.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from grader.core import exercise
from grader.core.errors import Busy, GraderFault, WrongOutput
from grader.core.exercise import Exercise
from grader.core.launch import LaunchSpec, bind
from grader.exercises.bias_gelu import KERNEL_NAME
from grader.exercises.bias_gelu.device import DeviceCheck, draw_on_gpu
from grader.exercises.bias_gelu.page_kernels import (
    FUSED,
    MODEL_ANSWER,
    STAGED,
    WIDE,
    chain_kernels,
    chain_versions,
    load_chain,
    make_launch,
)
from grader.gpu.device import Gpu
from grader.timing.contention import disturbed, gpu_turn
from grader.timing.timer import CopyFloor, InputFiller, Table, TableTimer, Timed, TimerSettings, bench_shape, over_bound

BUFFERS = 7
"""Benchmark-sized float32 buffers: x, r, t1, t2, out, and the student's two outputs (its row's out, its chain's
t1); t2 is also the copies' destination."""

CHAIN_SETTINGS = TimerSettings(warmup_ms=50.0, min_reps=20, target_rse=0.01, cap_s=5.0)
"""The chain follows the graded timing on the same GPU, whose clocks are up (grader.timing.timer.WARMUP_MS warmed it):
a shorter warm-up touches the new buffers. Its rows are shown, never graded, and differ by 2x and more: 20
rounds, until each median's relative standard error is under 1% (their spread and rounds are shown). 10 rounds
after a 10 ms warm-up once gave a row an 8% spread on the H200, which the disturbance check refuses."""

PAGE_KERNELS = ("addBiasRow", "applyGeluErf", "addResidual", "biasGeluResidualFused")
"""The page's kernels the table launches (at WIDE): the staged chain's three, and the fused chain."""

YOURS = KERNEL_NAME
YOURS_CHAIN = MODEL_ANSWER
"""Row labels of the student's two rows: the kernel alone, and the kernel then the page's residual add."""

STUDENT_OUTPUTS = {"y_out": YOURS, "y_t1": YOURS_CHAIN}
"""The buffers the student's kernel writes in the chain's rounds, each checked after every round, and its row."""


def chain_table(gpu: Gpu, kernel, spec: LaunchSpec, launch_values: Callable[[dict, int, int], dict], ex: Exercise,
                settings: TimerSettings = CHAIN_SETTINGS, rng: np.random.Generator | None = None) -> Table:
    """Time the student's kernel alone and in front of addResidual, beside the page's staged and fused chains
    and the copies (module docstring). spec: the submission's launch; launch_values(ptrs, rows, cols) its arguments;
    ex: the exercise (bias_gelu's Exercise: its on-GPU check's messages);
    rng: where the rounds' seeds come from (default: a fresh generator).

    Raises WrongOutput when the student's kernel gave a wrong output (or changed an input) in a round, Busy when the
    GPU was not quiet while timing, GraderFault when a row is faster than the copy floor allows (over_bound) or a
    buffer cannot be had (a card with too little free memory); SubmissionError when a kernel faults. No table is
    shown but the one returned.
    """
    rows, cols = bench_shape(gpu.info, BUFFERS, free_bytes=gpu.free_bytes())
    n = rows * cols
    page = chain_kernels(WIDE)
    loaded = load_chain(gpu, [page[k] for k in PAGE_KERNELS])
    big = {key: gpu.alloc(n * exercise.BYTES_PER_FLOAT) for key in ("x", "r", "t1", "t2", "out", *STUDENT_OUTPUTS)}
    bias = gpu.alloc(cols * exercise.BYTES_PER_FLOAT)
    check = None
    try:
        check = DeviceCheck(gpu, ex)
        rounds = _Rounds(gpu, InputFiller(gpu), check, {**big, "bias": bias}, rows, cols,
                         rng if rng is not None else np.random.default_rng())
        rounds.redraw(-1)
        timed = _rows(gpu, loaded, kernel, spec, launch_values, {**big, "bias": bias}, rows, cols)
        with gpu_turn(gpu):
            timer = TableTimer(gpu, CopyFloor(gpu), timed, n, big["x"], big["t2"], n, before_round=rounds.redraw,
                               after_round=rounds.check)
            timer.run(settings)
            if rounds.failures:
                raise WrongOutput(rounds.failures[0])
            table = timer.table("the exercise's chain", f"{rows} x {cols}", matrix=(rows, cols))
            reasons = disturbed(timer.timer.times, table.floor_gbs, gpu.info.peak_gbs)
        if reasons:
            raise Busy("the chain's timing was disturbed: " + "; ".join(reasons))
        high = over_bound(table, gpu.info.peak_gbs)
        if high:
            raise GraderFault("its timing cannot be trusted: " + "; ".join(high))
        return table
    finally:
        if check is not None:
            check.close()
        for buf in (*big.values(), bias):
            buf.close()


class _Rounds:
    """The chain's inputs and checks around each timed round: fresh draws of x and bias (and the page's residual
    r) before it, the student's outputs poisoned; after it, each student output checked against the draws."""

    def __init__(self, gpu: Gpu, fill: InputFiller, check: DeviceCheck, buffers: dict, rows: int, cols: int,
                 rng: np.random.Generator) -> None:
        self.gpu, self.fill, self.device_check, self.buffers, self.rows, self.cols, self.rng = (
            gpu, fill, check, buffers, rows, cols, rng)
        self.seeds = (0, 0)
        self.failures: list = []

    def redraw(self, k: int) -> None:
        """Fresh inputs for round k (k = -1: before the warm-up), the student's outputs poisoned."""
        n, b = self.rows * self.cols, self.buffers
        self.seeds = draw_on_gpu(self.fill, b["x"], b["bias"], self.rows, self.cols, self.rng)
        self.fill(b["r"], n, int(self.rng.integers(2**63)), -1.0, 1.0)
        for key in STUDENT_OUTPUTS:
            self.gpu.fill_words(b[key], exercise.POISON_WORD, n)

    def check(self, k: int) -> bool:
        """Check round k's student outputs (both in one pass); False (a failure kept) stops the timing."""
        (out, row), (out2, row2) = ((self.buffers[key], row) for key, row in STUDENT_OUTPUTS.items())
        v = self.device_check(self.buffers["x"], self.buffers["bias"], out, self.rows, self.cols, self.seeds,
                              f"the chain's round {k + 1} (row {row})",
                              second=(out2, f"the chain's round {k + 1} (row {row2})"))
        if not v.passed:
            self.failures.append(v)
        return v.passed


def _rows(gpu: Gpu, loaded: dict, kernel, spec: LaunchSpec, launch_values: Callable[[dict, int, int], dict],
          buffers: dict, rows: int, cols: int) -> list[Timed]:
    """The table's versions: the student's kernel alone (into y_out), the student's kernel into y_t1 then the
    page's addResidual (y_t1 + r into out), the page's staged and fused chains. Each row's byte model is its
    kernels' LaunchSpecs: the submission's (the exercise's 2 floats) and the page's."""
    n = rows * cols
    scalars = {"cols": cols, "n": n}
    versions = chain_versions(WIDE)
    yours = bind(gpu, kernel, spec, rows, cols, launch_values(
        {"x": buffers["x"], "bias": buffers["bias"], "out": buffers["y_out"]}, rows, cols))
    into_t1 = bind(gpu, kernel, spec, rows, cols, launch_values(
        {"x": buffers["x"], "bias": buffers["bias"], "out": buffers["y_t1"]}, rows, cols))
    add_residual = versions["addResidual"]
    residual = make_launch(gpu, loaded, add_residual, {**buffers, "x": buffers["y_t1"]}, scalars, rows, cols)

    def yours_chain() -> None:
        into_t1()
        residual()

    timed = [Timed(YOURS, yours, (spec,)), Timed(YOURS_CHAIN, yours_chain, (spec, *add_residual.specs))]
    for name in (STAGED, FUSED):
        v = versions[name]
        timed.append(Timed(v.label, make_launch(gpu, loaded, v, buffers, scalars, rows, cols), v.specs,
                           per_thread=v.per_thread))
    return timed
