"""The batch's grading process: `python -m grader.batch.worker --fd N` grades one submission and exits.

grader.batch.command starts one of these per submission (a fresh process: a CUDA illegal address or trap poisons the
whole context, and a CUDA context does not survive fork), pinned to one GPU with CUDA_VISIBLE_DEVICES. It
imports the grader, says `ready`, then reads one job (a grader.batch.protocol.Job, one JSON line) on stdin; with no
job (stdin closed) it exits. For the job it copies the submission's bytes into a fresh empty folder, checks
their sha256 against the one the batch keyed the job by, chdirs there (NVRTC resolves relative names from the
working folder) and runs grader.pipeline.grade.grade_file on the copy, in this process, so the copy floor is measured in
the same process as the submission it judges. Unless the job's settings say `sandbox` false (grade batch
--unsandboxed), NVRTC must run in grader.compile.sandbox's Landlock sandbox: without it the job is an error row and
nothing is compiled.

Messages (grader.batch.protocol's events) go to the parent as JSON lines on file descriptor N (never stdout: a
kernel's printf writes there; stdout is discarded and stderr goes to a log the parent reads only on a crash):
  {"event": "ready", "t": ...}                   imports done (t: time.time())
  {"event": "stage", "stage": S, "t": ...}       S = read, context, compile, verify, time (grader.core.errors.PROGRESS)
  {"event": "graded", "report": {...}}          with counters (--counters, or --counters-when-slow for a
                                                 slow correct kernel): the GradeReport before its counters
  {"event": "child", "pgid": G}                  with counters: the process group of ncu and its child
  {"event": "result", "report": {...}, "phases": {...}}  the GradeReport and seconds per phase
The parent applies the compile time limit from `compile`, the run time limit from `verify` and the counters'
limit (grader.feedback.counters.LIMIT_S) from `counters`; the stages come from grade_file's on_stage callback
(PhaseClock), which also times the phases.

`python -m grader.batch.worker --probe` prints {"count": N, "names": [...], "reason": "..."} for the visible GPUs
(the batch's parent never initialises CUDA itself), with "problem" and "exit" added when nothing can be graded
here (an incomplete install, a GPU the installed NVRTC cannot compile for). A worker on an incomplete install
exits 4 before it is ready, so the batch stops rather than give every student an error row.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

from grader.batch.protocol import Child, Event, Graded, Job, Ready, Result, StageEvent, event_line

MODULE = __spec__.name if __spec__ is not None else __name__
"""This module's import name, as `python -m` takes it (grader.batch.pool and grader.batch.command start it so)."""


def _die_with_parent() -> None:
    """Ask Linux to kill this process when the batch that started it dies (a hung kernel must not outlive it)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


class Channel:
    """Event messages (grader.batch.protocol) to the parent, one JSON line each, on one file descriptor."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def send(self, event: Event) -> None:
        """Send `event` as one JSON line, writing until all of it is out."""
        data = (event_line(event) + "\n").encode()
        while data:
            n = os.write(self.fd, data)
            data = data[n:]


