"""Part of stage 5, timing: the shared-GPU guard. A verdict is given only from timings that a quiet GPU
would repeat; otherwise it is withheld ("busy", exit 5) with the reason.

Three defences, in order:
1. Turns. `gpu_turn()` takes a per-GPU lock (an flock on a file named after the GPU's UUID in LOCK_DIR) for
   the timed part, so concurrent `grade` runs on one machine take turns: each waits seconds instead of
   spoiling the other's numbers. A wait past LOCK_WAIT_S withholds the verdict.
2. Foreign load before timing. `wait_for_quiet()` asks NVML (grader.gpu.device.Gpu.load_now) for other processes
   with a CUDA context on the GPU and waits, bounded by QUIET_WAIT_S and saying so on stderr, until none is
   left. NVML is advice: it may be missing or blind inside a container, and an idle process with a context
   does no harm, so a process still there after the wait does not by itself withhold the verdict.
3. Interference in the data. `disturbed()` reads the timings themselves: a row whose spread (IQR over median)
   passes SPREAD_LIMIT (quiet H200: 0.1 to 0.3%), more than SLOW_ROUNDS_LIMIT of the rounds in which every
   launch ran at least SLOW_ROUND x its median, or a copy floor below FLOOR_OF_PEAK_MIN of the card's peak
   DRAM bandwidth (memory clock x 2 x bus width; quiet H200: 0.87). The grader then waits for quiet and
   times again once; if the second timing is disturbed too, the verdict is withheld.
Measured on an H200 beside a process streaming copies: an IQR spread of 330% and a floor copy slowed 4x;
both are caught by (3), and the streaming process is listed by (2).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from grader.core.errors import Busy
from grader.gpu.device import Gpu, GpuLoad

LOCK_DIR = os.environ.get("GRADER_LOCK_DIR") or tempfile.gettempdir()
"""Where the per-GPU lock files live (GRADER_LOCK_DIR overrides; every grader on the machine must agree)."""

LOCK_WAIT_S = 600.0
"""Longest wait for another grading's timed part on the same GPU before the verdict is withheld."""

QUIET_WAIT_S = float(os.environ.get("GRADER_QUIET_WAIT_S") or 30.0)
"""Longest wait, in seconds, for other processes to leave the GPU before timing (and again before a
re-time); GRADER_QUIET_WAIT_S overrides."""

POLL_S = 1.0

SPREAD_LIMIT = 0.05
"""A timing row whose interquartile range passes 5% of its median was disturbed."""

SLOW_ROUND = 1.10
SLOW_ROUNDS_LIMIT = 0.10
"""More than 10% of rounds with every launch at >= 1.10 x its median: the whole GPU slowed (a neighbour)."""

FLOOR_OF_PEAK_MIN = 0.50
"""A copy floor below half the card's peak DRAM bandwidth means the copies shared the memory system."""


@contextmanager
def gpu_turn(gpu: Gpu, wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
    """Hold this GPU's grading lock for the block (other `grade` runs on the machine wait for it).

    Raises Busy when another grading holds it for longer than `wait_s` seconds. Where file locks are not
    available (not POSIX) the block runs without one.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no turns, the data checks still apply
        yield
        return
    path = os.path.join(LOCK_DIR, f"biasgelu-grader-{_safe(gpu.uuid())}.lock")
    flags = os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, os.O_RDWR | flags, 0o666)
    except PermissionError:  # another user's lock file: a shared lock needs only read access
        fd = os.open(path, os.O_RDONLY | flags)
    try:
        deadline, told = time.monotonic() + wait_s, False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise Busy(f"another grading held this GPU for over {wait_s:.0f} s") from None
                if not told:
                    print("grade: another grading is timing on this GPU; waiting for its turn to end ...",
                          file=sys.stderr, flush=True)
                    told = True
                time.sleep(0.2)
        yield
    finally:
        os.close(fd)  # releases the lock


def wait_for_quiet(gpu: Gpu, wait_s: float = QUIET_WAIT_S) -> GpuLoad | None:
    """Wait, at most `wait_s` seconds, until NVML lists no other process on the GPU; say so on stderr while
    waiting. Returns the last NVML reading (None where NVML cannot answer)."""
    load = gpu.load_now()
    if load is None or not load.processes:
        return load
    print(f"grade: the GPU is in use by {describe(load)}; waiting up to {wait_s:.0f} s for it to be quiet ...",
          file=sys.stderr, flush=True)
    deadline = time.monotonic() + wait_s
    while load is not None and load.processes and time.monotonic() < deadline:
        time.sleep(POLL_S)
        load = gpu.load_now()
    return load


def disturbed(times: dict[str, list[float]], floor_gbs: float | None, peak_gbs: float | None) -> list[str]:
    """Reasons to distrust one timing (empty: none). `times` maps each launch to its event times in ms,
    one per round, rounds aligned; floor_gbs is the measured copy floor and peak_gbs the card's peak DRAM
    bandwidth (GB/s; either None to skip that check)."""
    reasons = []
    names = [n for n, t in times.items() if t]
    for name in names:
        t = np.asarray(times[name])
        q1, med, q3 = np.percentile(t, [25, 50, 75])
        if med > 0 and (q3 - q1) / med > SPREAD_LIMIT:
            reasons.append(f"the {name} row's spread was {100 * (q3 - q1) / med:.0f}% (a quiet GPU gives under "
                           f"{100 * SPREAD_LIMIT:.0f}%)")
    rounds = min((len(times[n]) for n in names), default=0)
    if rounds:
        ratios = np.array([np.asarray(times[n][:rounds]) / np.median(times[n]) for n in names])
        slow = int(np.sum(ratios.min(axis=0) >= SLOW_ROUND))
        if slow > SLOW_ROUNDS_LIMIT * rounds:
            reasons.append(f"in {slow} of {rounds} rounds every launch ran {100 * (SLOW_ROUND - 1):.0f}% or more "
                           "slower than its median")
    if floor_gbs and peak_gbs and floor_gbs < FLOOR_OF_PEAK_MIN * peak_gbs:
        reasons.append(f"the copy floor reached only {floor_gbs:.0f} GB/s, {floor_gbs / peak_gbs:.2f} of this "
                       f"card's peak {peak_gbs:.0f} GB/s")
    return reasons


def describe(load: GpuLoad | None) -> str:
    """One phrase for a report: the other processes and the utilization NVML saw, or that it could not."""
    if load is None:
        return "NVML could not list the GPU's processes"
    procs = ", ".join(load.processes[:5]) + (f" and {len(load.processes) - 5} more" if len(load.processes) > 5
                                             else "")
    util = f"{load.utilization}% utilization" if load.utilization is not None else "utilization unknown"
    return f"{procs or 'no other process'} ({util})"


def _safe(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in text)[:80] or "gpu"
