"""`grade FILE`'s guard against a kernel that never ends, and a Ctrl-C that works inside one.

While a kernel runs, the main thread waits inside the CUDA driver: Python's own Ctrl-C handling (a
KeyboardInterrupt) and any timer in that thread wait with it. The watchdog is a second thread:
- Ctrl-C: Python's C-level signal handler writes to a wakeup pipe (signal.set_wakeup_fd) even while the main
  thread is blocked; the watchdog reads it, gives the main thread GRACE_S to stop on its own, then says
  "interrupted" on stderr and ends the process (exit 130). The driver frees the GPU context with it.
- Run limit: each stage of grade_file (its on_stage callback) gets a deadline; a stage still running past
  it ends the process with a one-line reason on stderr and, for the formats that print a report, an error
  report on the original stdout (exit 1). The timing stage's limit adds the longest waits of the
  shared-GPU guard (grader.timing.contention), so waiting for a turn is not mistaken for a hang.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable

from grader.core.errors import EXIT_INTERRUPTED, Stage
from grader.timing import contention
from grader.timing.timer import TIME_CAP_S

DEFAULT_RUN_LIMIT_S = 60.0
"""Seconds a stage of `grade FILE` may run (compile, verify; timing gets this plus its waits)."""

GRACE_S = 1.0


def stage_limits(run_limit_s: float) -> dict[str, float]:
    """Seconds each grade_file stage may take under `grade FILE --run-limit S` (S: run_limit_s)."""
    waits = contention.LOCK_WAIT_S + 2 * contention.QUIET_WAIT_S + 3 * TIME_CAP_S
    return {Stage.CONTEXT: run_limit_s, Stage.COMPILE: run_limit_s, Stage.VERIFY: run_limit_s,
            Stage.TIME: run_limit_s + waits}


class Watchdog:
    """Start with `start()` (from the main thread), pass `stage` as grade_file's on_stage, `stop()` after.

    on_expire(stage, seconds) is called (in the watchdog thread) just before the process ends for a stage
    past its limit: it prints what the user should see.
    """

    def __init__(self, limits: dict[str, float], on_expire: Callable[[str, float], None]) -> None:
        self.limits, self.on_expire = limits, on_expire
        self.current: tuple[str, float] | None = None  # (stage, deadline on the monotonic clock)
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        self._old_fd: int | None = None
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="grade-watchdog", daemon=True)

    def start(self) -> Watchdog:
        """Install the wakeup pipe (main thread only) and start watching."""
        self._old_fd = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        self._thread.start()
        return self

    def stage(self, name: str) -> None:
        """grade_file's on_stage callback: the deadline for stage `name` starts now (no limit: none)."""
        limit = self.limits.get(name)
        self.current = (name, time.monotonic() + limit) if limit else None
        self._wake()

    def _wake(self) -> None:
        try:
            os.write(self._write, b"\0")  # not a signal number: the watcher only re-reads its deadline
        except BlockingIOError:
            pass

    def stop(self) -> None:
        """Stop watching and put the previous wakeup descriptor back."""
        self._stopped.set()
        signal.set_wakeup_fd(self._old_fd if self._old_fd is not None else -1)
        self._wake()
        self._thread.join(timeout=2)
        for fd in (self._read, self._write):
            os.close(fd)

    def _watch(self) -> None:
        while not self._stopped.is_set():
            current = self.current
            timeout = max(0.0, current[1] - time.monotonic()) if current else None
            ready, _, _ = select.select([self._read], [], [], timeout)
            if self._stopped.is_set():
                return
            if ready:
                got = os.read(self._read, 64)
                if signal.SIGINT in got:
                    time.sleep(GRACE_S)  # the main thread may stop by itself (KeyboardInterrupt)
                    if not self._stopped.is_set():
                        print("grade: interrupted (Ctrl-C) while the GPU was busy; stopped", file=sys.stderr,
                              flush=True)
                        os._exit(EXIT_INTERRUPTED)
                continue
            if current and self.current == current and time.monotonic() >= current[1]:
                name = current[0]
                self.on_expire(name, self.limits[name])
                os._exit(1)
