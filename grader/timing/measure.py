"""Stage 5b, measure: time the submission beside the copy floor at the benchmark shape, on one GPU.

The submission and CopyFloor's three copies alternate in one grader.timing.timer.TableTimer on buffers of the
benchmark shape (grader.timing.timer.bench_shape); inputs are redrawn on the GPU before every round and every
timed launch's output is checked there (grader.check.verify.DeviceCheck). The timed part holds this GPU's grading
lock and first waits for other processes to leave (grader.timing.contention); timings a quiet GPU would not give
are re-timed once, then the verdict is withheld (Busy). The clocks are read from NVML before, during and
after the timed rounds (grader.gpu.clocks): a slowdown, a clock that moved, or an SM clock below what the card
sustains counts as a disturbed timing too. Returns a `Measurement`: the shape, the table, the floor, the
fraction of the floor and its uncertainty band, and the clocks it was timed at.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from grader.core import exercise
from grader.core.errors import Busy, GraderError, GraderFault, Stage, SubmissionError, WrongOutput
from grader.core.exercise import Exercise, Problem
from grader.core.launch import LaunchSpec, bind
from grader.core.model import ReportModel
from grader.gpu.clocks import STEADY, Clocks, ClockSample, judge
from grader.gpu.device import Gpu, GpuLoad
from grader.timing.contention import describe, disturbed, gpu_turn, wait_for_quiet
from grader.timing.timer import FLOOR_SCALAR, TARGET_RSE, CopyFloor, Table, TableTimer, Timed, TimedRow, over_bound

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
    dims: tuple[int, ...] = ()
    """The exercise's own shape of the benchmark Problem (rows x cols is the output's)."""

    @property
    def subject(self) -> TimedRow:
        """The submission's row."""
        return self.table.rows[0]

    @property
    def floor(self) -> TimedRow:
        """The copy floor's row (the fastest copy)."""
        return self.table.row(self.table.floor_version)

    @classmethod
    def of(cls, table: Table, rows: int, cols: int, rounds: int) -> Measurement:
        """The measurement a table gives (its rows hold the submission's and the copies' medians)."""
        sub, floor = table.rows[0], table.row(table.floor_version)
        fraction = floor.ms / sub.ms
        half = BAND_SIGMAS * math.hypot(sub.rse, floor.rse)
        return cls(rows=rows, cols=cols, rounds=rounds, table=table, fraction=fraction,
                   fraction_low=fraction * (1 - half), fraction_high=fraction * (1 + half),
                   fraction_of_scalar_copy=table.row(FLOOR_SCALAR).ms / sub.ms)


def straddles(low: float, high: float) -> bool:
    """True when [low, high] contains a grade threshold (grader.exercises.bias_gelu.SILVER, GOLD): the band cannot tell
    the grade, so measure times more rounds."""
    return any(low < t <= high for t in (exercise.SILVER, exercise.GOLD))


def measure(gpu: Gpu, kernel, spec: LaunchSpec, launch_values: Callable[[dict, Problem], dict], ex: Exercise,
            rng: np.random.Generator) -> Measurement:
    """Time `kernel` of exercise `ex` (launched per `spec`; launch_values(ptrs, problem) gives its arguments, as
    grader.source.contract.Contract.launch_values) beside the copy floor at the exercise's benchmark Problem
    (Exercise.bench_problem), inputs drawn and outputs checked on the GPU (Exercise.device), seeds from `rng`.
    When the fraction's band straddles a grade threshold (straddles), time twice as many rounds to half the
    target error.

    Raises WrongOutput when a timed launch's output is wrong or changed an input, Busy when the GPU was not quiet
    or its clocks not right (the message is the whole reason; `clocks` holds the last timing's Clocks), and for a
    fraction above exercise.PHYSICAL_BOUND in two timings (impossible): SubmissionError(Stage.TIME) when the
    kernel's GB/s is above the card's peak DRAM bandwidth (it moved fewer bytes than the job needs), else
    GraderFault (the floor may be wrong). GraderFault also when the card is too small (bench_shape) or a grader call
    fails; SubmissionError when the kernel faults.
    """
    bench = _Bench(gpu, ex, rng)
    try:
        bench.redraw(-1)
        launch = bind(gpu, kernel, spec, *bench.problem.grid, launch_values(bench.side.buffers, bench.problem))
        subject = Timed(ex.kernel_name, launch, (spec,))
        floor = CopyFloor(gpu)
        with gpu_turn(gpu):  # other gradings on this GPU wait; their numbers and ours stay clean
            bench.time_quietly(floor, subject)
    except Busy as err:
        bench.reasons, bench.failures = [str(err)], []
    finally:
        bench.close()
    return bench.result()


