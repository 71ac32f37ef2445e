"""Reading the results files of batches for `grade merge` and for a batch's resume: only the files a batch writes,
every line checked, nothing lost in silence.

Which files: a folder given holds the files a batch writes there, by their names (`results.jsonl`,
`results.shard-K-of-N.jsonl`: RESULTS_NAME); another `results*.jsonl` beside them (`results-old.jsonl`) is not
read, and said so. A file given by its own path is read whatever its name.

Every line is read as a row (grader.batch.gradebook.BatchResult) and checked; a line that cannot be taken as it
is becomes a RowProblem naming the file and line (grader.batch.reply):
- torn: not a whole JSON line (a write cut short by a kill). When the id can be read from what is there and a
  later line of the same file holds that id's row (the batch was run again and graded it), nothing is lost: the
  line is a note, not a problem;
- foreign: JSON that is no row of this grader's schema, or a row whose shard is not the file's (a shard's file
  copied under another shard's name);
- mismatch: a row whose verdict, stage, fraction or other field its report decides says otherwise; the row is
  taken as its report says (grader.batch.gradebook.checked);
- duplicate: an id whose row is in two files (two shards, or a shard and a whole batch, graded the same student).
Within one file the last row of an id is the one that counts (a rerun appends). Across files the latest row
(`finished`) counts: the choice `grade merge --accept-problems` makes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from grader.batch import gradebook as gb
from grader.batch.reply import RowProblem
from grader.core.text import name_text

RESULTS_NAME = re.compile(r"results(?:\.shard-(\d+)-of-(\d+))?\.jsonl")
"""The names of the results files a batch writes (grader.batch.command: results{suffix}.jsonl)."""
_TORN_ID = re.compile(rb'"id"\s*:\s*"((?:[^"\\]|\\.)*)"')


@dataclass
class Reading:
    """What read_results found: every row taken (as checked, with its file and line), the problems, and notes
    (torn lines that a later row stands for)."""

    rows: list[tuple[gb.BatchResult, Path, int]] = field(default_factory=list)
    problems: list[RowProblem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def results_files(paths: list[str]) -> tuple[list[Path], list[str], list[str]]:
    """(the results files of `paths`, each once, in order; notes on files in those folders that are not read; the
    paths that do not exist). A folder gives its files named as a batch names them (RESULTS_NAME), sorted; a file
    is itself."""
    files: list[Path] = []
    notes: list[str] = []
    missing: list[str] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            for f in sorted(p.glob(gb.RESULTS_GLOB)):
                if RESULTS_NAME.fullmatch(f.name) and f.is_file():
                    files.append(f)
                else:
                    notes.append(f"{name_text(str(f))}: not a name a batch writes (results.jsonl, "
                                 "results.shard-K-of-N.jsonl), so not read; give it as a RESULTS path to merge it")
        elif p.is_file():
            files.append(p)
        else:
            missing.append(raw)
    seen: set[Path] = set()
    unique = []
    for f in files:
        if f.resolve() not in seen:
            seen.add(f.resolve())
            unique.append(f)
    return unique, notes, missing


def file_shard(path: Path) -> str | None:
    """The shard "K/N" a results file's name says (results.shard-K-of-N.jsonl), or None."""
    m = RESULTS_NAME.fullmatch(path.name)
    return f"{m.group(1)}/{m.group(2)}" if m and m.group(1) else None


def read_results(files: list[Path]) -> Reading:
    """Every line of `files` read and checked (module docstring). Raises OSError when a file cannot be read."""
    reading = Reading()
    for f in files:
        _read_file(f, reading)
    _duplicates(reading)
    return reading


