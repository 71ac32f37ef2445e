"""Stage 5b, measure: time the submission beside the copy floor at the benchmark shape, on one GPU.

The submission and CopyFloor's three copies alternate in one grader.timing.TableTimer on buffers of the
benchmark shape (grader.timing.bench_shape); inputs are redrawn on the GPU before every round and every
timed launch's output is checked there (grader.verify.DeviceCheck). The timed part holds this GPU's grading
lock and first waits for other processes to leave (grader.contention); timings a quiet GPU would not give
are re-timed once, then the verdict is withheld (Busy). The clocks are read from NVML before, during and
after the timed rounds (grader.clocks): a slowdown, a clock that moved, or an SM clock below what the card
sustains counts as a disturbed timing too. Returns a `Measurement`: the shape, the table, the floor, the
fraction of the floor and its uncertainty band, and the clocks it was timed at.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from grader import exercise
from grader.clocks import STEADY, ClockSample, Clocks, judge
from grader.contention import describe, disturbed, gpu_turn, wait_for_quiet
from grader.device import Gpu, GpuLoad
from grader.errors import Busy, WrongOutput
from grader.launch import LaunchSpec, bind
from grader.model import ReportModel
from grader.timing import (FLOOR_SCALAR, TARGET_RSE, CopyFloor, InputFiller, Table, TableTimer, Timed, TimedRow,
                           bench_shape)
from grader.verify import DeviceCheck

BAND_SIGMAS = 2.0
"""The fraction's uncertainty band is fraction x (1 +/- BAND_SIGMAS x sqrt(rse_sub^2 + rse_floor^2))."""


class Measurement(ReportModel):
    """The submission timed beside the copy floor: the benchmark shape (rows x cols), timed rounds, the table
    (the submission's row first, then the copies'), the fraction of the copy floor (the floor's median time
    over the submission's: for a kernel that moves what a copy moves, its GB/s over the floor's), the
    fraction's band (low, high: BAND_SIGMAS standard errors of both medians) and the fraction of the
    one-float-per-thread copy. `borderline`: the band still held a grade threshold after extra rounds."""

    rows: int
    cols: int
    rounds: int
    table: Table
    fraction: float
    fraction_low: float
    fraction_high: float
    fraction_of_scalar_copy: float
    borderline: bool = False
    clocks: Clocks | None = None

    @property
    def subject(self) -> TimedRow:
        """The submission's row."""
        return self.table.row(exercise.KERNEL_NAME)

    @property
    def floor(self) -> TimedRow:
        """The copy floor's row (the fastest copy)."""
        return self.table.row(self.table.floor_version)

    @classmethod
    def of(cls, table: Table, rows: int, cols: int, rounds: int) -> "Measurement":
        """The measurement a table gives (its rows hold the submission's and the copies' medians)."""
        sub, floor = table.row(exercise.KERNEL_NAME), table.row(table.floor_version)
        fraction = floor.ms / sub.ms
        half = BAND_SIGMAS * math.hypot(sub.rse, floor.rse)
        return cls(rows=rows, cols=cols, rounds=rounds, table=table, fraction=fraction,
                   fraction_low=fraction * (1 - half), fraction_high=fraction * (1 + half),
                   fraction_of_scalar_copy=table.row(FLOOR_SCALAR).ms / sub.ms)


