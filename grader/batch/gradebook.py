"""Batch outputs: one row per submission (`BatchResult`), the append-only JSON-lines store that makes a batch
resumable (`ResultStore`), the gradebook files built from the rows (CSV, JSON, markdown summary, and the
scores CSV to import into Gradescope; scores from grader.output.gradescope).

The CSV files are UTF-8 with a byte order mark, so a spreadsheet shows non-ASCII names right. `fcntl` (POSIX
only) is imported by ResultStore alone; `grade batch` is Linux-only.

Everything a row holds comes from the grader's own messages (reasons, compile diagnostics about the
submission's own file, numbers); no file other than the submission is ever read, so no byte of another file
can reach these outputs. Strings a student controls (file and folder names, compiler messages) are
neutralised where a spreadsheet (a formula), a terminal or a markdown renderer (grader.core.text) would
interpret them.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
import os
import re
import statistics
from collections import Counter
from pathlib import Path

from pydantic import ValidationError
from tabulate import tabulate

from grader.batch import people
from grader.core import exercise
from grader.core.model import ReportModel
from grader.core.text import markdown_cell
from grader.output.gradescope import gradescope_score
from grader.output.gradescope_export import Submitter
from grader.output.report import GradeReport, Verdict
from grader.output.student_files import report_file, write_atomic
from grader.source.claims import NOTE_KINDS

RESULT_SCHEMA_VERSION = 1
VERDICTS: tuple[str, ...] = ("gold", "silver", "fail", "error", "no-gpu", "busy")
MAX_DETAILS_CHARS = 4000
"""Cap on a row's `details` (a compile error's diagnostics, both parameter lists)."""
RESULTS_GLOB = "results*.jsonl"
"""Results files in an output folder: results.jsonl and each shard's results.shard-K-of-N.jsonl."""
CSV_COLUMNS = ("id", "path", "verdict", "fraction", "flags", "error", "reason", "clocks", "names", "emails", "sids",
               "report")
"""gradebook.csv's columns: path is the submission's file relative to the class folder (what the id stands for);
names, emails and sids are a Gradescope export's submitters ('; ' between the members of a group), report the
student's text report (grader.output.student_files)."""
SCORES_COLUMNS = ("Email", "Score", "id", "verdict", "Name", "SID", "path")
"""scores.csv, for Gradescope's score import: the email (a Gradescope export's submitter's, else the id when it is
an email address), the score out of 10 (grader.output.gradescope.POINTS_*; empty when not graded), the batch's id and
verdict, the submitter's name and sid, the submission's path relative to the class folder. A group submission has
one line per submitter; a student on more than one submission one line (grader.batch.people.KEEP_RULE)."""
CSV_ENCODING = "utf-8-sig"
"""UTF-8 with a byte order mark: spreadsheets read the file as UTF-8 (names such as Zoë or 李) instead of the
system's legacy code page."""
BIN_WIDTH = 0.05
"""Width of the fraction histogram's bins (summary.md, the class page): 0.00-0.05, ..., 0.95-1.00, then one bin
for 1.00 and above. The grade thresholds (silver 0.75, gold 0.90) are edges, so no bin mixes two verdicts."""
BINS = round(1 / BIN_WIDTH)
LOOK_STAGES = ("input", "setup", "grader", "install")
"""Error stages that summary.md's "To look at" lists: the input could not be read, or the grader failed (not the
student's code)."""


