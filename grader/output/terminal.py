"""What `grade FILE` shows on a terminal while it works: one stage line on stderr, redrawn in place and
cleared before the report, so a grading that takes half a minute (the timing) does not look hung. Nothing is
written when stderr is not a terminal (a pipe, a log, a test), so outputs stay exactly the report."""

from __future__ import annotations

import sys

from grader.core.errors import Stage
from grader.core.text import printable
from grader.timing.timer import TIME_CAP_S

STAGE_TEXT = {
    Stage.READ: "reading",
    Stage.CONTEXT: "opening the GPU for",
    Stage.COMPILE: "compiling",
    Stage.VERIFY: "verifying",
    Stage.TIME: f"timing (up to {2 * TIME_CAP_S:.0f} s)",
}
"""The words shown for each of grader.core.errors.PROGRESS."""


class StageLine:
    """grade_file's `on_stage` callback for `grade FILE`: 'grade: compiling NAME ...' on stderr, only when
    stderr is a terminal. Use as a context manager: the line is cleared on the way out, error or not."""

    def __init__(self, name: str, stream=None) -> None:
        self.name = printable(name, None)  # a file name may hold an escape sequence or a newline
        self.stream = stream or sys.stderr
        self.active = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.shown = False

    def __call__(self, stage: str) -> None:
        if self.active:
            self.stream.write(f"\r\x1b[Kgrade: {STAGE_TEXT.get(stage, stage)} {self.name} ..."[:200])
            self.stream.flush()
            self.shown = True

    def clear(self) -> None:
        """Erase the line, if one is shown."""
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False

    def __enter__(self) -> StageLine:
        return self

    def __exit__(self, *exc) -> None:
        self.clear()
