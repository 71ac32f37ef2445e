"""Process groups of the tools the grader starts (a disassembler, ncu and the program it profiles): each runs
in a session of its own on POSIX, so one signal reaches whatever it started."""

from __future__ import annotations

import os
import signal


def kill_group(pgid: int) -> None:
    """Send SIGKILL to the process group `pgid` (POSIX; nothing on Windows, where there are no groups).
    Safe after the group's leader has been reaped as long as a member lives (the kernel does not reuse a
    group's id while the group has a member); a group that has ended fails harmlessly."""
    if os.name == "nt":
        return
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