class BatchResult(ReportModel):
    """One submission's outcome in a batch: one JSON line of results.jsonl, one row of the gradebook.

    id: the student (file stem or folder name); path: the submission's file relative to its class folder (never a
    path of the grading machine); shard: "K/N" of the `--shard` that graded it (None: no shard, or a row written
    before shards were recorded); remarks: what the batch found in the submission and did not use (a metadata
    file inside it: grader.batch.discovery); sha256: of its bytes
    (None when it could not be read); key: the resume key (content hash + grader settings, see
    grader.batch.command.result_key); verdict, reason, stage and details as in GradeReport, plus the verdicts a batch
    adds for a process it had to stop (error, with stage "compile" or "run" and the limit in the reason);
    error: the reason when verdict is error, else ""; fraction: GB/s over the copy floor's (None if not
    timed); flags: short names of the report's flags ("borderline" added when the verdict is borderline);
    notes: the kinds of the report's notes (grader.source.claims.NOTE_KINDS: no table row, no sentence), counted once
    in summary.md rather than flagged on every row;
    gpu: the card's name; device: the CUDA_VISIBLE_DEVICES entry the worker was pinned to; floor_gbs and
    floor_version: the copy floor measured in the submission's process; phases: seconds spent per phase
    (start: process start and imports, read, context, compile, verify, time, other, total: inside the worker from
    job to result; wall: the batch's view from sending the job to receiving the result, including a wait for
    a worker still starting); finished: UTC time the row was written.
    """

    schema_version: int = RESULT_SCHEMA_VERSION
    id: str
    path: str
    shard: str | None = None
    sha256: str | None = None
    key: str
    verdict: Verdict
    reason: str
    error: str = ""
    stage: str | None = None
    details: str = ""
    fraction: float | None = None
    flags: list[str] = []
    notes: list[str] = []
    gpu: str | None = None
    device: str | None = None
    floor_gbs: float | None = None
    floor_version: str | None = None
    clocks: str = ""
    submitters: list[Submitter] = []
    submitted_at: str = ""
    remarks: list[str] = []
    phases: dict[str, float] = {}
    grader_version: str = ""
    finished: str = ""
    report: GradeReport | None = None


def make_result(*, id: str, path: str, key: str, sha256: str | None, report: GradeReport,
                grader_version: str, device: str | None = None, phases: dict[str, float] | None = None,
                submitters: list[Submitter] | None = None, submitted_at: str = "", shard: str | None = None,
                remarks: list[str] | None = None) -> BatchResult:
    """The row for one submission from its GradeReport (real, or built by the batch for a stopped process);
    submitters and submitted_at from a Gradescope export (grader.output.gradescope_export), when there is one."""
    return BatchResult(
        id=id, path=path, shard=shard, sha256=sha256, key=key, device=device, phases=phases or {},
        submitters=submitters or [], submitted_at=submitted_at, remarks=remarks or [],
        grader_version=grader_version, finished=_utc_now(), report=report, **from_report(report))


def from_report(report: GradeReport) -> dict[str, object]:
    """The fields of a row that its report decides (DERIVED: verdict, reason, error, stage, details, fraction,
    flags, notes, gpu, floor_gbs, floor_version, clocks), as make_result sets them."""
    flags = [f.kind for f in report.flags if f.kind not in NOTE_KINDS] + (["borderline"] if report.borderline else [])
    details = report.details
    if len(details) > MAX_DETAILS_CHARS:
        details = details[:MAX_DETAILS_CHARS] + "\n[cut]"
    return {"verdict": report.verdict, "reason": report.reason, "error": _error_text(report), "stage": report.stage,
            "details": details, "fraction": report.fraction, "flags": flags,
            "notes": [f.kind for f in report.flags if f.kind in NOTE_KINDS],
            "gpu": report.gpu.name if report.gpu else None, "floor_gbs": report.floor_gbs,
            "floor_version": report.floor_version,
            "clocks": report.clocks.summary() if report.clocks is not None else ""}


DERIVED = ("verdict", "reason", "error", "stage", "details", "fraction", "flags", "notes", "gpu", "floor_gbs",
           "floor_version", "clocks")
"""A row's fields that its report decides (from_report): a row is read with these taken from its report."""


def checked(row: BatchResult) -> tuple[BatchResult, list[str]]:
    """`row` with the fields its report decides taken from the report (from_report), and the fields where the row
    said otherwise ("verdict: the row says gold, its report no-gpu"), compared as they are written in JSON (so a
    NaN fraction is itself). A row without a report is returned as it is, with the problem "no report"."""
    if row.report is None:
        return row, ["no report: the row cannot be checked, and its verdict cannot be trusted"]
    fixed = row.model_copy(update=from_report(row.report))
    said, true = row.model_dump(mode="json", include=set(DERIVED)), fixed.model_dump(mode="json", include=set(DERIVED))
    return fixed, [f"{k}: the row says {_short(said[k])}, its report {_short(true[k])}" for k in DERIVED
                   if said[k] != true[k]]


