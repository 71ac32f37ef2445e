"""Worker processes for `grade batch`: start them, hand each one submission, watch their stages and time
limits, and turn every outcome (a result, a limit passed, a death) into a GradeReport.

One slot per GPU (or per CPU worker without a GPU). A slot runs one job at a time: a `python -m grader.worker`
process (grader.worker) pinned with CUDA_VISIBLE_DEVICES, started in its own session from an empty folder,
with stdout discarded (a kernel's printf writes there) and stderr kept in an unlinked temporary file (only its
last line is ever shown, for a worker that died). While a job runs, the slot's next worker is already being
started (imports only; CUDA is untouched until it has a job), so the start-up cost is hidden.

Deadlines: start-up (imports, reading, CUDA context) and the run (verification plus timing) each get the
run limit; compilation gets the compile limit, counted from the worker's `compile` stage message; the run
limit starts again at its `verify` message; with --counters, the counters get grader.counters.LIMIT_S from
the `counters` message, and a worker stopped then keeps the verdict it sent before (its `graded` message). A worker
whose resident memory passes the memory limit is stopped too (NVRTC on an exploding template can take
gigabytes in seconds). The batch's own process never touches CUDA.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import grader
from grader.counters import LIMIT_S as COUNTERS_LIMIT_S, Counters
from grader.errors import Interrupted, Stage, WorkerStartError, stopped_in
from grader.procs import kill_group
from grader.report import GradeReport, error_report
from grader.text import printable

WORKER_COMMAND = [sys.executable, "-m", "grader.worker"]
"""How a worker is started (tests replace it with a stand-in)."""


def child_env(entry: str | None) -> dict[str, str]:
    """The environment of a child process: this one's, pinned to GPU `entry` (a CUDA_VISIBLE_DEVICES value;
    None leaves it as it is), with the grader importable. The folders every grader on the machine must agree on
    are passed as this process resolved them: the per-GPU lock folder (grader.contention.LOCK_DIR, which would
    follow the worker's private TMPDIR: a batch and a `grade FILE` on one GPU then did not take turns) and the
    kernel cache's (an absolute path: the worker runs in another folder)."""
    from grader import kernel_cache
    from grader.contention import LOCK_DIR

    env = dict(os.environ)
    env["GRADER_LOCK_DIR"] = LOCK_DIR
    cache = kernel_cache.folder()
    env[kernel_cache.ENV] = str(cache) if cache is not None else "off"
    if entry is not None:
        env["CUDA_VISIBLE_DEVICES"] = entry
    here = str(Path(grader.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@dataclass
class Worker:
    """A started `python -m grader.worker`: its process, message pipe and stderr log."""

    popen: subprocess.Popen
    rfd: int
    log: object
    spawned: float
    ready: float | None = None
    buf: bytes = b""
    eof: bool = False
    messages: list[dict] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)  # process groups it started (its "child" messages)

    def read(self) -> None:
        """Read what the pipe holds; complete JSON lines go to `messages`; EOF sets `eof`."""
        try:
            chunk = os.read(self.rfd, 1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            self.eof = True
            return
        self.buf += chunk
        *lines, self.buf = self.buf.split(b"\n")
        for line in lines:
            try:
                self.messages.append(json.loads(line))
            except ValueError:
                pass

    def stop(self) -> None:
        """Kill the process (if alive) and the process groups it reported (ncu and its profiled child, which run
        in a session of their own), reap it and close its pipe."""
        if self.popen.poll() is None:
            self.popen.kill()
        for pgid in self.groups:
            kill_group(pgid)
        self.popen.wait()
        self.close()

    def close(self) -> None:
        """Close the message pipe, the stderr log and stdin, ignoring any already closed."""
        stdin = self.popen.stdin
        for closer in (lambda: os.close(self.rfd), self.log.close, lambda: stdin and stdin.close()):
            try:
                closer()
            except OSError:
                pass

    def stderr_tail(self) -> str:
        """The last line of the worker's stderr (a Python exception's one-line summary), at most 200 chars."""
        try:
            self.log.seek(0)
            lines = [ln for ln in self.log.read().decode("utf-8", "replace").splitlines() if ln.strip()]
        except (OSError, ValueError):
            return ""
        return lines[-1].strip()[:200] if lines else ""


def spawn(entry: str | None, tmp: Path) -> Worker:
    """Start a worker pinned to GPU `entry` (a CUDA_VISIBLE_DEVICES value; None: none set), in the empty
    folder `tmp`, in its own session (a Ctrl-C reaches the batch only; the batch stops its workers)."""
    r, w = os.pipe()
    os.set_blocking(r, False)
    log = tempfile.TemporaryFile(dir=tmp)
    env = child_env(entry)
    env["TMPDIR"] = str(tmp)
    popen = subprocess.Popen([*WORKER_COMMAND, "--fd", str(w)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=log, pass_fds=(w,), env=env, cwd=tmp, start_new_session=True)
    os.close(w)
    return Worker(popen=popen, rfd=r, log=log, spawned=time.monotonic())


@dataclass
class Job:
    """A submission being graded in a slot: its worker, the stage it reported, and the deadline of that stage."""

    item: object  # a grader.batch.Item
    worker: Worker
    started: float
    stage: str = Stage.SETUP
    deadline: float = 0.0
    result: dict | None = None
    graded: dict | None = None  # with --counters: the report before its counters ("graded" message)


@dataclass
class Slot:
    """One GPU (or, without a GPU, one CPU worker): the job running there and the standby worker."""

    entry: str | None
    job: Job | None = None
    standby: Worker | None = None


def timeout_reason(stage: str, compile_limit: float, run_limit: float) -> str:
    """The reason recorded when a worker is stopped at its stage's time limit."""
    if stage == Stage.COMPILE:
        return (f"compile time limit exceeded: NVRTC ran for more than {compile_limit:g} s (deep template "
                "recursion or a huge unrolled loop?); the grading process was stopped")
    if stopped_in(stage) == Stage.SETUP:
        return f"the grading process did not start within {run_limit:g} s (CUDA start-up hung?); it was stopped"
    if stage == Stage.COUNTERS:
        return f"ncu did not finish within {COUNTERS_LIMIT_S:g} s; the grading process was stopped"
    doing = {Stage.VERIFY: "while verifying at the ragged shapes", Stage.TIME: "while being timed"}.get(stage, "")
    return (f"run time limit exceeded: the kernel did not finish within {run_limit:g} s {doing} (an endless loop "
            "such as while(1), or a kernel far too slow to time); the grading process was stopped").replace("  ", " ")


def died_reason(stage: str, returncode: int | None, tail: str) -> str:
    """The reason recorded when a worker exits without a result."""
    if returncode is not None and returncode < 0:
        try:
            how = signal.Signals(-returncode).name
        except ValueError:
            how = f"signal {-returncode}"
    else:
        how = f"exit code {returncode}"
    where = {Stage.COMPILE: "compilation", Stage.VERIFY: "the run", Stage.TIME: "timing"}.get(stage, "start-up")
    return f"the grading process died during {where} ({how})" + (f": {tail}" if tail else "")


class Progress:
    """The progress line on stderr: count, current students, time left. Redrawn in place on a terminal; one
    line per finished submission otherwise; nothing when quiet."""

    def __init__(self, total: int, already: int, slots: int, quiet: bool, stream=None) -> None:
        self.total, self.already, self.slots, self.quiet = total, already, slots, quiet
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.durations: list[float] = []
        self.done = 0

    def line(self, running: list[str], left: int) -> str:
        """The progress text: done/total, the ids `running` (first 4), and the time left for `left` waiting
        submissions from the mean duration so far (seconds, spread over the slots)."""
        eta = "estimating time left"
        if self.durations:
            per = sum(self.durations) / len(self.durations)
            secs = per * (left + 0.5 * len(running)) / max(1, self.slots)
            eta = f"about {_duration(secs)} left"
        now = ", ".join(printable(r, 24) for r in running[:4]) + (" ..." if len(running) > 4 else "")
        skipped = f" ({self.already} already graded)" if self.already else ""
        return f"grade batch: {self.done + self.already}/{self.total}{skipped}; now: {now or '-'}; {eta}"

    def update(self, running: list[str], left: int, finished: str | None = None) -> None:
        """Redraw the line (terminal), or print it with `finished` appended when a submission finished."""
        if self.quiet:
            return
        if self.tty:
            self._write("\r\x1b[K" + self.line(running, left)[:200])
        elif finished:
            self._write(self.line(running, left) + f"  [{printable(finished, 120)}]\n")

    def end(self) -> None:
        """Clear the redrawn line on a terminal."""
        if self.tty and not self.quiet:
            self._write("\r\x1b[K")

    def _write(self, text: str) -> None:
        """Write and flush; a reader that has gone (`grade batch ... 2>&1 | head`) turns the progress off
        instead of stopping the batch, whose rows and gradebook are what matters."""
        try:
            self.stream.write(text)
            self.stream.flush()
        except (BrokenPipeError, OSError, ValueError):
            self.quiet = True


def _duration(s: float) -> str:
    return f"{s:.0f} s" if s < 90 else f"{s / 60:.0f} min" if s < 5400 else f"{s / 3600:.1f} h"


def memory_bytes(pid: int) -> int:
    """Resident memory of process `pid` in bytes (0 if it cannot be read)."""
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def run_jobs(todo: list, slots: list[Slot], *, compile_limit: float, run_limit: float, memory_limit: float,
             arch: str | None, seed: int | None, on_result, progress: Progress, tmp: Path,
             sandbox: bool = True, counters: bool = False, counters_when_slow: bool = False) -> bool:
    """Grade `todo` (grader.batch.Item: id, path, real, name, sha256) on `slots`, one worker per item, calling
    on_result(item, report, phases, entry) as each result is known. memory_limit is in bytes (0: none).
    sandbox: the workers refuse to compile without the NVRTC sandbox (grader.sandbox.require); False only
    for `grade batch --unsandboxed`. counters: each worker also profiles its timed kernel (grader.counters);
    counters_when_slow: it does so for a correct kernel under half the one-float copy (`--counters-when-slow`).

    Returns True when every item got a result, False when interrupted (Interrupted raised by a signal
    handler): the jobs in flight are stopped and left for the next run. Raises WorkerStartError when a
    worker dies before it is ready. Every worker started here is stopped before returning.
    """
    pending = list(todo)
    sel = selectors.DefaultSelector()
    watched: dict[int, Worker] = {}

    def watch(w: Worker) -> None:
        sel.register(w.rfd, selectors.EVENT_READ, w)
        watched[w.rfd] = w

    def discard(w: Worker) -> None:
        if w.rfd in watched:
            sel.unregister(w.rfd)
            del watched[w.rfd]
        w.stop()

    def running_ids() -> list[str]:
        return [s.job.item.id for s in slots if s.job]

    def finish(slot: Slot, report: GradeReport, phases: dict[str, float]) -> None:
        job = slot.job
        slot.job = None
        discard(job.worker)
        progress.durations.append(time.monotonic() - job.started)
        on_result(job.item, report, phases, slot.entry)
        progress.done += 1
        progress.update(running_ids(), len(pending), finished=f"{job.item.id}: {report.verdict}")

    def dispatch(slot: Slot) -> None:
        item = pending.pop(0)
        w = slot.standby or spawn(slot.entry, tmp)
        slot.standby = None
        if w.rfd not in watched:
            watch(w)
        now = time.monotonic()
        slot.job = Job(item=item, worker=w, started=now, deadline=now + run_limit)
        job = {"path": str(item.real), "sha256": item.sha256, "name": item.name, "display": item.path,
               "arch": arch, "seed": seed, "sandbox": sandbox, "counters": counters,
               "counters_when_slow": counters_when_slow}
        try:
            w.popen.stdin.write((json.dumps(job) + "\n").encode())
            w.popen.stdin.flush()
        except OSError:
            pass  # the worker died before reading: its end of file is handled in check()
        if pending:
            slot.standby = spawn(slot.entry, tmp)
            watch(slot.standby)
        progress.update(running_ids(), len(pending))

    def check(slot: Slot, now: float) -> None:
        sb = slot.standby
        if sb:
            sb.ready = sb.ready or (now if any(m.get("event") == "ready" for m in sb.messages) else None)
            sb.messages.clear()
            if sb.eof:  # a standby that died: dispatch starts a fresh one, whose failure is then reported
                discard(sb)
                slot.standby = None
        job = slot.job
        if not job:
            return
        w = job.worker
        for msg in w.messages:
            event = msg.get("event")
            if event == "ready":
                w.ready = w.ready or now
            elif event == "stage":
                job.stage = msg.get("stage", job.stage)
                if job.stage == Stage.COMPILE:
                    job.deadline = now + compile_limit
                elif job.stage == Stage.VERIFY:
                    job.deadline = now + run_limit
                elif job.stage == Stage.COUNTERS:
                    job.deadline = now + COUNTERS_LIMIT_S
            elif event == "graded":
                job.graded = msg
            elif event == "child" and isinstance(msg.get("pgid"), int) and msg["pgid"] > 1:
                w.groups.append(msg["pgid"])
            elif event == "result":
                job.result = msg
        w.messages.clear()
        stage = stopped_in(job.stage)
        if job.result is not None:
            phases = dict(job.result.get("phases", {}))
            phases["start"] = (w.ready or now) - w.spawned
            phases["wall"] = now - job.started
            finish(slot, GradeReport.model_validate(job.result["report"]), phases)
        elif w.eof or (w.popen.poll() is not None and not _readable(w)):
            w.popen.wait()
            tail = w.stderr_tail()
            if w.ready is None:
                why = died_reason(Stage.SETUP, w.popen.returncode, tail)
                raise WorkerStartError(f"the grading process failed to start ({why})")
            reason = died_reason(job.stage, w.popen.returncode, tail)
            finish(slot, counters_lost(job, reason) or item_error(job.item, stage, reason), {})
        elif now > job.deadline:
            reason = timeout_reason(job.stage, compile_limit, run_limit)
            finish(slot, counters_lost(job, reason) or item_error(job.item, stage, reason), {})
        elif memory_limit and memory_bytes(w.popen.pid) > memory_limit:
            finish(slot, item_error(job.item, stage, memory_reason(job.stage, memory_limit)), {})

    try:
        while pending or any(s.job for s in slots):
            for slot in slots:
                if not slot.job and pending:
                    dispatch(slot)
            deadlines = [s.job.deadline for s in slots if s.job]
            wait = min([*deadlines, time.monotonic() + 0.25]) - time.monotonic()
            for key, _ in sel.select(timeout=max(0.0, wait)):
                key.data.read()
            now = time.monotonic()
            for slot in slots:
                check(slot, now)
        return True
    except Interrupted:
        return False
    finally:
        for slot in slots:
            for w in (slot.standby, slot.job.worker if slot.job else None):
                if w:
                    discard(w)
            slot.job = slot.standby = None
        sel.close()


def counters_lost(job: Job, reason: str) -> GradeReport | None:
    """For a worker stopped while it measured counters: its graded report, with the counters unavailable for
    `reason` (counters never change a verdict). None in any other stage."""
    if job.stage != Stage.COUNTERS or job.graded is None:
        return None
    report = GradeReport.model_validate(job.graded["report"])
    report.counters = Counters(unavailable=f"the counters were not measured: {reason}")
    return report


def memory_reason(stage: str, limit: float) -> str:
    """The reason recorded when a worker is stopped for passing the memory limit."""
    where = "while compiling (an exploding template?)" if stage == Stage.COMPILE else f"during {stage}"
    return (f"memory limit exceeded: the grading process used more than {limit / 2**30:g} GiB {where}; "
            "it was stopped")


def _readable(w: Worker) -> bool:
    """Read what is left in an exited worker's pipe; True while more may come."""
    w.read()
    return not w.eof and bool(w.buf)


def item_error(item, stage: Stage, reason: str) -> GradeReport:
    """The error report for `item` (anything with `path` and `sha256`) when the batch itself stopped it."""
    return error_report(item.path, stage, reason, sha256=item.sha256 or "")
