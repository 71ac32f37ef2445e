"""Stage 5, timing: the copy floor, the benchmark shape, and event timing of alternating launches.

Times are CUDA event intervals on the grader's own stream, in ms. Launches are timed in rounds, one of each
per round in a rotating order, so a clock or neighbour change hits every version alike; the median of each
is reported with its spread. Effective bandwidth is GB/s = 1e9 bytes/s of bytes read plus bytes written.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel

from grader.core import exercise
from grader.core.errors import GraderFault
from grader.core.launch import LaunchSpec, Param, bind
from grader.core.model import ReportModel
from grader.gpu import kernels as grader_kernels
from grader.gpu.device import Gpu, GpuInfo

FLOOR_SOURCE = "floor.cu"
FLOOR_SCALAR = "copy, 1 float/thread"
FLOOR_VEC4 = "copy, 16 B/thread"
FLOOR_MEMCPY = "cuMemcpyDtoD"

WARMUP_MS = 200.0
"""GPU work run before any timed launch, at most: an idle GPU clocks far below boost (the H200: 345 MHz idle,
1980 MHz under load, docs/h200.md)."""
WARMUP_MIN_MS = 50.0
"""... and at least, when the warm-up can tell that the clocks are up (AlternatingTimer.warm_up's `ready`)."""

MIN_REPS = 30
TARGET_RSE = 0.005
"""Timing stops once the relative standard error of every median is below 0.5% (after MIN_REPS rounds)."""

TIME_CAP_S = 20.0
"""... or once this much wall time has been spent timing, whichever comes first."""


@dataclass(frozen=True)
class TimerSettings:
    """How long to time: warm-up ms, then rounds until every median's relative standard error is below
    target_rse (after min_reps rounds) or cap_s seconds pass."""

    warmup_ms: float = WARMUP_MS
    min_reps: int = MIN_REPS
    target_rse: float = TARGET_RSE
    cap_s: float = TIME_CAP_S


class TimingStats(BaseModel):
    """Event times of one launch: rounds, median, min, quartiles (ms) and the median's relative standard
    error, estimated as 1.2533 * 1.4826 * MAD / sqrt(n) / median (the large-sample standard error of a
    median, with the MAD as a robust standard deviation)."""

    name: str
    reps: int
    median_ms: float
    min_ms: float
    q1_ms: float
    q3_ms: float
    rse: float

    @property
    def spread(self) -> float:
        """Interquartile range over the median."""
        return (self.q3_ms - self.q1_ms) / self.median_ms


def stats_of(name: str, times_ms: list[float]) -> TimingStats:
    """TimingStats of a list of event times in ms (at least one)."""
    t = np.asarray(times_ms, dtype=np.float64)
    med = float(np.median(t))
    mad = float(np.median(np.abs(t - med)))
    rse = 1.2533 * 1.4826 * mad / math.sqrt(len(t)) / med if med > 0 else math.inf
    q1, q3 = (float(v) for v in np.percentile(t, [25, 75]))
    return TimingStats(name=name, reps=len(t), median_ms=med, min_ms=float(t.min()), q1_ms=q1, q3_ms=q3, rse=rse)


def gbs(nbytes: int, ms: float) -> float:
    """Effective bandwidth in GB/s (1e9 bytes/s) of `nbytes` moved in `ms` milliseconds."""
    return nbytes / (ms * 1e-3) / 1e9


class AlternatingTimer:
    """Times several launches side by side. `launches` maps a name to a function that enqueues one launch
    on `gpu.stream`. Outside the timed intervals, `before_round(k)` runs before round k and `after_round(k)`
    after it; timing stops early when after_round returns False."""

    def __init__(self, gpu: Gpu, launches: dict[str, Callable[[], None]],
                 before_round: Callable[[int], None] | None = None,
                 after_round: Callable[[int], bool] | None = None) -> None:
        self.gpu = gpu
        self.launches = launches
        self.before_round = before_round
        self.after_round = after_round
        self.stopped = False
        self.times: dict[str, list[float]] = {name: [] for name in launches}
        self.rounds = 0

    def warm_up(self, ms: float = WARMUP_MS, ready: Callable[[], bool] | None = None) -> None:
        """Run every launch in turn until `ms` of GPU time has passed, or, when `ready` is given, until
        WARMUP_MIN_MS has and ready() says the GPU is ready (its clocks are up: grader.timing.measure asks NVML)."""
        spent = 0.0
        while spent < ms and not (ready is not None and spent >= min(WARMUP_MIN_MS, ms) and ready()):
            start = self.gpu.record()
            for launch in self.launches.values():
                launch()
            end = self.gpu.record()
            self.gpu.sync()
            spent += end - start

    def run(self, min_reps: int = MIN_REPS, target_rse: float = TARGET_RSE, cap_s: float = TIME_CAP_S) -> None:
        """Time rounds until each median's rse < target_rse (after min_reps rounds in all) or cap_s passes,
        or until after_round returns False (then `stopped` is True). May be called again to extend."""
        deadline = time.monotonic() + cap_s
        names = list(self.launches)
        while True:
            if self.before_round:
                self.before_round(self.rounds)
            order = names[self.rounds % len(names):] + names[: self.rounds % len(names)]
            events = []
            for name in order:
                start = self.gpu.record()
                self.launches[name]()
                events.append((name, start, self.gpu.record()))
            self.gpu.sync()
            for name, start, end in events:
                self.times[name].append(end - start)
            self.rounds += 1
            if self.after_round and not self.after_round(self.rounds - 1):
                self.stopped = True
                return
            if self.rounds >= min_reps and (
                all(s.rse < target_rse for s in self.stats().values()) or time.monotonic() > deadline
            ):
                return

    def stats(self) -> dict[str, TimingStats]:
        """TimingStats of every launch so far."""
        return {name: stats_of(name, t) for name, t in self.times.items() if t}


def bench_shape(info: GpuInfo, buffers: int = exercise.BENCH_BUFFERS, free_bytes: int | None = None) -> tuple[int, int]:
    """bench_rows_cols for `info`'s card (free memory: `free_bytes`, default info.free_bytes, read when the GPU was
    opened)."""
    return bench_rows_cols(info.free_bytes if free_bytes is None else free_bytes, info.l2_bytes, buffers)


def bench_rows_cols(free: int, l2_bytes: int, buffers: int = exercise.BENCH_BUFFERS) -> tuple[int, int]:
    """(rows, cols) of the benchmark: each float32 buffer at least BENCH_L2_MULTIPLE x the L2 size, capped
    so that `buffers` buffers of rows x cols fit in BENCH_FREE_MEMORY_SHARE of the free memory (`free`, bytes),
    rows <= 65535 (gridDim.y), cols a multiple of BENCH_COL_MULTIPLE and rows x cols at most INT32_LIMIT;
    `l2_bytes`: the card's L2.

    Raises GraderFault (exit 4: the machine's, not the submission's) when the card has too little free
    memory for one row of BENCH_COL_MULTIPLE floats per buffer.
    """
    cap = int(free * exercise.BENCH_FREE_MEMORY_SHARE / buffers)
    elems = min(min(exercise.BENCH_L2_MULTIPLE * l2_bytes, cap) // exercise.BYTES_PER_FLOAT, exercise.INT32_LIMIT)
    step = exercise.BENCH_COL_MULTIPLE
    cols = max(step, math.ceil(elems / exercise.MAX_GRID_Y / step) * step)
    rows = min(exercise.MAX_GRID_Y, elems // cols)
    if rows < 1:
        raise GraderFault(f"the GPU has only {free / 2**20:.0f} MiB free: too little for {buffers} benchmark "
                          f"buffers of {step} floats; free GPU memory (other processes) or use a larger card")
    return rows, cols


COPY_PARAMS = (Param("src", "ptr"), Param("dst", "ptr"), Param("n", "u64"))
COPY_SCALAR = LaunchSpec(COPY_PARAMS, values_per_elem=exercise.COPY_FLOATS_PER_ELEMENT)
"""copyScalar (grader/gpu/kernels/floor.cu): one float per thread; n = floats."""
COPY_VEC4 = LaunchSpec(COPY_PARAMS, elems_per_thread=4, values_per_elem=exercise.COPY_FLOATS_PER_ELEMENT)
"""copyVec4: one float4 (16 bytes) per thread; n = float4s."""


class CopyFloor:
    """The three copies the floor is the fastest of, on the grader's stream. Compiled for the device's arch."""

    def __init__(self, gpu: Gpu) -> None:
        self.gpu = gpu
        self.kernels = grader_kernels.load(gpu, FLOOR_SOURCE, ("copyScalar", "copyVec4"))

    def launches(self, src, dst, n: int) -> dict[str, Callable[[], None]]:
        """Launch functions copying n floats (n a multiple of 4) from `src` to `dst` three ways."""
        assert n % 4 == 0
        gpu, k = self.gpu, self.kernels
        nbytes = n * exercise.BYTES_PER_FLOAT
        return {
            FLOOR_SCALAR: bind(gpu, k["copyScalar"], COPY_SCALAR, 1, n, {"src": src, "dst": dst, "n": n}),
            FLOOR_VEC4: bind(gpu, k["copyVec4"], COPY_VEC4, 1, n, {"src": src, "dst": dst, "n": n // 4}),
            FLOOR_MEMCPY: lambda: gpu.copy(dst, src, nbytes),
        }


FILL = LaunchSpec((Param("out", "ptr"), Param("n", "u64"), Param("seed", "u64"), Param("lo", "f32"),
                   Param("hi", "f32")), grid="stride", cap=True)
"""fillUniform (grader/gpu/kernels/inputs.cu): a grid-stride fill, one GPU-filling grid at most."""

FILL_DRAW = LaunchSpec((Param("out", "ptr"), Param("n", "u64"), Param("seed", "u64"), Param("shares", "u64"),
                        Param("shape", "i32")), grid="stride", cap=True)
"""fillDraw (grader/gpu/kernels/inputs.cu): the exercise's draws (grader.check.draws), a grid-stride fill."""


class InputFiller:
    """Fills device buffers with random floats on the GPU (grader/gpu/kernels/inputs.cu)."""

    def __init__(self, gpu: Gpu) -> None:
        self.gpu = gpu
        loaded = grader_kernels.load(gpu, "inputs.cu", ("fillUniform", "fillDraw"))
        self.kernel, self.draw_kernel = loaded["fillUniform"], loaded["fillDraw"]

    def __call__(self, buf, n: int, seed: int, lo: float, hi: float) -> None:
        """Fill n floats at `buf` with lo + (hi - lo) * u, u uniform in [0, 1), from `seed`."""
        bind(self.gpu, self.kernel, FILL, 1, n, {"out": buf, "n": n, "seed": seed, "lo": lo, "hi": hi})()

    def draw(self, buf, n: int, seed: int, mix) -> None:
        """Fill n floats at `buf` with elements 0 .. n - 1 of the draw with `seed` and `mix` (a
        grader.check.draws.DrawMix): the same bits grader.check.draws.draw gives."""
        shares, shape = mix.packed()
        bind(self.gpu, self.draw_kernel, FILL_DRAW, 1, n,
             {"out": buf, "n": n, "seed": seed, "shares": shares, "shape": shape})()


# --- the timed table: versions beside the copy floor, one row model -----------------------------------
class TimedRow(ReportModel):
    """One row of a timed table (the course page's part-3 columns and more): version label, kernels
    launched, work per thread (pairs, floats or bf16s; 0 for a copy), values read plus written per element
    and bytes per value, median ms, GB/s (1e9 bytes/s of bytes read plus written), x copy (GB/s over the
    floor's GB/s), spread (interquartile range over the median), timed rounds, the median's relative
    standard error, and whether it is one of the copies."""

    version: str
    kernels: int = 1
    per_thread: int = 0
    values_per_elem: int
    value_bytes: int = exercise.BYTES_PER_FLOAT
    ms: float
    gbs: float
    x_copy: float
    spread: float = 0.0
    reps: int
    rse: float
    is_floor: bool = False

    @property
    def floats_per_elem(self) -> float:
        """Bytes per element in floats (4 bytes): the page's floats/elem column."""
        return self.values_per_elem * self.value_bytes / exercise.BYTES_PER_FLOAT


class Table(ReportModel):
    """A timed table: its name, the shape timed, elements per tensor, the floor (fastest copy) and its rows."""

    name: str
    shape: str
    elements: int
    floor_version: str
    floor_gbs: float
    rows: list[TimedRow]
    matrix: tuple[int, int] | None = None
    """(rows, cols) of a row-grid table (the chain, the grade's benchmark)."""
    copy_elements: int | None = None
    """Floats each copy of the floor moved (the elements its bytes per element are per)."""

    def row(self, version: str) -> TimedRow:
        """The row labelled `version`. Raises KeyError if there is none."""
        for r in self.rows:
            if r.version == version:
                return r
        raise KeyError(version)


@dataclass(frozen=True)
class Timed:
    """One version to time: its label, a function enqueuing its launches, the LaunchSpec of each kernel it
    launches, in order (the launches are built from them: grader.core.launch.bind), and its work per thread (0:
    not shown). Its byte model is read from the specs alone: values read plus written per element of the
    output summed over them, at their one width of a value. Raises ValueError for no spec, or specs of
    different value widths (a row has one bytes-per-value column)."""

    label: str
    launch: Callable[[], None]
    specs: tuple[LaunchSpec, ...]
    per_thread: int = 0

    def __post_init__(self) -> None:
        if not self.specs or len({s.value_bytes for s in self.specs}) != 1:
            raise ValueError(f"{self.label}: a timed version needs one or more LaunchSpecs of one value width, "
                             f"got {[s.value_bytes for s in self.specs]} bytes per value")

    @property
    def kernels(self) -> int:
        """Kernels launched (one per spec)."""
        return len(self.specs)

    @property
    def values_per_elem(self) -> int:
        """Values read plus written per element of the output, summed over the kernels' specs."""
        return sum(s.values_per_elem for s in self.specs)

    @property
    def value_bytes(self) -> int:
        """Bytes per value, the specs' one width (4: float32, 2: bf16)."""
        return self.specs[0].value_bytes


class TableTimer:
    """`versions` (n output elements each) timed beside CopyFloor's three copies of copy_floats floats from
    copy_src to copy_dst, all in one AlternatingTimer (before_round/after_round as there). `table()` gives
    the rows; the floor is the fastest copy."""

    def __init__(self, gpu: Gpu, floor: CopyFloor, versions: list[Timed], n: int, copy_src, copy_dst,
                 copy_floats: int, before_round: Callable[[int], None] | None = None,
                 after_round: Callable[[int], bool] | None = None) -> None:
        self.versions, self.n, self.copy_floats = versions, n, copy_floats
        self.floor_names = list(floor.launches(copy_src, copy_dst, copy_floats))
        launches = {v.label: v.launch for v in versions}
        launches.update(floor.launches(copy_src, copy_dst, copy_floats))
        self.timer = AlternatingTimer(gpu, launches, before_round, after_round)

    def run(self, settings: TimerSettings = TimerSettings(), ready: Callable[[], bool] | None = None) -> None:
        """Warm up (AlternatingTimer.warm_up, with `ready`), then time rounds as `settings` says
        (AlternatingTimer.run)."""
        self.timer.warm_up(settings.warmup_ms, ready)
        self.timer.run(min_reps=settings.min_reps, target_rse=settings.target_rse, cap_s=settings.cap_s)

    def extend(self, target_rse: float) -> None:
        """Time as many rounds again (at least), until every rse < target_rse or the time cap passes."""
        self.timer.run(min_reps=self.timer.rounds * 2, target_rse=target_rse)

    def table(self, name: str, shape: str, matrix: tuple[int, int] | None = None) -> Table:
        """The table of everything timed so far: one TimedRow per version, then the copies'."""
        stats = self.timer.stats()
        copy_bytes = self.copy_floats * exercise.COPY_FLOATS_PER_ELEMENT * exercise.BYTES_PER_FLOAT
        floor_name = min(self.floor_names, key=lambda k: stats[k].median_ms)
        floor_gbs = gbs(copy_bytes, stats[floor_name].median_ms)

        def row(label: str, nbytes: int, **model) -> TimedRow:
            s = stats[label]
            speed = gbs(nbytes, s.median_ms)
            return TimedRow(version=label, ms=s.median_ms, gbs=speed, x_copy=speed / floor_gbs, spread=s.spread,
                            reps=s.reps, rse=s.rse, **model)

        rows = [row(v.label, self.n * v.values_per_elem * v.value_bytes, kernels=v.kernels, per_thread=v.per_thread,
                    values_per_elem=v.values_per_elem, value_bytes=v.value_bytes) for v in self.versions]
        rows += [row(label, copy_bytes, values_per_elem=exercise.COPY_FLOATS_PER_ELEMENT, is_floor=True)
                 for label in self.floor_names]
        return Table(name=name, shape=shape, elements=self.n, floor_version=floor_name, floor_gbs=floor_gbs,
                     rows=rows, matrix=matrix, copy_elements=self.copy_floats)


def over_bound(table: Table, peak_gbs: float | None = None, bound: float = exercise.PHYSICAL_BOUND) -> list[str]:
    """One line for each row of `table` faster than physics allows: a one-kernel row that reads one value and writes
    one per element (what the copy moves) over `bound` x the copy floor's GB/s (exercise.PHYSICAL_BOUND), and any row
    over `bound` x the card's peak DRAM bandwidth `peak_gbs` (GB/s; where known). A row that reads more than it
    writes may beat the copy's one-for-one mix (HBM serves reads faster than turnarounds; the page's fused chain,
    two reads to one write, measures 1.03 x copy on the H200, docs/grading.md), never the peak."""
    out = []
    for r in table.rows:
        if r.is_floor:
            continue
        if r.kernels == 1 and r.values_per_elem == exercise.COPY_FLOATS_PER_ELEMENT and r.x_copy > bound:
            out.append(f"{r.version} measured {r.x_copy:.3f} x the copy floor, more than the {bound:g} a version "
                       "that moves what the copy moves can reach")
        elif peak_gbs and r.gbs > bound * peak_gbs:
            out.append(f"{r.version} measured {r.gbs:.0f} GB/s, more than this card's peak DRAM bandwidth "
                       f"({peak_gbs:.0f} GB/s)")
    return out