def _short(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _utc_now() -> str:
    """The time now in UTC, ISO 8601 to the second (rows' `finished`, the gradebook's `created`)."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _error_text(report: GradeReport) -> str:
    """The gradebook's error cell: the reason of an error verdict and the first line of its details (the
    first compile diagnostic, the kernel's parameter list); empty for any other verdict."""
    if report.verdict != "error":
        return ""
    first = next((ln.strip() for ln in report.details.splitlines() if ln.strip()), "")
    return f"{report.reason}: {first}" if first else report.reason


class ResultStore:
    """The append-only results file of one batch (or shard): one BatchResult per line, each written with
    flush and fsync the moment it is known, so a killed batch loses at most the submissions in flight.

    Holds an exclusive lock on the file while open: a second batch writing the same file is refused.
    Raises OSError when the file cannot be opened or is locked by another process (BlockingIOError).
    """

    def __init__(self, path: Path) -> None:
        import fcntl  # POSIX only, and only the batch needs it (module docstring)

        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a+b")
        try:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._file.close()
            raise
        self._file.seek(0, os.SEEK_END)
        if self._file.tell() > 0:  # a line torn by a kill must not swallow the next row
            self._file.seek(-1, os.SEEK_END)
            if self._file.read(1) != b"\n":
                self._file.write(b"\n")
                self._sync()

    def append(self, row: BatchResult) -> BatchResult:
        """Append one row as one line and make it durable (flush + fsync) before returning; return the row as
        that line reads back (every string escaped, grader.core.model), the row a rerun or `grade merge` sees."""
        line = row.model_dump_json()
        self._file.write(line.encode() + b"\n")
        self._sync()
        return BatchResult.model_validate_json(line)

    def _sync(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        """Close the file, releasing the lock."""
        self._file.close()


def load_rows(path: Path) -> tuple[list[BatchResult], int]:
    """All rows of a results file, in file order, and the number of lines that were not valid rows (a line
    torn by a kill, a row of another schema). A missing file gives ([], 0)."""
    rows, bad = [], 0
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return [], 0
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            row = BatchResult.model_validate_json(line)
        except (ValidationError, ValueError):
            bad += 1
            continue
        if row.schema_version != RESULT_SCHEMA_VERSION:
            bad += 1
            continue
        rows.append(row)
    return rows, bad


def load_files(paths: list[Path]) -> tuple[list[BatchResult], int]:
    """load_rows over several results files: every row in file order, and the count of lines that were not
    valid rows."""
    rows: list[BatchResult] = []
    bad = 0
    for path in paths:
        got, b = load_rows(path)
        rows.extend(got)
        bad += b
    return rows, bad


def latest_by_id(rows: list[BatchResult]) -> dict[str, BatchResult]:
    """The most recent row (by `finished`, then file order) of each id, sorted by id."""
    out: dict[str, BatchResult] = {}
    for row in rows:
        if row.id not in out or row.finished >= out[row.id].finished:
            out[row.id] = row
    return dict(sorted(out.items()))


class Gradebook(ReportModel):
    """The JSON gradebook: when and how the batch ran, counts per verdict, the copy floor(s) measured, every
    row (with its full GradeReport), `reports`: each id's text report, relative to the output folder
    (grader.output.student_files.report_file; its JSON beside it), and `shared`: the students on more than one
    submission (shared_students)."""

    schema_version: int = RESULT_SCHEMA_VERSION
    created: str
    grader_version: str
    settings: dict[str, object] = {}
    cards: list[str] = []
    counts: dict[str, int]
    floor_gbs_median: float | None = None
    floor_gbs_min: float | None = None
    floor_gbs_max: float | None = None
    rows: list[BatchResult]
    reports: dict[str, str] = {}
    shared: list[people.Shared] = []


def build_gradebook(rows: list[BatchResult], grader_version: str, settings: dict[str, object]) -> Gradebook:
    """A Gradebook of `rows` (kept in the given order)."""
    floors = [r.floor_gbs for r in rows if r.floor_gbs]
    return Gradebook(
        created=_utc_now(),
        grader_version=grader_version,
        settings=settings,
        cards=sorted({r.gpu for r in rows if r.gpu}),
        counts=verdict_counts(rows),
        floor_gbs_median=statistics.median(floors) if floors else None,
        floor_gbs_min=min(floors) if floors else None,
        floor_gbs_max=max(floors) if floors else None,
        rows=rows,
        reports={r.id: report_file(r.id) for r in rows},
        shared=shared_students(rows),
    )


def verdict_counts(rows: list[BatchResult]) -> dict[str, int]:
    """{verdict: count} with every verdict present (0 where none)."""
    c = Counter(r.verdict for r in rows)
    return {v: c.get(v, 0) for v in VERDICTS}


def counts_table(counts: dict[str, int], tablefmt: str) -> str:
    """The verdict / count table (tabulate's `tablefmt`: "github" in the summary, "simple" on a terminal)."""
    return tabulate(list(counts.items()), headers=["verdict", "count"], tablefmt=tablefmt)


def write_outputs(book: Gradebook, out_dir: Path, suffix: str = "") -> dict[str, Path]:
    """Write gradebook{suffix}.csv, gradebook{suffix}.json, summary{suffix}.md and scores{suffix}.csv under
    `out_dir`; return {"csv": path, "json": path, "summary": path, "scores": path}. Each file is written to a
    temporary name and renamed, so a reader never sees half a file. For code that holds a gradebook alone (a
    notebook, a test): `grade batch` and `grade merge` write these files, with every other, through the table of
    grader.batch.outputs, which names them the same (tests/test_batch_outputs.py compares the bytes)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"csv": out_dir / f"gradebook{suffix}.csv", "json": out_dir / f"gradebook{suffix}.json",
             "summary": out_dir / f"summary{suffix}.md", "scores": out_dir / f"scores{suffix}.csv"}
    write_atomic(paths["csv"], gradebook_csv(book.rows), CSV_ENCODING)
    write_atomic(paths["json"], book.model_dump_json(indent=2) + "\n")
    write_atomic(paths["summary"], summary_markdown(book))
    write_atomic(paths["scores"], scores_csv(book.rows), CSV_ENCODING)
    return paths


def gradebook_csv(rows: list[BatchResult]) -> str:
    """The CSV text: header CSV_COLUMNS: id, verdict, fraction, flags, error, reason, clocks (what it was timed
    at, grader.gpu.clocks.Clocks.summary; empty when not timed), the submitters' names, emails and sids, and the
    text report's path; fraction with 3 decimals (empty when not timed); flags and submitters joined with '; '.
    A cell a spreadsheet would read as a formula (starting with
    = + - @ or a control character) gets a leading apostrophe."""
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in rows:
        frac = "" if r.fraction is None else f"{r.fraction:.3f}"
        people = r.submitters
        w.writerow([_cell(r.id), _cell(r.path), r.verdict, frac, _cell("; ".join(r.flags)), _cell(r.error),
                    _cell(r.reason),
                    _cell(r.clocks), _cell("; ".join(s.name for s in people)),
                    _cell("; ".join(s.email for s in people)), _cell("; ".join(s.sid for s in people)),
                    _cell(report_file(r.id))])
    return buf.getvalue()


def scores_csv(rows: list[BatchResult]) -> str:
    """The CSV text of scores.csv (SCORES_COLUMNS), for Gradescope's score import: one line per submitter of a
    row from a Gradescope export (a group gets one each), one line per row otherwise; the score out of 10 as
    Gradescope's results.json would give it, empty for a row that was not graded (no GPU, the grader's own
    failure). A student on more than one submission gets one line (grader.batch.people.KEEP_RULE; shared_students
    lists them)."""
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(SCORES_COLUMNS)
    for r, s in people.kept_lines(people.score_lines(rows, _id_email), score_of):
        shown = "" if score_of(r) is None else f"{score_of(r):g}"
        w.writerow([_cell(s.email), shown, _cell(r.id), r.verdict, _cell(s.name), _cell(s.sid), _cell(r.path)])
    return buf.getvalue()


def score_of(row: BatchResult) -> float | None:
    """The row's score out of 10 (grader.output.gradescope.gradescope_score); None when it was not graded."""
    return gradescope_score(row.report) if row.report else None


def _id_email(row: BatchResult) -> str:
    """The id when it is an email address (a folder named by the student's email), else ""."""
    return row.id if _EMAIL.fullmatch(row.id) else ""


def shared_students(rows: list[BatchResult]) -> list[people.Shared]:
    """The students on more than one submission of `rows`, each with the id whose score scores.csv keeps
    (grader.batch.people.shared)."""
    return people.shared(people.score_lines(rows, _id_email), score_of)


def _cell(text: str) -> str:
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r", "\n") else text


_EMAIL = re.compile(r"[^@\s,;\"'<>]+@[^@\s,;\"'<>]+\.[A-Za-z]{2,}")


def fraction_bins(fractions: list[float]) -> list[int]:
    """Counts of `fractions` in BINS equal bins of BIN_WIDTH from 0 to 1, then one count for 1.0 and above
    (BINS + 1 counts; non-finite and negative values are left out)."""
    counts = [0] * (BINS + 1)
    for f in fractions:
        if math.isfinite(f) and f >= 0:
            counts[min(BINS, math.floor(f / BIN_WIDTH + 1e-9))] += 1
    return counts


def histogram(fractions: list[float], width: int = 40) -> str:
    """A text histogram of fractions (fraction_bins), one line per bin: range, count and a bar of '#' (scaled so
    the fullest bin is `width` wide), with a line marking each grade threshold where its verdict begins."""
    counts = fraction_bins(fractions)
    top = max(counts) or 1
    marks = {round(exercise.SILVER / BIN_WIDTH): f"silver from {exercise.SILVER:.2f}",
             round(exercise.GOLD / BIN_WIDTH): f"gold from {exercise.GOLD:.2f}"}
    lines = []
    for i, n in enumerate(counts):
        if i in marks:
            lines.append(f"------------ {marks[i]} ------------")
        label = f"{i * BIN_WIDTH:.2f} - {(i + 1) * BIN_WIDTH:.2f}" if i < BINS else f"{1:.2f} +     "
        bar = "#" * (round(n * width / top) if n else 0)
        lines.append(f"{label} | {n:4d} {bar}".rstrip())
    return "\n".join(lines)


def to_look_at(rows: list[BatchResult]) -> list[tuple[BatchResult, str]]:
    """The rows summary.md asks the instructor to look at, each with why: an error of the input or of the grader
    (LOOK_STAGES), a busy row (not graded: run again), a row with flags (borderline included), a row with remarks
    (a metadata file inside the submission). A plain fail or an error of the student's own code is not listed: its
    report says why."""
    out = []
    for r in rows:
        why = []
        if r.verdict == "error" and r.stage in LOOK_STAGES:
            why.append("the grader failed" if r.stage in ("grader", "install", "setup") else "input")
        if r.verdict == "busy":
            why.append("busy: not graded, run again")
        if r.flags:
            why.append("flags: " + ", ".join(r.flags))
        why += r.remarks
        if why:
            out.append((r, "; ".join(why)))
    return out


def identical_groups(rows: list[BatchResult]) -> list[list[str]]:
    """The ids of rows whose files have the same bytes (one sha256), one sorted list per sha256 shared by two
    ids or more, the groups sorted by their first id; rows without a sha256 (not read) are left out."""
    ids: dict[str, set[str]] = {}
    for r in rows:
        if r.sha256:
            ids.setdefault(r.sha256, set()).add(r.id)
    return sorted(sorted(group) for group in ids.values() if len(group) > 1)


def clocks_lines(rows: list[BatchResult]) -> list[str]:
    """summary.md's clocks: the SM and memory clocks the rows were timed at (grader.gpu.clocks), each with its count
    of rows, and the rows whose verdict was withheld for their clocks; nothing when no row was timed."""
    timed = Counter(f"SM {r.report.clocks.sm_mhz} MHz, memory {r.report.clocks.mem_mhz} MHz"
                    if r.report.clocks.known else "not known (NVML did not answer)"
                    for r in rows if r.report is not None and r.report.clocks is not None)
    if not timed:
        return []
    held = sum(1 for r in rows if r.report is not None and r.report.clocks is not None and r.report.clocks.note)
    withheld = sum(1 for r in rows if r.verdict == "busy" and r.report is not None and r.report.clocks is not None
                   and r.report.clocks.problem)
    out = ["Timed at: " + "; ".join(f"{markdown_cell(k, 80)} ({n} rows)" for k, n in timed.most_common()) + "."]
    if held:
        out.append(f"{held} rows were timed at clocks a setting of the card holds (each report says so).")
    if withheld:
        out.append(f"{withheld} rows were not graded because the clocks moved or the card slowed while timing "
                   "(busy: run the batch again).")
    return out + [""]


def _count(n: int, noun: str) -> str:
    """"1 submission", "2 submissions"."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def summary_markdown(book: Gradebook) -> str:
    """The markdown summary: counts per verdict, a histogram of fractions (equal bins, the thresholds marked), the
    copy floor and card(s), the rows that need a look (to_look_at: errors of the input or the grader, busy rows,
    flags and borderline, remarks), the students on more than one submission (with the rule that picks the score
    scores.csv keeps) and the groups of ids that handed in byte-identical files (identical_groups: for the
    instructor to look at, no verdict changed)."""
    rows = book.rows
    out = ["# Batch grading summary", "", f"{len(rows)} submissions; grader {book.grader_version}; written "
           f"{book.created}.", "", "## Verdicts", "", counts_table(book.counts, "github"), ""]
    out += _fractions_section(rows) + _floor_section(book) + clocks_lines(rows)
    missing = {kind: sum(kind in r.notes for r in rows) for kind in NOTE_KINDS}
    if any(missing.values()):
        out.append(f"Notes: {_count(missing['row-missing'], 'submission')} gave no part-3 table row and "
                   f"{missing['claim-missing']} no sentence about the copy floor (each report tells its student).")
        out.append("")
    return "\n".join(out + _look_section(rows) + _shared_section(book.shared) + _identical_section(rows))


def _fractions_section(rows: list[BatchResult]) -> list[str]:
    """The summary's histogram of the timed fractions and their median (lines)."""
    fractions = [r.fraction for r in rows if r.fraction is not None]
    out = [f"## Fraction of the copy floor ({len(fractions)} timed)", ""]
    if fractions:
        out += ["```", histogram(fractions), "```", "",
                f"Median {statistics.median(fractions):.3f}; {exercise.THRESHOLDS_TEXT}."]
    else:
        out.append("No submission was timed.")
    return out + [""]


def _floor_section(book: Gradebook) -> list[str]:
    """The summary's copy floor (median, range, fastest copy) and card(s) (lines)."""
    out = ["## Copy floor and card", ""]
    if book.floor_gbs_median is not None:
        versions = sorted({r.floor_version for r in book.rows if r.floor_version})
        out.append(f"Floor bandwidth: median {book.floor_gbs_median:.0f} GB/s over the timed submissions "
                   f"(min {book.floor_gbs_min:.0f}, max {book.floor_gbs_max:.0f}); fastest copy: "
                   f"{', '.join(versions)}. Each submission is judged against the floor measured in its own process.")
    else:
        out.append("No copy floor was measured (no submission reached timing).")
    return out + ["", f"Card: {', '.join(book.cards) if book.cards else 'none (no GPU: static checks only)'}.", ""]


def _look_section(rows: list[BatchResult]) -> list[str]:
    """The summary's rows to look at (to_look_at), and how many fails and errors of the students' own code are
    left out of it (lines)."""
    look = to_look_at(rows)
    out = ["## To look at", ""]
    if look:
        table = [[markdown_cell(r.id, 40), r.verdict, markdown_cell(r.stage or ""), markdown_cell(why, 60),
                  markdown_cell(r.reason, 160)] for r, why in look]
        out.append(tabulate(table, headers=["id", "verdict", "stage", "why", "reason"], tablefmt="github"))
    else:
        out.append("Nothing: no error of the input or the grader, no busy row, no flag.")
    listed = {r.id for r, _ in look}
    own = sum(1 for r in rows if r.verdict in ("fail", "error") and r.id not in listed)
    if own:
        out += ["", f"Not listed: {own} fails and errors of the students' own code (wrong output, too slow, compile "
                "or launch errors); each report says why (reports/, index.html)."]
    return out + [""]


def _shared_section(shared: list[people.Shared]) -> list[str]:
    """The summary's students on more than one submission (Gradebook.shared), with the rule, or a line saying
    none (lines)."""
    out = ["## Students on more than one submission", ""]
    if not shared:
        return out + ["None: no email or sid is on two submissions.", ""]
    out += [f"{len(shared)} student(s) on more than one submission; {people.KEEP_RULE}:", ""]
    return out + ["- " + markdown_cell(s.describe(), 400) for s in shared] + [""]


def _identical_section(rows: list[BatchResult]) -> list[str]:
    """The summary's groups of ids with byte-identical files (identical_groups), or a line saying none (lines)."""
    out = ["## Identical files", ""]
    groups = identical_groups(rows)
    if groups:
        out += [f"{len(groups)} group(s) of ids handed in byte-identical files (the same sha256); the verdicts "
                "are as graded, this is for you to look at:", ""]
        out += ["- " + ", ".join(markdown_cell(i, 40) for i in group) for group in groups]
    else:
        out.append("None: no two submissions have the same bytes.")
    return out + [""]
