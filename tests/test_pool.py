"""The pool's scheduler, one decision at a time, without a GPU or a worker process: the deadline each stage
message sets, the row of a job that sent its result, died, passed its time or memory limit (a stop while the
counters are measured keeps the verdict), a worker that dies before it is ready (the batch stops), a standby
that died (dropped, so the next dispatch starts a fresh one), the wait until the nearest deadline; and the
protocol's messages as the pool and the worker write and read them."""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

import pytest

from grader.batch import pool
from grader.batch.protocol import (
    BatchSettings,
    Child,
    Graded,
    Item,
    Job,
    Ready,
    Result,
    StageEvent,
    event_line,
    read_event,
)
from grader.core.errors import Stage, WorkerStartError
from grader.feedback.counters import LIMIT_S as COUNTERS_LIMIT_S
from grader.output.report import GradeReport

SETTINGS = BatchSettings(compile_limit=5.0, run_limit=9.0, memory_limit_gib=1.0)


class StubPopen:
    """What the scheduler asks of a worker's process: poll, wait, kill, its pid and exit status."""

    def __init__(self, returncode: int | None = None) -> None:
        self.returncode, self.pid, self.stdin = returncode, 0, None

    def poll(self) -> int | None:
        return self.returncode

    def wait(self) -> int | None:
        return self.returncode

    def kill(self) -> None:
        self.returncode = -signal.SIGKILL


def stub_worker(returncode: int | None = None, stderr: str = "") -> pool.Worker:
    r, w = os.pipe()
    os.close(w)
    log = tempfile.TemporaryFile()
    log.write(stderr.encode())
    return pool.Worker(popen=StubPopen(returncode), rfd=r, log=log, spawned=100.0)


def running(*events, ready: bool = True, returncode: int | None = None, stderr: str = "") -> pool.Running:
    """A job started at t=100 whose worker sent `events` (Ready first unless `ready` is False)."""
    w = stub_worker(returncode, stderr)
    w.messages = [*([Ready()] if ready else []), *events]
    job = pool.Running(item=Item(id="alice", path="class/alice.cu", sha256="0" * 64), worker=w, started=100.0,
                       deadline=100.0 + SETTINGS.run_limit)
    job.absorb(101.0, SETTINGS)
    return job


@pytest.fixture
def scheduler(tmp_path):
    s = pool.Scheduler([], [], SETTINGS, on_result=None, progress=pool.Progress(0, 0, 1, quiet=True), tmp=tmp_path)
    yield s
    s.close()


def report(verdict: str = "gold", **fields) -> GradeReport:
    return GradeReport(file="class/alice.cu", verdict=verdict, stage=Stage.GRADE, reason="fine", **fields)


def test_each_stage_message_sets_its_deadline():
    assert pool.stage_limit(Stage.COMPILE, SETTINGS) == 5.0
    assert pool.stage_limit(Stage.VERIFY, SETTINGS) == 9.0
    assert pool.stage_limit(Stage.COUNTERS, SETTINGS) == COUNTERS_LIMIT_S
    for stage in (Stage.READ, Stage.CONTEXT, Stage.TIME):  # start-up's deadline, then verify's, runs on
        assert pool.stage_limit(stage, SETTINGS) is None
    job = running(StageEvent(stage=Stage.READ), StageEvent(stage=Stage.COMPILE))
    assert (job.stage, job.deadline, job.worker.ready) == (Stage.COMPILE, 101.0 + 5.0, 101.0)
    job.worker.messages = [StageEvent(stage=Stage.VERIFY)]
    job.absorb(110.0, SETTINGS)
    assert (job.stage, job.deadline) == (Stage.VERIFY, 119.0)
    job.worker.messages = [StageEvent(stage=Stage.TIME)]
    job.absorb(115.0, SETTINGS)
    assert (job.stage, job.deadline) == (Stage.TIME, 119.0) and not job.worker.messages


def test_a_result_is_the_row_with_its_start_up_and_wall_time(scheduler):
    job = running(StageEvent(stage=Stage.COMPILE), Result(report=report(), phases={"compile": 0.5}))
    got, phases = scheduler.outcome(job, now=103.0)
    assert got.verdict == "gold" and phases == {"compile": 0.5, "start": 1.0, "wall": 3.0}


def test_a_job_still_running_has_no_row_yet(scheduler, monkeypatch):
    monkeypatch.setattr(pool, "memory_bytes", lambda pid: 2**20)
    assert scheduler.outcome(running(StageEvent(stage=Stage.COMPILE)), now=102.0) is None


def test_a_worker_that_dies_is_an_error_row_at_its_stage(scheduler):
    job = running(StageEvent(stage=Stage.COMPILE), returncode=-signal.SIGSEGV, stderr="x\nRuntimeError: boom\n")
    job.worker.eof = True
    got, phases = scheduler.outcome(job, now=102.0)
    assert (got.verdict, got.stage, phases) == ("error", Stage.COMPILE, {})
    assert got.reason == "the grading process died during compilation (SIGSEGV): RuntimeError: boom"


def test_a_worker_that_dies_before_it_is_ready_stops_the_batch(scheduler):
    job = running(ready=False, returncode=4, stderr="the CUDA extra is missing\n")
    job.worker.eof = True
    with pytest.raises(WorkerStartError, match="failed to start .*exit code 4.*the CUDA extra is missing"):
        scheduler.outcome(job, now=102.0)


