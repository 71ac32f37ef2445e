"""Errors the grader raises, each tied to one documented exit code.

Exit codes of `grade` (README, "Exit codes"):
  0  graded: gold or silver
  1  graded: fail (wrong output or too slow), or error (the submission could not be run: compile error,
     refused include, kernel missing, parameter list mismatch, fault or hang on the GPU)
  2  input or usage error: the grader was not given something it can read (missing file, unreadable,
     empty, binary, UTF-16 or UTF-32, not UTF-8, too large, malformed `// grade:` block, bad option)
  3  no GPU: every check that needs no GPU ran and passed; verification and timing need one
  4  not graded, and not the submission's fault: the grader's install is incomplete (a CUDA extra missing),
     one of the grader's own CUDA calls failed (not a launch or fault of the submission's kernel), or a timing
     came out above exercise.PHYSICAL_BOUND of the copy floor yet under the card's peak (grader.timing.measure)
  5  not graded: the kernel is correct but the GPU was busy while it was timed (other processes, timings a
     quiet GPU would not give, clocks that moved or a card that slowed itself: grader.gpu.clocks); run again
  130 interrupted (Ctrl-C)
`grade batch` adds: 4 also when the batch is incomplete (a row busy, not graded, or a stop by a signal).
Every command's -h lists the codes it can return (exit_codes_help, in EXIT_MEANING's words where a code
means the same).

Also here: `Stage`, the one vocabulary of stage names (what grade_file announces, where a report stopped).
"""

from __future__ import annotations

from enum import StrEnum

EXIT_PASS = 0
EXIT_FAIL = 1
EXIT_INPUT = 2
EXIT_NO_GPU = 3
EXIT_GRADER = 4
EXIT_BUSY = 5
EXIT_INCOMPLETE = 4
"""`grade batch`: some submission has no final row (busy, not graded, or the batch was stopped); run again."""
EXIT_INTERRUPTED = 130
"""Ctrl-C (SIGINT): 128 + the signal's number, as shells report it."""

EXIT_MEANING = {
    EXIT_PASS: "graded: gold or silver",
    EXIT_FAIL: "graded: fail (wrong output, too slow) or error (compile error, refused include, kernel missing, "
               "parameter list mismatch, fault or hang on the GPU)",
    EXIT_INPUT: "input or usage error (missing, unreadable or not a .cu file, malformed `// grade:` block, bad "
                "option, an --arch the installed NVRTC cannot compile for)",
    EXIT_NO_GPU: "no GPU: every check that needs no GPU ran and passed; verification and timing need one",
    EXIT_GRADER: "not graded, not the submission's fault: the install lacks its CUDA extra (one line names the "
                 "pip command), a CUDA call of the grader's own failed, or a timing above what the copy floor "
                 "allows could not be pinned on the kernel",
    EXIT_BUSY: "not graded: the kernel is correct but the GPU was busy, or its clocks not steady, while it was "
               "timed; run again",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}
"""What each exit code of `grade FILE` means, in the words of every command's -h (the table above)."""


def exit_codes_help(*codes: int | tuple[int, str], title: str = "exit codes") -> str:
    """The exit-code table of a command's -h (its epilog): `title`, then one code a line, in the order given. A
    code alone takes EXIT_MEANING's words; a (code, meaning) pair is a command's own. grader.core.options.HelpFormatter
    keeps the lines and wraps each meaning under itself (argparse's own formatter would join them)."""
    lines = [f"{title}:"]
    for entry in codes:
        code, meaning = entry if isinstance(entry, tuple) else (entry, EXIT_MEANING[entry])
        lines.append(f"  {code:<3}  {meaning}")
    return "\n".join(lines)