def measure(gpu: Gpu, kernel, spec: LaunchSpec, launch_values: Callable[[dict, int, int], dict],
            rng: np.random.Generator, straddles: Callable[[float, float], bool]) -> Measurement:
    """Time `kernel` (launched per `spec`; launch_values(ptrs, rows, cols) gives its arguments, as
    grader.contract.Contract.launch_values) beside the copy floor at the benchmark shape, inputs from `rng`.
    When the fraction's band straddles a threshold (`straddles(low, high)`), time twice as many rounds to
    half the target error.

    Raises WrongOutput when a timed launch's output is wrong, Busy when the GPU was not quiet or its clocks
    not right (the message is the whole reason; `clocks` holds the last timing's Clocks), GraderFault when the
    card is too small (bench_shape) or a grader call fails, SubmissionError when the kernel faults.
    """
    rows, cols = bench_shape(gpu.info)
    n = rows * cols
    scratch_words = 2 * gpu.info.l2_bytes // 4
    buffers = x, bias, out, copy_out, scratch = (gpu.alloc(n * 4), gpu.alloc(cols * 4), gpu.alloc(n * 4),
                                                 gpu.alloc(n * 4), gpu.alloc(scratch_words * 4))
    fill, check = InputFiller(gpu), DeviceCheck(gpu)
    failures: list = []
    limits = gpu.clock_limits()
    samples: list[ClockSample] = []

    def sample(when: str) -> None:
        found = gpu.clock_sample(when)
        if found is not None:
            samples.append(found)

    def clocks_up() -> bool:
        """The warm-up may end: the SM clock is at what the card sustains (never, without NVML)."""
        now = gpu.clock_sample("before")
        target = limits.sustained_sm_mhz if limits else None
        return bool(now and target and now.sm_mhz >= (1 - STEADY) * target)

    def redraw(k: int) -> None:
        """Fresh inputs before every timed round (a kernel that caches results goes stale), then a write of
        twice the L2 size so the round's first launch does not find the new inputs' tail in cache. The first
        timed round's is when the warm-up is over: the clocks' "before" sample."""
        if k == 0 and not samples:
            sample("before")
        fill(x, n, int(rng.integers(2**63)), *exercise.INPUT_X_RANGE)
        fill(bias, cols, int(rng.integers(2**63)), *exercise.INPUT_BIAS_RANGE)
        gpu.fill_words(scratch, 0, scratch_words)

    def check_round(k: int) -> bool:
        v = check(x, bias, out, rows, cols, f"timed launch {k + 1}")
        if not v.passed:
            failures.append(v)
        sample("during")
        return v.passed

    def timed() -> tuple[TableTimer, Measurement | None]:
        """A fresh timing; its measurement, or None when a timed launch was wrong."""
        samples.clear()
        timer = TableTimer(gpu, floor, [subject], n, x, copy_out, n, before_round=redraw, after_round=check_round)
        timer.run(ready=clocks_up if limits else None)
        return timer, None if failures else _measurement(timer)

    def _measurement(timer: TableTimer) -> Measurement:
        sample("after")
        m = Measurement.of(timer.table("grade", f"{rows} x {cols}", matrix=(rows, cols)), rows, cols,
                           timer.timer.rounds)
        m.clocks = judge(limits, samples)
        return m

    def noise(timer: TableTimer, m: Measurement | None) -> list[str]:
        if m is None:
            return []
        clock_problem = [m.clocks.problem] if m.clocks and m.clocks.problem else []
        return disturbed(timer.timer.times, m.table.floor_gbs, gpu.info.peak_gbs) + clock_problem

    load, m = None, None
    try:
        redraw(-1)
        launch = bind(gpu, kernel, spec, rows, cols, launch_values({"x": x, "bias": bias, "out": out}, rows, cols))
        subject = Timed(exercise.KERNEL_NAME, launch, (spec,))
        floor = CopyFloor(gpu)
        with gpu_turn(gpu):  # other gradings on this GPU wait; their numbers and ours stay clean
            load = wait_for_quiet(gpu)
            timer, m = timed()
            reasons = noise(timer, m)
            if reasons:  # disturbed: wait for quiet, then one fresh timing
                load = wait_for_quiet(gpu)
                timer, m = timed()
                reasons = noise(timer, m)
            if m is not None and not reasons and straddles(m.fraction_low, m.fraction_high):
                timer.extend(TARGET_RSE / 2)
                m = _measurement(timer)
                m.borderline = straddles(m.fraction_low, m.fraction_high)
                reasons = noise(timer, m)
    except Busy as err:
        reasons, failures = [str(err)], []
    finally:
        check.close()
        for b in buffers:
            b.close()
    if failures:
        raise WrongOutput(failures[0])
    if reasons:
        clocks = m.clocks if m is not None else None
        busy = Busy(busy_reason(reasons, load, clocks))
        busy.clocks = clocks
        raise busy
    return m


def busy_reason(reasons: list[str], load: GpuLoad | None, clocks: Clocks | None = None) -> str:
    """The withheld verdict's reason: why the timings are distrusted, and who else was on the GPU; when the
    clocks alone were not right (`clocks.problem` is every reason), what they were."""
    if clocks is not None and clocks.problem and reasons == [clocks.problem]:
        return (f"not graded: the GPU's clocks were not right while timing ({clocks.problem}; timed at "
                f"{clocks.summary()}); the kernel is correct; run again on a quiet GPU at its usual clocks")
    return (f"not graded: the GPU was busy ({'; '.join(reasons)}; other processes: {describe(load)}); "
            "the kernel is correct; run again when the GPU is quiet")
