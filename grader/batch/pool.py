"""Worker processes for `grade batch`: start them, hand each one submission, watch their stages and time
limits, and turn every outcome (a result, a limit passed, a death) into a GradeReport.

One slot per GPU (or per CPU worker without a GPU). A slot runs one job at a time: a `python -m grader.batch.worker`
process (grader.batch.worker) pinned with CUDA_VISIBLE_DEVICES, started in its own session from an empty folder,
with stdout discarded (a kernel's printf writes there) and stderr kept in an unlinked temporary file (only its
last line is ever shown, for a worker that died). While a job runs, the slot's next worker is already being
started (imports only; CUDA is untouched until it has a job), so the start-up cost is hidden.

Deadlines: start-up (imports, reading, CUDA context) and the run (verification plus timing) each get the
run limit; compilation gets the compile limit, counted from the worker's `compile` stage message; the run
limit starts again at its `verify` message; with --counters, the counters get grader.feedback.counters.LIMIT_S from
the `counters` message, and a worker stopped then keeps the verdict it sent before (its `graded` message). A worker
whose resident memory passes the memory limit is stopped too (NVRTC on an exploding template can take
gigabytes in seconds). The batch's own process never touches CUDA.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader.batch import worker as worker_module
from grader.batch.protocol import BatchSettings, Child, Event, Graded, Item, Job, Ready, Result, StageEvent, read_event
from grader.core.errors import Interrupted, Stage, WorkerStartError, stopped_in
from grader.core.procs import kill_group
from grader.core.text import printable
from grader.feedback.counters import LIMIT_S as COUNTERS_LIMIT_S
from grader.feedback.counters import Counters
from grader.output.report import GradeReport, error_report

WORKER_COMMAND = [sys.executable, "-m", worker_module.__name__]
"""How a worker is started (tests replace it with a stand-in)."""


def child_env(entry: str | None) -> dict[str, str]:
    """The environment of a child process: this one's, pinned to GPU `entry` (a CUDA_VISIBLE_DEVICES value;
    None leaves it as it is), with the grader importable. The folders every grader on the machine must agree on
    are passed as this process resolved them: the per-GPU lock folder (grader.timing.contention.LOCK_DIR, which would
    follow the worker's private TMPDIR: a batch and a `grade FILE` on one GPU then did not take turns) and the
    kernel cache's (an absolute path: the worker runs in another folder)."""
    from grader.compile import kernel_cache
    from grader.timing.contention import LOCK_DIR

    env = dict(os.environ)
    env["GRADER_LOCK_DIR"] = LOCK_DIR
    cache = kernel_cache.folder()
    env[kernel_cache.ENV] = str(cache) if cache is not None else "off"
    if entry is not None:
        env["CUDA_VISIBLE_DEVICES"] = entry
    here = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@dataclass
class Worker:
    """A started `python -m grader.batch.worker`: its process, message pipe and stderr log."""

    popen: subprocess.Popen
    rfd: int
    log: object
    spawned: float
    ready: float | None = None
    buf: bytes = b""
    eof: bool = False
    messages: list[Event] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)  # process groups it started (its "child" messages)

    def read(self) -> None:
        """Read what the pipe holds; the events of its complete JSON lines go to `messages` (a line that is no
        event is dropped: grader.batch.protocol.read_event); EOF sets `eof`."""
        try:
            chunk = os.read(self.rfd, 1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            self.eof = True
            return
        self.buf += chunk
        *lines, self.buf = self.buf.split(b"\n")
        self.messages.extend(ev for ev in map(read_event, lines) if ev is not None)

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
class Running:
    """A submission being graded in a slot: its worker, the stage it reported, the deadline of that stage
    (time.monotonic() seconds), and the events that decide its row."""

    item: Item
    worker: Worker
    started: float
    stage: Stage = Stage.SETUP
    deadline: float = 0.0
    result: Result | None = None
    graded: Graded | None = None  # with counters: the report before its counters

    def absorb(self, now: float, settings: BatchSettings) -> None:
        """Apply the worker's events (and clear them): a stage moves the deadline (stage_limit), `graded` and
        `result` are kept, a child's process group is remembered for stop()."""
        w = self.worker
        for ev in w.messages:
            if isinstance(ev, Ready):
                w.ready = w.ready or now
            elif isinstance(ev, StageEvent):
                self.stage = ev.stage
                limit = stage_limit(ev.stage, settings)
                if limit is not None:
                    self.deadline = now + limit
            elif isinstance(ev, Graded):
                self.graded = ev
            elif isinstance(ev, Child):
                w.groups.append(ev.pgid)
            elif isinstance(ev, Result):
                self.result = ev
        w.messages.clear()


def stage_limit(stage: Stage, settings: BatchSettings) -> float | None:
    """Seconds the worker may spend from the message that it entered `stage`: the compile limit from
    `compile`, the run limit again from `verify`, the counters' limit from `counters`; None for a stage that
    keeps the deadline running (read, context: start-up's; time: verify's)."""
    return {Stage.COMPILE: settings.compile_limit, Stage.VERIFY: settings.run_limit,
            Stage.COUNTERS: COUNTERS_LIMIT_S}.get(stage)


@dataclass
class Slot:
    """One GPU (or, without a GPU, one CPU worker): the job running there and the standby worker."""

    entry: str | None
    running: Running | None = None
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
    where = {Stage.COMPILE: "compilation", Stage.VERIFY: "the run", Stage.TIME: "timing",
             Stage.COUNTERS: "the counters' measurement"}.get(stage, "start-up")
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


def run_jobs(todo: list[Item], slots: list[Slot], settings: BatchSettings, *, on_result, progress: Progress,
             tmp: Path) -> bool:
    """Grade `todo` (items with `real` and `sha256`) on `slots` under `settings` (its limits: seconds, GiB),
    one worker per item, calling on_result(item, report, phases, entry) as each result is known (Scheduler).

    Returns True when every item got a result, False when interrupted (Interrupted raised by a signal
    handler): the jobs in flight are stopped and left for the next run. Raises WorkerStartError when a
    worker dies before it is ready. Every worker started here is stopped before returning.
    """
    return Scheduler(todo, slots, settings, on_result=on_result, progress=progress, tmp=tmp).run()


class Scheduler:
    """The pool's loop: hands each slot the next pending item (its standby worker, started while the last job
    ran), waits for the workers' events up to the nearest deadline, and turns each job's outcome (a result, a
    death, a time or memory limit passed) into a row through on_result."""

    def __init__(self, todo: list[Item], slots: list[Slot], settings: BatchSettings, *, on_result,
                 progress: Progress, tmp: Path) -> None:
        self.pending = list(todo)
        self.slots, self.settings, self.on_result, self.progress, self.tmp = slots, settings, on_result, progress, tmp
        self.sel = selectors.DefaultSelector()
        self.watched: dict[int, Worker] = {}

    def run(self) -> bool:
        """Grade everything pending (run_jobs); stops every worker before returning."""
        try:
            while self.pending or any(s.running for s in self.slots):
                self.step()
            return True
        except Interrupted:
            return False
        finally:
            self.close()

    def step(self) -> None:
        """One turn: dispatch to idle slots, wait for events (at most until the nearest deadline, 0.25 s), read
        them, and check every slot."""
        for slot in self.slots:
            if not slot.running and self.pending:
                self.dispatch(slot)
        for key, _ in self.sel.select(timeout=self.wait_s(time.monotonic())):
            key.data.read()
        now = time.monotonic()
        for slot in self.slots:
            self.check(slot, now)

    def wait_s(self, now: float) -> float:
        """Seconds to wait for events at `now`: until the nearest job's deadline, at most 0.25, never negative."""
        return max(0.0, min([s.running.deadline for s in self.slots if s.running] + [now + 0.25]) - now)

    def watch(self, w: Worker) -> None:
        """Listen to `w`'s message pipe."""
        self.sel.register(w.rfd, selectors.EVENT_READ, w)
        self.watched[w.rfd] = w

    def discard(self, w: Worker) -> None:
        """Stop listening to `w` and stop it (Worker.stop)."""
        if w.rfd in self.watched:
            self.sel.unregister(w.rfd)
            del self.watched[w.rfd]
        w.stop()

    def running_ids(self) -> list[str]:
        """The ids being graded now."""
        return [s.running.item.id for s in self.slots if s.running]

    def dispatch(self, slot: Slot) -> None:
        """Give the next pending item to `slot`'s standby worker (or a new one), send it its Job, and start
        the slot's next standby while items are left."""
        item = self.pending.pop(0)
        w = slot.standby or spawn(slot.entry, self.tmp)
        slot.standby = None
        if w.rfd not in self.watched:
            self.watch(w)
        now = time.monotonic()
        slot.running = Running(item=item, worker=w, started=now, deadline=now + self.settings.run_limit)
        try:
            w.popen.stdin.write(Job.for_item(item, self.settings).to_line().encode())
            w.popen.stdin.flush()
        except OSError:
            pass  # the worker died before reading: its end of file is handled in check()
        if self.pending:
            slot.standby = spawn(slot.entry, self.tmp)
            self.watch(slot.standby)
        self.progress.update(self.running_ids(), len(self.pending))

    def check_standby(self, slot: Slot, now: float) -> None:
        """Note when `slot`'s standby worker is ready; drop one that died (dispatch then starts a fresh one, whose
        failure is reported)."""
        sb = slot.standby
        if sb is None:
            return
        sb.ready = sb.ready or (now if any(isinstance(ev, Ready) for ev in sb.messages) else None)
        sb.messages.clear()
        if sb.eof:
            self.discard(sb)
            slot.standby = None

    def check(self, slot: Slot, now: float) -> None:
        """Apply `slot`'s new events at `now` and finish its job when its outcome is known."""
        self.check_standby(slot, now)
        run = slot.running
        if run is None:
            return
        run.absorb(now, self.settings)
        outcome = self.outcome(run, now)
        if outcome is not None:
            self.finish(slot, *outcome)

    def outcome(self, run: Running, now: float) -> tuple[GradeReport, dict[str, float]] | None:
        """The row of `run` at `now`, with its phases (seconds), or None while it runs: its result; an error row
        for a worker that died, passed its stage's deadline or the memory limit (with counters, a stop while
        measuring them keeps the verdict: counters_lost). Raises WorkerStartError for a worker that died
        before it was ready (a broken install, not the submission)."""
        w, stage = run.worker, stopped_in(run.stage)
        if run.result is not None:
            phases = dict(run.result.phases)
            phases["start"] = (w.ready or now) - w.spawned
            phases["wall"] = now - run.started
            return run.result.report, phases
        if w.eof or (w.popen.poll() is not None and not _readable(w)):
            w.popen.wait()
            tail = w.stderr_tail()
            if w.ready is None:
                raise WorkerStartError("the grading process failed to start "
                                       f"({died_reason(Stage.SETUP, w.popen.returncode, tail)})")
            reason = died_reason(run.stage, w.popen.returncode, tail)
            return counters_lost(run, reason) or item_error(run.item, stage, reason, self.settings.exercise), {}
        if now > run.deadline:
            reason = timeout_reason(run.stage, self.settings.compile_limit, self.settings.run_limit)
            return counters_lost(run, reason) or item_error(run.item, stage, reason, self.settings.exercise), {}
        limit = self.settings.memory_limit_bytes
        if limit and memory_bytes(w.popen.pid) > limit:
            return item_error(run.item, stage, memory_reason(run.stage, limit), self.settings.exercise), {}
        return None

    def finish(self, slot: Slot, report: GradeReport, phases: dict[str, float]) -> None:
        """Record `slot`'s job as done with `report` (on_result) and free the slot."""
        run = slot.running
        slot.running = None
        self.discard(run.worker)
        self.progress.durations.append(time.monotonic() - run.started)
        self.on_result(run.item, report, phases, slot.entry)
        self.progress.done += 1
        self.progress.update(self.running_ids(), len(self.pending), finished=f"{run.item.id}: {report.verdict}")

    def close(self) -> None:
        """Stop every worker (running or standby) and the selector."""
        for slot in self.slots:
            for w in (slot.standby, slot.running.worker if slot.running else None):
                if w:
                    self.discard(w)
            slot.running = slot.standby = None
        self.sel.close()


def counters_lost(run: Running, reason: str) -> GradeReport | None:
    """For a worker stopped while it measured counters: its graded report, with the counters unavailable for
    `reason` (counters never change a verdict). None in any other stage."""
    if run.stage != Stage.COUNTERS or run.graded is None:
        return None
    report = run.graded.report.model_copy(deep=True)
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


def item_error(item: Item, stage: Stage, reason: str, exercise: str = "") -> GradeReport:
    """The error report for `item` when the batch itself stopped it, a submission of `exercise` (grader.exercises;
    "" for the default)."""
    from grader import exercises

    ex = exercises.get(exercise or exercises.DEFAULT)
    return error_report(item.path, stage, reason, sha256=item.sha256 or "", exercise=ex.name, kernel=ex.kernel_name)