class Stage(StrEnum):
    """Every stage name of the grader, in one place.

    grade_file announces READ, CONTEXT, COMPILE, VERIFY and TIME (in that order) to its on_stage callback as
    it enters them: the terminal's stage line, `grade FILE`'s watchdog and the batch's time limits use them.
    A report's `stage` says where grading stopped: INPUT (the file could not be read), SOURCE (a refused
    construct), COMPILE, CONTRACT (parameter list or a launch value the contract cannot express), LAUNCH
    (refused by the driver), RUN (a fault, or a limit passed while the kernel ran), VERIFY (wrong output),
    TIME (busy: timing withheld), GRADE (graded); COUNTERS follows grading when hardware counters are asked
    for (grader.feedback.counters; they never change the verdict); and the grader's own: GRADER (its own call failed),
    INSTALL (an incomplete install), SETUP (a batch worker that did not start).
    """

    READ = "read"
    CONTEXT = "context"
    INPUT = "input"
    SOURCE = "source"
    COMPILE = "compile"
    CONTRACT = "contract"
    LAUNCH = "launch"
    RUN = "run"
    VERIFY = "verify"
    TIME = "time"
    GRADE = "grade"
    COUNTERS = "counters"
    GRADER = "grader"
    INSTALL = "install"
    SETUP = "setup"


PROGRESS = (Stage.READ, Stage.CONTEXT, Stage.COMPILE, Stage.VERIFY, Stage.TIME)
"""The stages grade_file announces, in order (a run may stop after any of them)."""

NOT_GRADED = (Stage.GRADER, Stage.INSTALL)
"""Report stages that mean the grader, not the submission, could not finish (no score is given)."""


def stopped_in(progress: str) -> Stage:
    """The report stage of a grading stopped from outside (a time limit, a death, the memory limit) while it
    was in stage `progress`: SETUP before a batch worker took its job, COMPILE while compiling, RUN once the
    kernel may have been running (verify, time)."""
    if progress == Stage.COMPILE:
        return Stage.COMPILE
    if progress in (Stage.VERIFY, Stage.TIME, Stage.RUN, Stage.COUNTERS):
        return Stage.RUN
    return Stage.SETUP


class GraderError(Exception):
    """Base class: `str(err)` is the one-line message shown to the user."""

    exit_code = EXIT_FAIL


class InputError(GraderError):
    """The input cannot be read or understood (exit 2). The message says what was wrong and what to do."""

    exit_code = EXIT_INPUT


class SubmissionError(GraderError):
    """The submission was read but cannot be run: verdict "error" (exit 1).

    `stage` names where it stopped: Stage.SOURCE, COMPILE, CONTRACT, LAUNCH or RUN.
    `details` holds extra lines (a compile log, both parameter lists) shown under the message. `fault` is
    the CUDA error a kernel left behind (e.g. "CUDA_ERROR_MISALIGNED_ADDRESS"), where there is one.
    """

    def __init__(self, stage: str, message: str, details: str = "", fault: str | None = None) -> None:
        super().__init__(message)
        self.stage = Stage(stage)
        self.details = details
        self.fault = fault


class WrongOutput(GraderError):
    """A timed launch of the submission gave a wrong output (checked on the GPU, grader.check.verify.DeviceCheck):
    verdict "fail" at stage "verify" (exit 1). `verification` is the failed grader.check.verify.Verification."""

    stage = Stage.VERIFY

    def __init__(self, verification) -> None:
        super().__init__(verification.message)
        self.verification = verification


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
    stage = Stage.GRADER
    details = ""


class Busy(GraderError):
    """The GPU could not be had quietly while the submission was timed (grader.timing.contention): other processes,
    or timings a quiet GPU would not give. `str(err)` says why; the verdict is withheld (exit 5)."""

    exit_code = EXIT_BUSY
    stage = Stage.TIME
    details = ""
    clocks = None
    """The grader.gpu.clocks.Clocks of the timing withheld, where they were read."""


class InstallError(GraderFault):
    """The grader's install is incomplete (exit 4): cuda-bindings, or the NVRTC library of the nvidia
    wheels, is missing (installed without the `cu13` or `cu12` extra). `stage` is "install"; the message
    names the pip command."""

    stage = Stage.INSTALL


class Interrupted(GraderError):
    """`grade batch` was stopped by SIGINT or SIGTERM (a Slurm time limit sends SIGTERM): the rows so far are
    kept; the batch exits EXIT_INCOMPLETE."""

    exit_code = EXIT_INCOMPLETE


class WorkerStartError(GraderError):
    """A batch worker died before it was ready (a broken install, not a submission): the batch stops and
    records no row for the submission it was given (exit 4). The message holds the worker's last stderr line."""

    exit_code = EXIT_GRADER
