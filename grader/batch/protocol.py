"""What the batch, its pool and its workers say to each other, as types: the settings of a batch, one
submission to grade (Item), the job message the pool sends a worker (Job) and the events a worker sends back.

The pool writes one Job as a JSON line on the worker's stdin (Job.to_line, Job.from_line); the worker answers
with Event lines on its message pipe (Ready, StageEvent, Graded, Child, Result: read_event). The order of the
events, and the limits the pool applies to them, are in grader.batch.worker's and grader.batch.pool's docstrings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from grader.core.errors import Stage
from grader.core.model import ReportModel
from grader.output.gradescope_export import Submitter
from grader.output.report import GradeReport

DEFAULT_COMPILE_LIMIT = 60.0
"""Seconds NVRTC may take on one submission (the examples compile in under a second)."""
DEFAULT_RUN_LIMIT = 120.0
"""Seconds for start-up (imports, CUDA context) and, separately, for verification plus timing (the timer
stops itself after about 20 s, twice that for a borderline kernel)."""
DEFAULT_MEMORY_LIMIT_GIB = 16.0
"""Resident memory a worker may use (a grading takes well under 1 GiB of host memory; NVRTC on an exploding
template grows by hundreds of MiB a second)."""


class BatchSettings(BaseModel):
    """How every submission of one batch is graded: the worker's part (`arch`: compile target without a GPU,
    e.g. 'sm_90', None for the GPU's own; `seed`: the input seed, None for a fresh one per grading; `sandbox`:
    refuse to compile without the NVRTC sandbox, False only for --unsandboxed; `counters`, `counters_when_slow`:
    grader.pipeline.grade.add_counters' `asked` and `when_slow`; `exercise`: the exercise every file answers,
    grader.exercises.names(), "" for the default) and the pool's limits (seconds; GiB, 0 for none)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    arch: str | None = None
    seed: int | None = None
    sandbox: bool = True
    counters: bool = False
    counters_when_slow: bool = False
    exercise: str = ""
    compile_limit: float = Field(DEFAULT_COMPILE_LIMIT, gt=0)
    run_limit: float = Field(DEFAULT_RUN_LIMIT, gt=0)
    memory_limit_gib: float = Field(DEFAULT_MEMORY_LIMIT_GIB, ge=0)

    @property
    def memory_limit_bytes(self) -> int:
        """The memory limit in bytes (0: none)."""
        return int(self.memory_limit_gib * 2**30)


class Item(BaseModel):
    """One submission to grade: `id` (escaped: grader.core.text.printable), `path` relative to its class folder
    ("alice/src/kernel.cu", "bob.cu"; never a path of the grading machine), escaped the same way (shown in
    outputs and the student's report), `entry` (the class folder's entry it was found in: the student folder's or
    the file's name, which a Gradescope export's metadata names), `real` (resolved, inside its student's folder:
    the file the worker reads), `name` (the safe file name the worker grades it under), its bytes' `sha256`, and
    `problem` (a reason it cannot be graded, found before reading: then it becomes an error row without a
    worker); `stray`: a source file or archive that is not a .cu file (its problem says so); `remarks`: what the
    batch found in the submission and did not use (a metadata file inside it), for the instructor; `key`: its
    resume key (grader.batch.command.result_key); `submitters` and `submitted_at`: from a Gradescope export
    (grader.batch.discovery.name_submitters)."""

    id: str
    path: str
    entry: str = ""
    real: Path | None = None
    name: str = "submission.cu"
    sha256: str | None = None
    problem: str | None = None
    key: str = ""
    stray: bool = False
    remarks: list[str] = Field(default_factory=list)
    submitters: list[Submitter] = Field(default_factory=list)
    submitted_at: str = ""


class Job(BaseModel):
    """The one message the pool sends a worker: grade the file at `path` (the real path, possibly holding a
    name that is not UTF-8 as surrogate escapes), whose bytes must still have `sha256`, under the file name
    `name`, showing it as `display` in the report, with `settings`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    sha256: str
    name: str
    display: str
    settings: BatchSettings = BatchSettings()

    @classmethod
    def for_item(cls, item: Item, settings: BatchSettings) -> Job:
        """The job of a readable `item` (one with `real` and `sha256`)."""
        return cls(path=str(item.real), sha256=item.sha256 or "", name=item.name, display=item.path,
                   settings=settings)

    def to_line(self) -> str:
        """The job as one JSON line (with its newline). json.dumps, not pydantic's JSON writer: that one refuses
        the surrogate escapes of a file name that is not UTF-8 (json writes them as \\udcXX and reads them back)."""
        return json.dumps(self.model_dump(mode="json")) + "\n"

    @classmethod
    def from_line(cls, line: str) -> Job:
        """The job `line` (to_line) holds. Raises ValueError (pydantic's ValidationError is one) when it is not
        a job."""
        return cls.model_validate(json.loads(line))


class Ready(ReportModel):
    """The worker's imports are done (t: its time.time())."""

    event: Literal["ready"] = "ready"
    t: float = 0.0


class StageEvent(ReportModel):
    """The worker entered `stage` (one of grader.core.errors.PROGRESS, or COUNTERS) at t (time.time())."""

    event: Literal["stage"] = "stage"
    stage: Stage
    t: float = 0.0


class Graded(ReportModel):
    """With counters: the report before its counters (kept if the counters' stage is stopped)."""

    event: Literal["graded"] = "graded"
    report: GradeReport


class Child(ReportModel):
    """The process group (> 1) of ncu and its profiled child, which the pool kills with the worker."""

    event: Literal["child"] = "child"
    pgid: int = Field(gt=1)


class Result(ReportModel):
    """The grading's report and its seconds per phase (keys: grader.core.errors.PROGRESS, counters, total, other)."""

    event: Literal["result"] = "result"
    report: GradeReport
    phases: dict[str, float] = Field(default_factory=dict)


Event = Annotated[Ready | StageEvent | Graded | Child | Result, Field(discriminator="event")]
"""A message from a worker to the pool (ReportModel: its JSON escapes strings as the report does)."""
_EVENTS: TypeAdapter[Event] = TypeAdapter(Event)


def read_event(line: bytes | str) -> Event | None:
    """The event one JSON line holds, or None for a line that is not one (a malformed or unknown message is
    dropped: the worker's end of file or a time limit then decides the row)."""
    try:
        return _EVENTS.validate_json(line)
    except ValueError:
        return None


def event_line(event: Event) -> str:
    """`event` as one JSON line, without its newline."""
    return event.model_dump_json()
