"""Errors the grader raises, each tied to one documented exit code.

Exit codes of `grade` (README, "Exit codes"):
  0  graded: gold or silver
  1  graded: fail (wrong output or too slow), or error (the submission could not be run: compile error,
     refused include, kernel missing, parameter list mismatch, fault or hang on the GPU)
  2  input or usage error: the grader was not given something it can read (missing file, unreadable,
     empty, binary, UTF-16 or UTF-32, not UTF-8, too large, malformed `// grade:` block, bad option)
  3  no GPU: every check that needs no GPU ran and passed; verification and timing need one
  4  not graded, and not the submission's fault: the grader's install is incomplete (a CUDA extra missing)
     or one of the grader's own CUDA calls failed (not a launch or fault of the submission's kernel)
  5  not graded: the kernel is correct but the GPU was busy while it was timed (other processes, or timings
     a quiet GPU would not give); run again
"""

from __future__ import annotations

EXIT_PASS = 0
EXIT_FAIL = 1
EXIT_INPUT = 2
EXIT_NO_GPU = 3
EXIT_GRADER = 4
EXIT_BUSY = 5


class GraderError(Exception):
    """Base class: `str(err)` is the one-line message shown to the user."""

    exit_code = EXIT_FAIL


class InputError(GraderError):
    """The input cannot be read or understood (exit 2). The message says what was wrong and what to do."""

    exit_code = EXIT_INPUT


class SubmissionError(GraderError):
    """The submission was read but cannot be run: verdict "error" (exit 1).

    `stage` names where it stopped: "source", "compile", "contract", "launch" or "run".
    `details` holds extra lines (a compile log, both parameter lists) shown under the message.
    """

    def __init__(self, stage: str, message: str, details: str = "") -> None:
        super().__init__(message)
        self.stage = stage
        self.details = details


class SandboxError(GraderError):
    """NVRTC cannot be confined here and the caller requires it (`grade batch` without `--unsandboxed`):
    exit 2, a usage error of the grading machine's operator, never the student's."""

    exit_code = EXIT_INPUT


class NoGpuError(GraderError):
    """No usable CUDA device or driver (exit 3). The message gives the reason in one line."""

    exit_code = EXIT_NO_GPU


class GraderFault(GraderError):
    """The grader could not do its own part (exit 4): one of its own CUDA calls failed (an allocation, a
    copy, opening the device), through no fault of the submission. `stage` is "grader"; the message says
    what failed and what to do."""

    exit_code = EXIT_GRADER
    stage = "grader"
    details = ""


class InstallError(GraderFault):
    """The grader's install is incomplete (exit 4): cuda-bindings, or the NVRTC library of the nvidia
    wheels, is missing (installed without the `cu13` or `cu12` extra). `stage` is "install"; the message
    names the pip command."""

    stage = "install"