def test_a_deadline_passed_is_an_error_row_naming_the_limit(scheduler, monkeypatch):
    monkeypatch.setattr(pool, "memory_bytes", lambda pid: 0)
    job = running(StageEvent(stage=Stage.COMPILE))
    assert scheduler.outcome(job, now=job.deadline) is None  # at the deadline, not yet
    got, _ = scheduler.outcome(job, now=job.deadline + 0.1)
    assert got.stage == Stage.COMPILE and "NVRTC ran for more than 5 s" in got.reason
    job = running(StageEvent(stage=Stage.VERIFY))
    got, _ = scheduler.outcome(job, now=job.deadline + 0.1)
    assert got.stage == Stage.RUN and "did not finish within 9 s while verifying" in got.reason
    got, _ = scheduler.outcome(running(), now=100.0 + 9.1)  # start-up
    assert got.stage == Stage.SETUP and "did not start within 9 s" in got.reason


def test_a_stop_while_measuring_counters_keeps_the_verdict(scheduler):
    job = running(Graded(report=report(fraction=0.96)), Child(pgid=4321), StageEvent(stage=Stage.COUNTERS))
    assert job.worker.groups == [4321] and job.deadline == 101.0 + COUNTERS_LIMIT_S
    got, _ = scheduler.outcome(job, now=job.deadline + 1)
    assert (got.verdict, got.fraction) == ("gold", 0.96)
    assert got.counters.unavailable.startswith("the counters were not measured: ncu did not finish")
    assert job.graded.report.counters is None  # the worker's message is left as it came
    job = running(Graded(report=report()), StageEvent(stage=Stage.COUNTERS), returncode=1)
    job.worker.eof = True
    got, _ = scheduler.outcome(job, now=102.0)
    assert got.verdict == "gold" and "died during the counters' measurement (exit code 1)" in got.counters.unavailable


def test_the_memory_limit_stops_a_worker(scheduler, monkeypatch):
    monkeypatch.setattr(pool, "memory_bytes", lambda pid: 2**30 + 1)
    got, _ = scheduler.outcome(running(StageEvent(stage=Stage.COMPILE)), now=102.0)
    assert got.stage == Stage.COMPILE and "more than 1 GiB while compiling" in got.reason
    monkeypatch.setattr(pool, "memory_bytes", lambda pid: 2**30)
    assert scheduler.outcome(running(StageEvent(stage=Stage.COMPILE)), now=102.0) is None
    unlimited = pool.Scheduler([], [], BatchSettings(memory_limit_gib=0), on_result=None,
                               progress=pool.Progress(0, 0, 1, quiet=True), tmp=Path("."))
    monkeypatch.setattr(pool, "memory_bytes", lambda pid: 2**40)
    assert unlimited.outcome(running(StageEvent(stage=Stage.COMPILE)), now=102.0) is None
    unlimited.close()


def test_a_standby_that_died_is_dropped_and_one_that_is_ready_is_noted(scheduler):
    slot = pool.Slot(entry="0", standby=stub_worker())
    slot.standby.messages = [Ready()]
    scheduler.check_standby(slot, 50.0)
    assert slot.standby.ready == 50.0 and not slot.standby.messages
    slot.standby.eof = True
    scheduler.check_standby(slot, 51.0)
    assert slot.standby is None  # the next dispatch starts a fresh worker, whose failure is then reported


def test_the_loop_waits_until_the_nearest_deadline_at_most_a_quarter_second(scheduler):
    assert scheduler.wait_s(10.0) == 0.25
    a, b = pool.Slot(entry="0", running=running()), pool.Slot(entry="1", running=running())
    scheduler.slots = [a, b]
    a.running.deadline, b.running.deadline = 10.1, 12.0
    assert scheduler.wait_s(10.0) == pytest.approx(0.1)
    a.running.deadline = 9.0
    assert scheduler.wait_s(10.0) == 0.0
    scheduler.slots = []


def test_events_survive_the_pipe_and_a_line_that_is_no_event_is_dropped():
    w = stub_worker()
    r, wfd = os.pipe()
    os.close(w.rfd)
    w.rfd = r
    lines = [event_line(Ready(t=1.0)), event_line(StageEvent(stage=Stage.VERIFY)), "not json", '{"event": "new"}',
             '{"event": "child", "pgid": 1}', event_line(Result(report=report(fraction=float("nan"))))]
    os.write(wfd, ("\n".join(lines) + "\n").encode())
    os.close(wfd)
    w.read()
    assert [type(ev) for ev in w.messages] == [Ready, StageEvent, Result]  # pgid 1 is never a child's group
    assert w.messages[1].stage is Stage.VERIFY and w.messages[2].report.fraction != w.messages[2].report.fraction
    w.read()
    assert w.eof
    w.close()
    assert read_event(b"") is None


def test_a_job_line_carries_a_name_that_is_not_utf8_and_the_settings():
    item = Item(id="caf\\xe9", path="class/caf\\xe9.cu", real=Path(os.fsdecode(b"/class/caf\xe9.cu")),
                sha256="0" * 64, name="caf_.cu")
    settings = BatchSettings(arch="sm_90", seed=3, sandbox=False, counters_when_slow=True)
    line = Job.for_item(item, settings).to_line()
    assert line.endswith("\n") and "\n" not in line[:-1] and line.isascii()
    job = Job.from_line(line)
    assert os.fsencode(job.path) == b"/class/caf\xe9.cu" and job.display == "class/caf\\xe9.cu"
    assert job.settings == settings and job.name == "caf_.cu"
    with pytest.raises(ValueError):
        Job.from_line('{"path": "a.cu"}')