def _read_file(path: Path, reading: Reading) -> None:
    """Read one results file into `reading` (module docstring). Raises OSError."""
    shown, shard = name_text(str(path)), file_shard(path)
    torn: list[tuple[int, str]] = []
    ids_after: list[tuple[int, str]] = []
    for n, line in enumerate(path.read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError:
            found = _TORN_ID.search(line)
            torn.append((n, _torn_id(found.group(1)) if found else ""))
            continue
        problem = None
        try:
            row = gb.BatchResult.model_validate(data)
        except ValidationError as err:
            reading.problems.append(RowProblem(file=shown, line=n, kind="foreign", id=_id_of(data), message=(
                f"not a row of this grader's results ({err.error_count()} field(s) wrong or missing); a file of "
                "another tool, or of another version of the grader: leave it out of the merge")))
            continue
        if row.schema_version != gb.RESULT_SCHEMA_VERSION:
            problem = f"a row of schema {row.schema_version}, not {gb.RESULT_SCHEMA_VERSION}: another version wrote it"
        elif shard and row.shard and row.shard != shard:
            problem = (f"a row of shard {row.shard} in the file of shard {shard}: a file copied or renamed; merge "
                       "each shard's own file")
        if problem:
            reading.problems.append(RowProblem(file=shown, line=n, kind="foreign", id=row.id, message=problem))
            continue
        fixed, said = gb.checked(row)
        if said:
            reading.problems.append(RowProblem(file=shown, line=n, kind="mismatch", id=row.id, message=(
                "; ".join(said) + "; taken as its report says (a row edited by hand, or written by another "
                "tool)")))
        reading.rows.append((fixed, path, n))
        ids_after.append((n, row.id))
    for n, id in torn:
        later = any(m > n and other == id for m, other in ids_after)
        if id and later:
            reading.notes.append(f"{shown}:{n}: a torn line (a write cut short) of {id}, whose later row counts")
        else:
            who = f"the row of {id}" if id else "a row whose id cannot be read"
            reading.problems.append(RowProblem(file=shown, line=n, kind="torn", id=id, message=(
                f"{who} was cut short (a kill while it was written) and no later row stands for it: run that "
                "batch or shard again (it grades what is missing), then merge")))


def _torn_id(raw: bytes) -> str:
    """The id as a torn line spells it (a JSON string's body), or "" when it cannot be read."""
    try:
        return name_text(json.loads(b'"' + raw + b'"'))
    except ValueError:
        return ""


def _id_of(data: object) -> str:
    """The id a JSON line names, if it names one as a string."""
    return name_text(data["id"]) if isinstance(data, dict) and isinstance(data.get("id"), str) else ""


def _duplicates(reading: Reading) -> None:
    """Add a duplicate problem for each id whose last row of one file has a row in an earlier file too."""
    last: dict[str, dict[Path, tuple[gb.BatchResult, int]]] = {}
    for row, path, n in reading.rows:
        last.setdefault(row.id, {})[path] = (row, n)
    for id, by_file in last.items():
        if len(by_file) < 2:
            continue
        places = [(path, row, n) for path, (row, n) in by_file.items()]
        kept = max(places, key=lambda p: p[1].finished)
        for path, _row, n in places:
            if path is not kept[0]:
                reading.problems.append(RowProblem(file=name_text(str(path)), line=n, kind="duplicate", id=id, message=(
                    f"{id} has a row in {name_text(str(kept[0]))} too (line {kept[2]}): two batches or shards graded "
                    f"it; --accept-problems keeps the latest ({name_text(str(kept[0]))}:{kept[2]}), or leave one "
                    "file out")))


def latest(reading: Reading) -> list[gb.BatchResult]:
    """The row that counts for each id (module docstring: the last of its file; across files the latest by
    `finished`), sorted by id."""
    chosen: dict[str, gb.BatchResult] = {}
    where: dict[str, Path] = {}
    for row, path, _ in reading.rows:
        if row.id not in chosen or where[row.id] == path or row.finished >= chosen[row.id].finished:
            chosen[row.id], where[row.id] = row, path
    return [chosen[id] for id in sorted(chosen)]