class PhaseClock:
    """grade_file's on_stage callback: times each phase (seconds, keyed by grader.core.errors.PROGRESS) and tells
    the parent each stage as it starts (its compile limit starts at `compile`, its run limit at `verify`)."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.phases: dict[str, float] = {}
        self.current: str | None = None
        self.since = time.perf_counter()

    def __call__(self, stage: str) -> None:
        self.stop()
        self.current, self.since = stage, time.perf_counter()
        self.channel.send(StageEvent(stage=stage, t=time.time()))

    def stop(self) -> None:
        """Add the time since the current stage began to its phase, and end it."""
        if self.current:
            self.phases[self.current] = self.phases.get(self.current, 0.0) + time.perf_counter() - self.since
            self.current = None


def _read_job_file(job: Job) -> bytes:
    """The submission's bytes (read_capped), checked against the job's sha256. Raises InputError if they
    changed since the batch hashed them, or the file was removed or cannot be read any more."""
    from grader.core.errors import InputError
    from grader.source.read import read_capped

    try:
        raw = read_capped(job.path)
    except FileNotFoundError:
        raise InputError(f"{job.name}: the file was removed while the batch was running; put it back and run "
                         "the batch again") from None
    except OSError as err:
        raise InputError(f"{job.name}: the file cannot be read any more ({err.strerror or err}); it changed "
                         "while the batch was running: check it and run the batch again") from None
    if hashlib.sha256(raw).hexdigest() != job.sha256:
        raise InputError(f"{job.name}: the file changed while the batch was running; run the batch again")
    return raw


def _context_chain(err: BaseException | None):
    """`err`, then the exception it was raised while handling, and so on."""
    while err is not None:
        yield err
        err = err.__context__


def _graded(job: Job, clock: PhaseClock, channel: Channel):
    """grade_file on the job's copy (in the current folder), then its counters when the settings ask for them
    (the verdict is sent first: if the counters' stage is stopped, the parent keeps it, grader.batch.pool). Returns
    the GradeReport; raises what grade_file raises (InputError for bytes that changed, SandboxError)."""
    import grader.pipeline.grade as g
    from grader.compile import sandbox
    from grader.core.errors import Stage

    settings, name = job.settings, job.name
    if settings.sandbox:
        sandbox.require()
    Path(name).write_bytes(_read_job_file(job))
    report = g.grade_file(name, arch=settings.arch, seed=settings.seed, device_id=0, on_stage=clock,
                          **({"exercise_name": settings.exercise} if settings.exercise else {}))

    def verdict_first() -> None:
        channel.send(Graded(report=report))
        clock(Stage.COUNTERS)

    g.add_counters(report, name, asked=settings.counters, when_slow=settings.counters_when_slow,
                   on_start=lambda pgid: channel.send(Child(pgid=pgid)), before=verdict_first)
    return report


def _error_row(err: Exception, name: str):
    """The error report of a grading of `name` that raised `err`: the submission's own error at its stage, a
    kernel fault on the GPU (stage run), or the grader's (stage grader)."""
    from grader.core.errors import GraderFault, InputError, SandboxError, Stage, SubmissionError
    from grader.gpu.device import KERNEL_FAULTS, cuda_error_name
    from grader.output.report import error_report

    if isinstance(err, SandboxError):
        return error_report(name, Stage.GRADER, f"{err}; the submission was not compiled")
    if isinstance(err, InputError):
        return error_report(name, Stage.INPUT, str(err))
    if isinstance(err, GraderFault):  # the grader's own CUDA call failed: not the submission's doing
        return error_report(name, err.stage, str(err))
    if isinstance(err, SubmissionError):
        return error_report(name, err.stage, str(err), err.details)
    inner = next((e for e in _context_chain(err) if isinstance(e, SubmissionError)), None)
    fault = cuda_error_name(err)
    if inner is not None:
        return error_report(name, inner.stage, str(inner), inner.details)
    if fault in KERNEL_FAULTS:
        return error_report(name, Stage.RUN, f"the kernel faulted on the GPU: {fault}")
    last = traceback.format_exception_only(type(err), err)[-1].strip()[:300]
    return error_report(name, Stage.GRADER, f"the grader failed on this submission ({last}); please report it")


def grade_job(job: Job, channel: Channel) -> None:
    """Grade the job's file in a fresh empty folder (module docstring) and send the Result event. Never raises
    for the submission: every failure is the result's error report."""
    from grader.core.errors import PROGRESS, Stage

    clock = PhaseClock(channel)
    t0 = time.perf_counter()
    os.chdir(tempfile.mkdtemp(prefix="grade-"))
    try:
        report = _graded(job, clock, channel)
    except Exception as err:  # noqa: BLE001 - every failure becomes a row, never a lost batch
        report = _error_row(err, job.name)
        if not report.kernel:  # stopped before the pipeline named its exercise
            from grader import exercises

            ex = exercises.get(job.settings.exercise or exercises.DEFAULT)
            report.exercise, report.kernel = ex.name, ex.kernel_name
    clock.stop()
    phases = clock.phases
    report.file = job.display
    phases["total"] = time.perf_counter() - t0
    phases["other"] = max(0.0, phases["total"] - sum(phases.get(p, 0.0) for p in (*PROGRESS, Stage.COUNTERS)))
    channel.send(Result(report=report, phases=phases))


def probe() -> dict:
    """{"count", "names", "reason"} of the GPUs CUDA sees in this process (CUDA_VISIBLE_DEVICES applies), and,
    when nothing can be graded here, "problem" (one line) with the "exit" code the batch stops with: 4 for an
    incomplete install (a CUDA extra missing), 2 for a GPU the installed NVRTC cannot compile for."""
    from grader.compile.toolkit import check_arch, install_problem
    from grader.core.errors import EXIT_GRADER, InputError, NoGpuError
    from grader.gpu.device import visible_arches, visible_gpus

    problem = install_problem()
    if problem:
        return {"count": 0, "names": [], "reason": problem, "problem": problem, "exit": EXIT_GRADER}
    try:
        names = visible_gpus()
        arches = visible_arches()
    except NoGpuError as err:
        return {"count": 0, "names": [], "reason": str(err)}
    except Exception as err:  # noqa: BLE001 - a broken driver install: no GPU, with the reason
        return {"count": 0, "names": [], "reason": f"CUDA could not be queried ({str(err)[:120]})"}
    found = {"count": len(names), "names": names, "reason": ""}
    for name, arch in zip(names, arches, strict=False):
        try:
            check_arch(arch, name)
        except InputError as err:
            return {**found, "problem": str(err), "exit": err.exit_code}
    return found


def main(argv: list[str] | None = None) -> int:
    """`python -m grader.batch.worker --fd N` (grade one job, module docstring) or `--probe`; returns the exit code
    (a graded job ends the process with os._exit(0) instead)."""
    p = argparse.ArgumentParser(prog=f"python -m {MODULE}", description="grader.batch.command's grading process")
    p.add_argument("--fd", type=int, help="file descriptor for messages to the parent")
    p.add_argument("--probe", action="store_true", help="print the visible GPUs as JSON and exit")
    args = p.parse_args(argv)
    if args.probe:
        print(json.dumps(probe()))
        return 0
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, ValueError, OSError):  # pragma: no cover
        pass
    channel = Channel(args.fd)
    import grader.pipeline.grade  # noqa: F401 - the start-up cost a standby worker pays in advance
    from grader.compile.toolkit import install_problem
    from grader.core.errors import EXIT_GRADER

    problem = install_problem()
    if problem:  # never ready: the batch stops (grader.batch.pool.WorkerStartError) instead of blaming a submission
        print(problem, file=sys.stderr)
        return EXIT_GRADER
    channel.send(Ready(t=time.time()))
    line = sys.stdin.readline()
    if not line.strip():
        return 0
    grade_job(Job.from_line(line), channel)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # no CUDA teardown: after a fault it can hang or fail; the driver frees the context


if __name__ == "__main__":
    sys.exit(main())
