"""Stage 5, timing: the copy floor, the benchmark shape, and event timing of alternating launches.

Times are CUDA event intervals on the grader's own stream, in ms. Launches are timed in rounds, one of each
per round in a rotating order, so a clock or neighbour change hits every version alike; the median of each
is reported with its spread. Effective bandwidth is GB/s = 1e9 bytes/s of bytes read plus bytes written.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
from pydantic import BaseModel

from grader import exercise
from grader import kernels as grader_kernels
from grader.device import Gpu, GpuInfo, address

FLOOR_SOURCE = "floor.cu"
FLOOR_BLOCK = 256
FLOOR_SCALAR = "copy, 1 float/thread"
FLOOR_VEC4 = "copy, 16 B/thread"
FLOOR_MEMCPY = "cuMemcpyDtoD"

WARMUP_MS = 200.0
"""GPU work run before any timed launch: an idle GPU clocks far below boost (H200.md: 345 MHz idle, 1980
MHz under load)."""

MIN_REPS = 30
TARGET_RSE = 0.005
"""Timing stops once the relative standard error of every median is below 0.5% (after MIN_REPS rounds)."""

TIME_CAP_S = 20.0
"""... or once this much wall time has been spent timing, whichever comes first."""


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

    def warm_up(self, ms: float = WARMUP_MS) -> None:
        """Run every launch in turn until at least `ms` of GPU time has passed."""
        spent = 0.0
        while spent < ms:
            start = self.gpu.record()
            for launch in self.launches.values():
                launch()
            end = self.gpu.record()
            self.gpu.sync()
            spent += end - start

    def run(self, min_reps: int = MIN_REPS, target_rse: float = TARGET_RSE, cap_s: float = TIME_CAP_S) -> None:
        """Time rounds until each median's rse < target_rse (after min_reps rounds in all) or cap_s passes,
        or until after_round returns False (then `stopped` is True)."""
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


def bench_shape(info: GpuInfo) -> tuple[int, int]:
    """(rows, cols) of the benchmark: each float32 buffer at least BENCH_L2_MULTIPLE x the L2 size, capped
    by free memory (BENCH_BUFFERS buffers within BENCH_FREE_MEMORY_SHARE of it), rows <= 65535 (gridDim.y) and cols a
    multiple of BENCH_COL_MULTIPLE. Raises ValueError if the card is too small for a meaningful shape."""
    want = exercise.BENCH_L2_MULTIPLE * info.l2_bytes
    cap = int(info.free_bytes * exercise.BENCH_FREE_MEMORY_SHARE / exercise.BENCH_BUFFERS)
    nbytes = min(want, cap)
    elems = nbytes // exercise.BYTES_PER_FLOAT
    step = exercise.BENCH_COL_MULTIPLE
    cols = max(step, math.ceil(elems / exercise.MAX_GRID_Y / step) * step)
    rows = min(exercise.MAX_GRID_Y, elems // cols)
    if rows < 1:
        raise ValueError(f"only {info.free_bytes} bytes free: too little for a benchmark buffer")
    return rows, cols


class CopyFloor:
    """The three copies the floor is the fastest of, on the grader's stream. Compiled for the device's arch."""

    def __init__(self, gpu: Gpu) -> None:
        self.gpu = gpu
        self.kernels = grader_kernels.load(gpu, FLOOR_SOURCE, ("copyScalar", "copyVec4"))

    def launches(self, src, dst, n: int) -> dict[str, Callable[[], None]]:
        """Launch functions copying n floats (n a multiple of 4) from `src` to `dst` three ways."""
        assert n % 4 == 0
        gpu, k = self.gpu, self.kernels
        src_arg, dst_arg = np.uint64(address(src)), np.uint64(address(dst))
        scalar_grid = (math.ceil(n / FLOOR_BLOCK), 1, 1)
        vec_grid = (math.ceil(n // 4 / FLOOR_BLOCK), 1, 1)
        block = (FLOOR_BLOCK, 1, 1)
        return {
            FLOOR_SCALAR: lambda: gpu.launch(k["copyScalar"], scalar_grid, block, src_arg, dst_arg, np.uint64(n)),
            FLOOR_VEC4: lambda: gpu.launch(k["copyVec4"], vec_grid, block, src_arg, dst_arg, np.uint64(n // 4)),
            FLOOR_MEMCPY: lambda: gpu.copy(dst, src, n * exercise.BYTES_PER_FLOAT),
        }


class InputFiller:
    """Fills device buffers with uniform random floats on the GPU (grader/kernels/inputs.cu)."""

    BLOCK = 256

    def __init__(self, gpu: Gpu) -> None:
        self.gpu = gpu
        self.kernel = grader_kernels.load(gpu, "inputs.cu", ("fillUniform",))["fillUniform"]

    def __call__(self, buf, n: int, seed: int, lo: float, hi: float) -> None:
        """Fill n floats at `buf` with lo + (hi - lo) * u, u uniform in [0, 1), from `seed`."""
        grid = (min(math.ceil(n / self.BLOCK), self.gpu.info.multiprocessors * 8), 1, 1)
        self.gpu.launch(self.kernel, grid, (self.BLOCK, 1, 1), np.uint64(int(buf.handle)), np.uint64(n),
                        np.uint64(seed), np.float32(lo), np.float32(hi))