class _Bench:
    """One measurement's state on `gpu`: the exercise's benchmark Problem and its device side (inputs, outputs,
    draws and check: Exercise.device), the copies' destination and an L2-sized scratch, the clock samples, and what
    the timing found (failed checks, the reasons to distrust it, the GPU's other processes, the last Measurement)."""

    def __init__(self, gpu: Gpu, ex: Exercise, rng: np.random.Generator) -> None:
        self.gpu, self.ex, self.rng = gpu, ex, rng
        self.problem = ex.bench_problem(gpu.info.free_bytes, gpu.info.l2_bytes)
        self.rows, self.cols = self.problem.rows, self.problem.cols
        self.n = n = self.problem.n
        self.scratch_words = 2 * gpu.info.l2_bytes // 4
        self.side = ex.device(gpu, self.problem)
        self.source = self.side.buffers[ex.inputs[0].name]
        self.outputs = [(self.side.buffers[p.name], self.problem.floats[p.name]) for p in ex.outputs]
        self.buffers = self.copy_out, self.scratch = gpu.alloc(n * 4), gpu.alloc(self.scratch_words * 4)
        self.limits = gpu.clock_limits()
        self.samples: list[ClockSample] = []
        self.failures: list = []
        self.reasons: list[str] = []
        self.load: GpuLoad | None = None
        self.m: Measurement | None = None

    # --- the timing, on the GPU's grading lock ---------------------------------------------------------
    def time_quietly(self, floor: CopyFloor, subject: Timed) -> None:
        """Wait for quiet, time; a disturbed timing is timed once more after another wait; a band that
        straddles a threshold gets twice the rounds (TableTimer.extend) and may stay `borderline`."""
        self.load = wait_for_quiet(self.gpu)
        timer = self.timed(floor, subject)
        if self.reasons:  # disturbed: wait for quiet, then one fresh timing
            self.load = wait_for_quiet(self.gpu)
            timer = self.timed(floor, subject)
        m = self.m
        if m is not None and not self.reasons and straddles(m.fraction_low, m.fraction_high):
            timer.extend(TARGET_RSE / 2)
            self.m = m = self.measurement(timer)
            m.borderline = straddles(m.fraction_low, m.fraction_high)
            self.reasons = self.noise(timer, m)

    def timed(self, floor: CopyFloor, subject: Timed) -> TableTimer:
        """A fresh timing: its timer; `m` its measurement (None when a timed launch was wrong), `reasons` why
        it is distrusted."""
        self.samples.clear()
        timer = TableTimer(self.gpu, floor, [subject], self.n, self.source, self.copy_out, self.n,
                           before_round=self.redraw, after_round=self.check_round)
        timer.run(ready=self.clocks_up if self.limits else None)
        self.m = None if self.failures else self.measurement(timer)
        self.reasons = self.noise(timer, self.m)
        return timer

    def measurement(self, timer: TableTimer) -> Measurement:
        """The Measurement of everything `timer` timed, with the clocks judged over this timing's samples."""
        self.sample("after")
        m = Measurement.of(timer.table("grade", self.problem.label, matrix=(self.rows, self.cols)),
                           self.rows, self.cols, timer.timer.rounds)
        m.clocks, m.dims = judge(self.limits, self.samples), self.problem.dims
        return m

    def noise(self, timer: TableTimer, m: Measurement | None) -> list[str]:
        """Why the timing is distrusted (grader.timing.contention.disturbed, the clocks' problem, a row above the
        physical bound: grader.timing.timer.over_bound); none without `m`."""
        if m is None:
            return []
        clock_problem = [m.clocks.problem] if m.clocks and m.clocks.problem else []
        return (disturbed(timer.timer.times, m.table.floor_gbs, self.gpu.info.peak_gbs) + clock_problem
                + over_bound(m.table, self.gpu.info.peak_gbs))

    # --- between and after the timed rounds ------------------------------------------------------------
    def sample(self, when: str) -> None:
        """Keep NVML's clock sample `when` ('before', 'during', 'after'), if the GPU gives one."""
        found = self.gpu.clock_sample(when)
        if found is not None:
            self.samples.append(found)

    def clocks_up(self) -> bool:
        """The warm-up may end: the SM clock is at what the card sustains (never, without NVML)."""
        now = self.gpu.clock_sample("before")
        target = self.limits.sustained_sm_mhz if self.limits else None
        return bool(now and target and now.sm_mhz >= (1 - STEADY) * target)

    def redraw(self, k: int) -> None:
        """Before every timed round: fresh inputs (grader.check.draws; a kernel that caches results goes stale),
        except every exercise.REPEAT_EVERY-th round, which keeps the last round's (a kernel that skips work on inputs
        it has seen fails); the output poisoned (exercise.POISON_WORD: what a launch leaves unwritten fails); then a
        write of twice the L2 size, so the round's first launch does not find the new inputs' tail in cache. The
        first timed round's is when the warm-up is over: the clocks' "before" sample."""
        if k == 0 and not self.samples:
            self.sample("before")
        if k < 0 or (k + 1) % exercise.REPEAT_EVERY:
            self.side.redraw(self.rng)
        for buf, floats in self.outputs:
            self.gpu.fill_words(buf, self.ex.poison_word, floats)
        self.gpu.fill_words(self.scratch, 0, self.scratch_words)

    def check_round(self, k: int) -> bool:
        """Check round k's output on the GPU against the inputs as drawn (grader.check.verify.DeviceCheck); False
        stops the timing."""
        v = self.side.check(f"timed launch {k + 1}")
        if not v.passed:
            self.failures.append(v)
        self.sample("during")
        return v.passed

    def close(self) -> None:
        """Free the device side's and the buffers' memory."""
        self.side.close()
        for b in self.buffers:
            b.close()

    def result(self) -> Measurement:
        """The measurement. Raises WrongOutput for the first wrong timed launch, Busy (with `clocks`) when the
        timing is distrusted."""
        if self.failures:
            raise WrongOutput(self.failures[0])
        if self.m is not None and self.m.fraction > exercise.PHYSICAL_BOUND:
            raise impossible(self.m, self.gpu.info.peak_gbs)
        if self.reasons:
            clocks = self.m.clocks if self.m is not None else None
            busy = Busy(busy_reason(self.reasons, self.load, clocks))
            busy.clocks = clocks
            raise busy
        return self.m


