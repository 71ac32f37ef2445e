"""Every file `grade batch` and `grade merge` write into their output folder, in one table (OUTPUTS), and the one
function that writes them (write_outputs) from one settled value (Settled: the gradebook, the shard's suffix of
the names, and on Gradescope's route what results.json says).

When each file is written (Output.when):
- as each row lands: the results file, appended by grader.batch.gradebook.ResultStore (one line per row, flushed
  and fsync'd, the file locked; never rewritten: a rerun and `grade merge` read it), and the student's report
  (write_report: the table's per-student files for one row), ready to send back at once;
- at the end (write_outputs), once every row there will be is known: the gradebook's files, every student's report
  again (a resumed row's report names its file as found now), the class page, and on Gradescope's route
  results.json; results.json also on every exit of that route where nothing was graded (Settled without a book).
Every file but the results file is written whole through grader.output.student_files.write_atomic (a temporary
file of a name no other writer uses, fsync'd, renamed over the old one): a reader sees the old file or the new
one, and two merges into one folder never crash each other. What each file holds, for the instructor:
docs/batch.md ("Outputs"), whose list is markdown_table() of OUTPUTS (tests/test_batch_outputs.py checks).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grader.batch import gradebook as gb
from grader.batch.classpage import class_page
from grader.output.gradescope import gradescope_not_graded, gradescope_refusal, gradescope_results
from grader.output.gradescope_export import Submitter
from grader.output.report import GradeReport
from grader.output.student_files import REPORTS_DIR, StudentReport, report_stem, report_text, write_atomic

BATCH, MERGE = "batch", "merge"


@dataclass(frozen=True)
class Settled:
    """What the files are written from, once nothing more will change: `book`, the gradebook of every row there is
    (None where nothing was graded: a Gradescope run that stopped first); `suffix`, the shard's part of the names
    (".shard-K-of-N"; "" without --shard and for a merge); `gradescope`, whether this is Gradescope's route (one
    submission: results.json too); `not_graded`, what results.json says when the book holds no graded row (the
    whole output line, as the student reads it); `refused`, what it says when the submission itself is refused
    (not one .cu file: gradescope_refusal)."""

    book: gb.Gradebook | None = None
    suffix: str = ""
    gradescope: bool = False
    not_graded: str = ""
    refused: str = ""


@dataclass(frozen=True)
class Output:
    """One file of the table: `name` in the output folder ({suffix}: Settled.suffix; {stem}: a student's report name,
    grader.output.student_files.report_stem), `kind` (its key in write_outputs' answer: the summary's lines, the
    --json document's `files`; the per-student files answer with their folder), `form` (its format), `when` and
    `content` (docs/batch.md's words), the commands that write it (`by`), whether a settled value wants it
    (`wanted`), and its text: `text` of the settled value for a file of the class, `student` of a StudentReport for
    a file per student, neither for the results file (appended row by row by ResultStore)."""

    name: str
    kind: str
    form: str
    when: str
    content: str
    by: tuple[str, ...] = (BATCH, MERGE)
    wanted: Callable[[Settled], bool] = lambda s: s.book is not None  # a results file is there when a book is
    text: Callable[[Settled], str] | None = None
    student: Callable[[StudentReport], str] | None = None
    encoding: str = "utf-8"

    def file(self, suffix: str = "", stem: str = "") -> str:
        """The file's path relative to the output folder, with `/` ("reports/alice.txt", "index.shard-1-of-2.html")."""
        return self.name.format(suffix=suffix, stem=stem)


def gradescope_answer(settled: Settled) -> str:
    """results.json (grader.output.gradescope), indented JSON: the refusal when `settled.refused`, else the results of
    the book's one row when it has a report (execution_time: the batch's wall time for it), else "not graded" with
    `settled.not_graded`."""
    row = settled.book.rows[0] if settled.book is not None and settled.book.rows else None
    if settled.refused:
        data = gradescope_refusal(settled.refused)
    elif row is not None and row.report is not None:
        data = gradescope_results(row.report, execution_time=row.phases.get("wall", row.phases.get("total")))
    else:
        data = gradescope_not_graded(settled.not_graded)
    return json.dumps(data, indent=2) + "\n"


def _book(settled: Settled) -> gb.Gradebook:
    assert settled.book is not None  # Output.wanted: the book's files are written only with a book
    return settled.book


CSV = "CSV (UTF-8 with a byte order mark)"
OUTPUTS: tuple[Output, ...] = (
    Output("results{suffix}.jsonl", "results", "JSON lines (one `BatchResult` a line)", "as each row lands",
           "one row per submission, appended (flush + fsync) the moment it is known, and what a rerun resumes from "
           "and `grade merge` reads; its `path` is relative to the class folder, `shard` the `--shard` that graded "
           "it, `remarks` what was found in the submission and not used", by=(BATCH,)),
    Output("gradebook{suffix}.csv", "csv", CSV, "at the end",
           "`id, path, verdict, fraction, flags, error, reason, clocks, names, emails, sids, report`: ready for a "
           "spreadsheet or LMS import (cells a spreadsheet would read as a formula start with `'`; names, emails and "
           "sids from a Gradescope export, `; ` between a group's members; report: the text report's path)",
           text=lambda s: gb.gradebook_csv(_book(s).rows), encoding=gb.CSV_ENCODING),
    Output("gradebook{suffix}.json", "json", "JSON (`Gradebook`)", "at the end",
           "settings, counts per verdict, the copy floor seen, every row with its full `GradeReport` and submitters, "
           "`reports` (each id's report file) and `shared` (the students on more than one submission)",
           text=lambda s: _book(s).model_dump_json(indent=2) + "\n"),
    Output("summary{suffix}.md", "summary", "Markdown", "at the end",
           "counts per verdict, a text histogram of fractions (equal bins of 0.05, a line where silver (0.75) and "
           "gold (0.90) begin, the last bin 1.00 and above), the floor bandwidth and card, a short list to look at "
           "(errors of the input or of the grader, busy rows, flags and borderline, a metadata file inside a "
           "submission; the students' own fails and errors are counted, their reports say why), the students on "
           "more than one submission (below), the ids whose files are identical",
           text=lambda s: gb.summary_markdown(_book(s))),
    Output("scores{suffix}.csv", "scores", CSV, "at the end",
           "`Email, Score, id, verdict, Name, SID, path`: the Gradescope score out of 10 of each row, for "
           "Gradescope's score import (see [Gradescope](#gradescope)); empty where nothing was graded; one line per "
           "submitter of a Gradescope export (a group gets one each), else the id as Email when it is an email "
           "address; one line per student (below)",
           text=lambda s: gb.scores_csv(_book(s).rows), encoding=gb.CSV_ENCODING),
    Output(REPORTS_DIR + "/{stem}.json", "reports", "JSON (`StudentReport`)", "as each row lands, and again at the end",
           "each student's report as data: the id, the submitters and the `GradeReport` as `grade FILE --json` "
           "prints it ([report file names](#report-file-names); the shards share `reports/`)",
           student=lambda r: r.model_dump_json(indent=2) + "\n"),
    Output(REPORTS_DIR + "/{stem}.txt", "reports", "text", "as each row lands, and again at the end",
           "each student's report, ready to send back: exactly what `grade FILE` prints for that submission (a "
           "Gradescope export adds a first line, \"Submitted by: ...\")",
           student=lambda r: report_text(r.report, r.submitters)),
    Output("index{suffix}.html", "page", "HTML (one self-contained file)", "at the end",
           "the class page ([below](#the-class-page)): one file to open in any browser, offline",
           text=lambda s: class_page(_book(s))),
    Output("results.json", "gradescope", "JSON (Gradescope's results format)",
           "at the end, with `--format gradescope`; also on its every exit where nothing was graded",
           "what Gradescope shows the student: the score out of 10, the tests and the leaderboard "
           "([Gradescope](#gradescope)); \"not graded\" with the reason where nothing could be graded",
           by=(BATCH,), wanted=lambda s: s.gradescope, text=gradescope_answer),
)
"""Every file `grade batch` and `grade merge` write, in the order write_outputs writes them."""


def _write(path: Path, text: str, encoding: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text, encoding)
    return path


def _students(book: gb.Gradebook) -> list[StudentReport]:
    """The report of every row of `book` that has one (a row always has one but in a hand-made gradebook)."""
    return [StudentReport(id=r.id, submitters=r.submitters, submitted_at=r.submitted_at, report=r.report)
            for r in book.rows if r.report is not None]


def write_outputs(out: Path, settled: Settled) -> dict[str, Path]:
    """Write every file of OUTPUTS that `settled` wants (Output.wanted; the results file is ResultStore's) into the
    folder `out` (made when missing), in the table's order, each through write_atomic; return {kind: path} in that
    order (the per-student files: their folder, also when no row has a report). Raises OSError when a file cannot
    be written (those before it are written)."""
    out = Path(out)
    written: dict[str, Path] = {}
    for o in OUTPUTS:
        if not o.wanted(settled) or (o.text is None and o.student is None):
            continue
        if o.text is not None:
            written[o.kind] = _write(out / o.file(settled.suffix), o.text(settled), o.encoding)
            continue
        for student in _students(_book(settled)):
            _write(out / o.file(stem=report_stem(student.id)), o.student(student), o.encoding)
        written[o.kind] = out / Path(o.name).parent
    return written


def write_report(out: Path, id: str, report: GradeReport, submitters: list[Submitter] | None = None,
                 submitted_at: str = "") -> Path:
    """Write the per-student files of OUTPUTS (reports/<stem>.json and .txt) of the student `id` into `out` the moment
    the row lands; return the text file's path. Raises OSError when they cannot be written."""
    student = StudentReport(id=id, submitters=submitters or [], submitted_at=submitted_at, report=report)
    paths = [_write(Path(out) / o.file(stem=report_stem(id)), o.student(student), o.encoding) for o in OUTPUTS
             if o.student is not None]
    return paths[-1]


def planned(command: str, settled: Settled) -> list[str]:
    """The files, relative to the output folder, that `command` (BATCH or MERGE) writes from `settled` by OUTPUTS:
    what tests/test_batch_outputs.py compares with the folder a real run leaves."""
    names = []
    for o in OUTPUTS:
        if command not in o.by or not o.wanted(settled):
            continue
        if o.student is not None:
            names += [o.file(stem=report_stem(s.id)) for s in _students(_book(settled))]
        else:
            names.append(o.file(settled.suffix))
    return names


def markdown_table() -> str:
    """docs/batch.md's list of the outputs, a markdown table: one line per file of OUTPUTS (its name with no shard
    and NAME for a student's, its format, when it is written, by `grade batch` alone where the merge does not write it,
    and what it holds)."""
    lines = ["| file | format | written | content |", "| --- | --- | --- | --- |"]
    for o in OUTPUTS:
        by = "" if o.by == (BATCH, MERGE) else f"by `grade {' and '.join(o.by)}` "
        lines.append(f"| `{o.file(suffix='', stem='NAME')}` | {o.form} | {by}{o.when} | {o.content} |")
    return "\n".join(lines)
