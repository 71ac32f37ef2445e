"""How `grade batch` and `grade merge` answer: warnings and errors on stderr, one line each (`grade batch: ...`), and
with --json one document on stdout at the end (ClassRun), whatever happened: the outputs written, or why nothing
was. Also RowProblem, a row of a results file that cannot be trusted as it is (grader.batch.merging finds them).

The grammar every command of `grade` shares (grader.cli's docstring): --json means one JSON document on stdout and
everything else on stderr; the exit code tells "done" (0, 3) from "did nothing" (2) and "not finished" (4).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

from grader.core.errors import EXIT_INPUT
from grader.core.model import ReportModel
from grader.core.text import printable


class RowProblem(ReportModel):
    """A line of a results file that `grade merge` cannot take as it is: `file` (as given) and `line` (1-based),
    `kind` (torn: not a whole JSON row, a write cut short; foreign: a JSON line that is no row of this grader's
    schema, or a row another batch or shard wrote; duplicate: an id whose row is in another file too; mismatch: a
    row whose verdict, stage or fraction is not its report's), `id` where it is known, and `message` (what is wrong
    and what to do). `lost`: no other row stands for the submission (the merge would leave it out or mistake it)."""

    file: str
    line: int
    kind: Literal["torn", "foreign", "duplicate", "mismatch"]
    id: str = ""
    message: str
    lost: bool = True

    def describe(self) -> str:
        """'FILE:LINE: KIND: MESSAGE' on one line."""
        return f"{printable(self.file, 120)}:{self.line}: {self.kind}: {printable(self.message, 300)}"


class Expected(ReportModel):
    """What `grade merge --expect CLASS --shards N` found (grader.batch.expect; gradebook.json's settings record
    the same): `expect` (the CLASS paths given; empty without --expect), `expected` (the submissions found there),
    `shards` (N; 0 without --shards), `complete` (nothing missing, stale or lost), `missing` (ids of the class
    without a row), `stale` (ids whose row graded an earlier file than the class holds now), `lost_shards` (K of
    each shard without its results file) and `dropped` (ids of rows left out: no longer in the class)."""

    expect: list[str] = []
    expected: int = 0
    shards: int = 0
    complete: bool = True
    missing: list[str] = []
    stale: list[str] = []
    lost_shards: list[int] = []
    dropped: list[str] = []


class ClassRun(ReportModel):
    """What `grade batch --json` and `grade merge --json` print: `command`, its `exit_code`, the output folder, and
    either `error` (why nothing was done) or what was: `submissions` (rows found, or merged), `left` (not graded
    yet), `counts` per verdict, the cards (`gpus`; `no_gpu`: why there was none), the `files` written by kind
    (csv, json, summary, scores, reports, page, gradescope), the `warnings` said on stderr, and the merge's
    `problems` (RowProblem) and what its --expect and --shards found (`expected`: Expected; null when neither was
    given; then `left` counts the submissions without a row or with a stale one)."""

    command: Literal["batch", "merge"]
    exit_code: int
    out: str = ""
    error: str = ""
    complete: bool = False
    submissions: int = 0
    left: int = 0
    counts: dict[str, int] = {}
    gpus: list[str] = []
    no_gpu: str = ""
    files: dict[str, str] = {}
    warnings: list[str] = []
    problems: list[RowProblem] = []
    expected: Expected | None = None


class Reply:
    """The answer of one `grade batch` or `grade merge` run (module docstring): `warn` says a line on stderr and
    keeps it; `fail` says why nothing was done and returns its exit code; `finish` returns the exit code of a run
    that did something. With `json`, fail and finish also print the ClassRun on stdout. `on_fail`, when set, is
    called with the message before fail returns (the Gradescope route writes its results.json there)."""

    def __init__(self, command: Literal["batch", "merge"], json: bool = False, out: str = "") -> None:
        self.command, self.json, self.out = command, json, out
        self.warnings: list[str] = []
        self.on_fail = None

    def say(self, message: str) -> None:
        """One line on stderr: `grade COMMAND: MESSAGE` (escaped)."""
        print(f"grade {self.command}: {printable(message, None)}", file=sys.stderr)

    def warn(self, message: str) -> None:
        """Say `message` and keep it for the JSON document's warnings."""
        self.say(message)
        self.warnings.append(message)

    def fail(self, message: str, code: int = EXIT_INPUT, problems: list[RowProblem] | None = None) -> int:
        """Nothing was done: say why (and each problem), print the ClassRun with --json; return `code`."""
        for problem in problems or []:
            self.say(problem.describe())
        self.say(message)
        if self.on_fail is not None:
            self.on_fail(message)
        if self.json:
            self.emit(ClassRun(command=self.command, exit_code=code, out=self.out, error=message,
                               warnings=self.warnings, problems=problems or []))
        return code

    def finish(self, run: ClassRun) -> int:
        """A run that did something: with --json print `run` (with the warnings said); return its exit code."""
        run.warnings = self.warnings + run.warnings
        if self.json:
            self.emit(run)
        return run.exit_code

    def emit(self, run: ClassRun) -> None:
        """Print `run` as indented JSON on stdout."""
        print(run.model_dump_json(indent=2))
        sys.stdout.flush()


def files_shown(paths: dict[str, Path]) -> dict[str, str]:
    """{kind: path} as strings, for ClassRun.files."""
    return {kind: str(path) for kind, path in paths.items()}