def busy_reason(reasons: list[str], load: GpuLoad | None, clocks: Clocks | None = None) -> str:
    """The withheld verdict's reason: why the timings are distrusted, and who else was on the GPU; when the
    clocks alone were not right (`clocks.problem` is every reason), what they were."""
    if clocks is not None and clocks.problem and reasons == [clocks.problem]:
        return (f"not graded: the GPU's clocks were not right while timing ({clocks.problem}; timed at "
                f"{clocks.summary()}); the kernel is correct; run again on a quiet GPU at its usual clocks")
    return (f"not graded: the GPU was busy ({'; '.join(reasons)}; other processes: {describe(load)}); "
            "the kernel is correct; run again when the GPU is quiet")


def impossible(m: Measurement, peak_gbs: float | None) -> GraderError:
    """The error for a measurement above exercise.PHYSICAL_BOUND of the copy floor, which is never a verdict: a
    correct kernel reads x and writes out, what the copy moves. SubmissionError(Stage.TIME) when the kernel's
    effective bandwidth is above the card's peak DRAM bandwidth `peak_gbs` (GB/s: no memory moves the job's bytes
    that fast, so the kernel moved fewer); else GraderFault: the floor may have been measured wrong, or the kernel
    moved fewer bytes; the grader cannot tell, so it withholds the verdict and says both."""
    sub = m.subject
    numbers = (f"{m.fraction:.3f} of the copy floor ({sub.gbs:.0f} GB/s at {sub.floats_per_elem:g} floats per element "
               f"against the floor's {m.table.floor_gbs:.0f} GB/s, {m.table.floor_version}")
    if peak_gbs and sub.gbs > peak_gbs:
        return SubmissionError(Stage.TIME, (
            f"not graded: measured {numbers}; this card's memory peaks at {peak_gbs:.0f} GB/s): no kernel reads x and "
            f"writes out that fast, so this one moved fewer bytes than the job needs; no timing above "
            f"{exercise.PHYSICAL_BOUND:g} of the floor is a verdict"))
    return GraderFault(
        f"not graded: measured {numbers}) in two timings, more than the {exercise.PHYSICAL_BOUND:g} a kernel that "
        "reads x and writes out can reach: either the floor was measured wrong on this card or the kernel moved "
        "fewer bytes than the job needs; run again, and report it to the course staff with the file if it persists")
