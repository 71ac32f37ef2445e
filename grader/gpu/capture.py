"""Part of stage 3, device: what a kernel prints never reaches the grader's own output.

The CUDA driver writes device `printf` output to the process's standard output, file descriptor 1, when the
host synchronises; a kernel could print `Verdict: GOLD` or a whole JSON report into `grade FILE`'s output.
`capture_stdout()` points descriptor 1 at a pipe while the submission's kernels run. A thread drains the
pipe and keeps the first MAX_LINES lines (each cut to MAX_LINE_CHARS characters, control characters shown as
escapes), and only counts the rest, so a kernel that prints in a loop costs neither memory nor disk. The
report shows the kept lines in a labelled section (text) or field (JSON), with the count of lines dropped.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from grader.core.text import printable

MAX_LINES = 20
"""Lines of kernel output kept for the report."""

MAX_LINE_CHARS = 200
"""Characters kept of each line (after escaping)."""


@dataclass
class Captured:
    """What was printed to descriptor 1 during a capture: `lines` (escaped, at most MAX_LINES), `dropped`
    (lines not kept) and `nbytes` (all bytes seen). Complete once the `capture_stdout` block has exited."""

    lines: list[str] = field(default_factory=list)
    dropped: int = 0
    nbytes: int = 0

    def add(self, line: bytes) -> None:
        """Keep or count one line (without its newline)."""
        if len(self.lines) >= MAX_LINES:
            self.dropped += 1
            return
        self.lines.append(printable(line[: 4 * MAX_LINE_CHARS].decode("utf-8", "replace"), MAX_LINE_CHARS))


@contextmanager
def capture_stdout(captured: Captured | None = None) -> Iterator[Captured]:
    """Redirect file descriptor 1 (C stdio and Python alike) into `captured` (a new Captured by default),
    bounded, for the block's duration, then restore it; `captured` is complete once the block has exited.
    Raises OSError only if descriptors cannot be duplicated (none left)."""
    captured = Captured() if captured is None else captured
    _flush_stdout()
    saved = os.dup(1)
    read_end, write_end = os.pipe()
    try:
        os.dup2(write_end, 1)
    finally:
        os.close(write_end)
    reader = threading.Thread(target=_drain, args=(read_end, captured), name="kernel-stdout", daemon=True)
    reader.start()
    try:
        yield captured
    finally:
        _flush_stdout()
        os.dup2(saved, 1)  # closes the pipe's last write end: the reader sees its end
        os.close(saved)
        reader.join(timeout=10)


def _drain(fd: int, captured: Captured) -> None:
    partial = b""
    try:
        while chunk := os.read(fd, 1 << 16):
            captured.nbytes += len(chunk)
            *lines, partial = (partial + chunk).split(b"\n")
            for line in lines:
                captured.add(line)
            partial = partial[: 4 * MAX_LINE_CHARS]  # the rest of an endless line is never shown
        if partial:
            captured.add(partial)
    finally:
        os.close(fd)


def _flush_stdout() -> None:
    """Flush Python's and C's stdout buffers into descriptor 1 as it is now."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError, AttributeError):
        pass
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # pragma: no cover - no C library to flush (not POSIX)
        pass
