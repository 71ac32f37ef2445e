"""`grade merge --expect CLASS --shards N` (grader.batch.expect): a merge that knows what it should have. Rows are
written by hand as a batch's shards would (one per id, keyed by the file's sha256), so no worker runs: a shard
that never ran, a submission without a row, a row of an earlier file and a submission no longer in the class.
No GPU needed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from grader.batch import command as batch
from grader.batch import gradebook as gb
from grader.batch.discovery import shard
from grader.batch.protocol import Item
from grader.core.errors import EXIT_INCOMPLETE, EXIT_INPUT, EXIT_PASS, Stage
from grader.output.report import error_report

IDS = [f"s{i:02d}" for i in range(1, 13)]


def make_class(root: Path, ids: list[str] = IDS) -> Path:
    """A class folder of one .cu file per id (each file's bytes distinct)."""
    root.mkdir(parents=True, exist_ok=True)
    for i in ids:
        (root / f"{i}.cu").write_text(f"// {i}\n")
    return root


def row(cls: Path, id: str) -> gb.BatchResult:
    """The row a batch would write for `id` of `cls` (an error row: the verdict does not matter here)."""
    path = cls / f"{id}.cu"
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    return gb.make_result(id=id, path=str(path), key=f"key-{id}-{sha}", sha256=sha,
                          report=error_report(str(path), Stage.COMPILE, "stand-in row"), grader_version="test")


def write_shards(cls: Path, out: Path, n: int, shards: list[int] | None = None, skip: set[str] = frozenset()):
    """results.shard-K-of-N.jsonl in `out` for each K of `shards` (default all), with a row for each id of that
    shard but those in `skip`."""
    out.mkdir(parents=True, exist_ok=True)
    items = [Item(id=p.stem, path=str(p)) for p in sorted(cls.glob("*.cu"))]
    for k in shards or range(1, n + 1):
        with open(out / f"results.shard-{k}-of-{n}.jsonl", "w") as f:
            for it in shard(items, k, n):
                if it.id not in skip:
                    f.write(row(cls, it.id).model_dump_json() + "\n")


def merge(*args, capsys) -> tuple[int, str]:
    code = batch.main(["merge", *map(str, args), "--quiet"])
    return code, capsys.readouterr().err


def gradebook_ids(out: Path) -> list[str]:
    return [r["id"] for r in json.loads((out / "gradebook.json").read_text())["rows"]]


def test_a_complete_class_merges_with_exit_0(tmp_path, capsys):
    cls = make_class(tmp_path / "class")
    write_shards(cls, tmp_path / "results", 4)
    code, err = merge(tmp_path / "book", tmp_path / "results", "--expect", cls, "--shards", 4, capsys=capsys)
    assert (code, err) == (EXIT_PASS, "")
    assert gradebook_ids(tmp_path / "book") == IDS
    settings = json.loads((tmp_path / "book" / "gradebook.json").read_text())["settings"]
    assert settings["complete"] is True and settings["expected"] == 12 and settings["missing"] == []


def test_a_lost_shard_fails_naming_its_submissions(tmp_path, capsys):
    """An array submitted 0-3 instead of 1-4: shard 4 never ran. Without --expect the merge cannot know."""
    cls = make_class(tmp_path / "class")
    write_shards(cls, tmp_path / "results", 4, shards=[1, 2, 3])
    assert merge(tmp_path / "book", tmp_path / "results", capsys=capsys) == (EXIT_PASS, "")
    code, err = merge(tmp_path / "book", tmp_path / "results", "--expect", cls, "--shards", 4, capsys=capsys)
    assert code == EXIT_INCOMPLETE
    assert "shard 4 of 4 has no results file (results.shard-4-of-4.jsonl)" in err
    assert "3 of 12 submission(s) have no row: shard 4: s04, s08, s12" in err
    assert "run shard(s) 4 of 4 again" in err
    assert gradebook_ids(tmp_path / "book") == [i for i in IDS if i not in ("s04", "s08", "s12")]  # still written
    settings = json.loads((tmp_path / "book" / "gradebook.json").read_text())["settings"]
    assert settings["complete"] is False and settings["missing"] == ["s04", "s08", "s12"]
    assert settings["lost_shards"] == [4]


def test_a_task_cut_short_fails_naming_the_rows_it_lacks(tmp_path, capsys):
    """A cancelled task left its file with some rows: --shards alone is satisfied, --expect is not."""
    cls = make_class(tmp_path / "class")
    write_shards(cls, tmp_path / "results", 4, skip={"s06", "s10"})
    code, err = merge(tmp_path / "book", tmp_path / "results", "--shards", 4, capsys=capsys)
    assert (code, err) == (EXIT_PASS, "")
    code, err = merge(tmp_path / "book", tmp_path / "results", "--expect", cls, "--shards", 4, capsys=capsys)
    assert code == EXIT_INCOMPLETE
    assert "2 of 12 submission(s) have no row: shard 2: s06, s10" in err and "shard(s) 2 of 4" in err
    assert "no results file" not in err


def test_without_shards_the_missing_are_named_without_them(tmp_path, capsys):
    cls = make_class(tmp_path / "class")
    write_shards(cls, tmp_path / "results", 4, skip={"s01"})
    code, err = merge(tmp_path / "book", tmp_path / "results", "--expect", cls, capsys=capsys)
    assert code == EXIT_INCOMPLETE
    assert "1 of 12 submission(s) have no row: s01" in err and "run the batch again" in err


def test_rows_of_submissions_no_longer_in_the_class_are_dropped_and_named(tmp_path, capsys):
    cls = make_class(tmp_path / "class")
    write_shards(cls, tmp_path / "results", 4)
    (cls / "s07.cu").unlink()
    code, err = merge(tmp_path / "book", tmp_path / "results", "--expect", cls, "--shards", 4, capsys=capsys)
    assert code == EXIT_PASS
    assert "dropped 1 row(s) of submissions no longer in the class: s07" in err
    assert "s07" not in gradebook_ids(tmp_path / "book") and len(gradebook_ids(tmp_path / "book")) == 11
    assert json.loads((tmp_path / "book" / "gradebook.json").read_text())["settings"]["dropped"] == ["s07"]


def test_a_row_of_an_earlier_file_is_stale(tmp_path, capsys):
    """A student handed in again after the batch: the row graded other bytes than the class holds."""
    cls = make_class(tmp_path / "class")
    write_shards(cls, tmp_path / "results", 4)
    (cls / "s03.cu").write_text("// s03, handed in again\n")
    code, err = merge(tmp_path / "book", tmp_path / "results", "--expect", cls, "--shards", 4, capsys=capsys)
    assert code == EXIT_INCOMPLETE
    assert "1 row(s) graded an earlier file than the class holds now: shard 3: s03" in err


def test_results_and_out_inside_the_class_folder_are_no_students(tmp_path, capsys):
    """`grade batch class/ --out class/results` leaves its results folder out of the class; so does the merge's
    --expect, and the merge's own OUT."""
    cls = make_class(tmp_path / "class")
    write_shards(cls, cls / "results", 2)
    code, err = merge(cls / "book", cls / "results", "--expect", cls, "--shards", 2, capsys=capsys)
    assert (code, err) == (EXIT_PASS, "")
    code, err = merge(cls / "book", cls / "results", "--expect", cls, "--shards", 2, capsys=capsys)  # book exists
    assert (code, err) == (EXIT_PASS, "")


def test_bad_expectations_are_usage_errors(tmp_path, capsys):
    cls = make_class(tmp_path / "class")
    write_shards(cls, tmp_path / "results", 2)
    code, err = merge(tmp_path / "book", tmp_path / "results", "--expect", tmp_path / "nope", capsys=capsys)
    assert code == EXIT_INPUT and "--expect" in err and "no such file or folder" in err
    assert not (tmp_path / "book").exists()
    with pytest.raises(SystemExit) as stop:
        batch.main(["merge", str(tmp_path / "book"), str(tmp_path / "results"), "--shards", "0"])
    assert stop.value.code == EXIT_INPUT
    assert "whole number >= 1" in capsys.readouterr().err


def test_many_missing_are_cut_after_twenty(tmp_path, capsys):
    ids = [f"p{i:03d}" for i in range(30)]
    cls = make_class(tmp_path / "class", ids)
    write_shards(cls, tmp_path / "results", 2, shards=[1])
    code, err = merge(tmp_path / "book", tmp_path / "results", "--expect", cls, capsys=capsys)
    assert code == EXIT_INCOMPLETE and "15 of 30" in err and "p029" in err
    code, err = merge(tmp_path / "book", tmp_path / "results", "--expect", cls, "--shards", 2, capsys=capsys)
    assert "shard 2: p001, p003" in err
    write_shards(cls, tmp_path / "r2", 1, skip=set(ids))
    (tmp_path / "r2" / "results.shard-1-of-1.jsonl").write_text(row(cls, "p000").model_dump_json() + "\n")
    code, err = merge(tmp_path / "book", tmp_path / "r2", "--expect", cls, capsys=capsys)
    assert "29 of 30" in err and "and 9 more" in err


def test_json_reports_what_the_check_found(tmp_path, capsys):
    """`grade merge --json`: one document on stdout with the exit code, the rows merged and `expected` (what
    --expect and --shards found); the lines of stderr are its warnings."""
    cls = make_class(tmp_path / "class")
    write_shards(cls, tmp_path / "results", 4, shards=[1, 2, 3])
    code = batch.main(["merge", str(tmp_path / "book"), str(tmp_path / "results"), "--expect", str(cls),
                       "--shards", "4", "--json"])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert code == doc["exit_code"] == EXIT_INCOMPLETE
    assert doc["complete"] is False and doc["submissions"] == 9 and doc["left"] == 3
    assert doc["expected"] == {"expect": [str(cls)], "expected": 12, "shards": 4, "complete": False,
                               "missing": ["s04", "s08", "s12"], "stale": [], "lost_shards": [4], "dropped": []}
    assert any("shard 4 of 4 has no results file" in w for w in doc["warnings"]) and "shard 4 of 4" in err
    assert (tmp_path / "book" / "gradebook.json").is_file() and doc["files"]["json"].endswith("gradebook.json")
    write_shards(cls, tmp_path / "results", 4)
    code = batch.main(["merge", str(tmp_path / "book"), str(tmp_path / "results"), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert (code, doc["complete"], doc["expected"], doc["submissions"]) == (EXIT_PASS, True, None, 12)


def test_a_torn_row_stops_the_merge_before_the_check_and_accepted_it_is_a_missing_submission(tmp_path, capsys):
    """A shard's last row cut short (a kill while it was written): the merge writes nothing (exit 2, the file and
    line named); with --accept-problems it writes the gradebook of the rows there are, and --expect names the
    student the torn row stood for (exit 4)."""
    cls = make_class(tmp_path / "class")
    write_shards(cls, tmp_path / "results", 4)
    last = tmp_path / "results" / "results.shard-2-of-4.jsonl"
    lines = last.read_text().splitlines()
    last.write_text("\n".join(lines[:-1] + [lines[-1][:60]]) + "\n")  # s10's row torn
    code, err = merge(tmp_path / "book", tmp_path / "results", "--expect", cls, "--shards", 4, capsys=capsys)
    assert code == EXIT_INPUT and f"{last}:3: torn" in err and "nothing was written" in err
    assert not (tmp_path / "book").exists()
    code, err = merge(tmp_path / "book", tmp_path / "results", "--expect", cls, "--shards", 4, "--accept-problems",
                      capsys=capsys)
    assert code == EXIT_INCOMPLETE and "accepted:" in err
    assert "1 of 12 submission(s) have no row: shard 2: s10" in err and "run shard(s) 2 of 4 again" in err
    settings = json.loads((tmp_path / "book" / "gradebook.json").read_text())["settings"]
    assert settings["missing"] == ["s10"] and [p["kind"] for p in settings["problems_accepted"]] == ["torn"]


def test_the_class_given_as_its_folders_entries_gives_the_same_ids(tmp_path, capsys):
    """`--expect class/*` (as `grade batch class/*` was run) finds the ids `--expect class` finds."""
    cls = make_class(tmp_path / "class", IDS[:4])
    (cls / "s05").mkdir()
    (cls / "s05" / "kernel.cu").write_text("// s05\n")
    write_shards(cls, tmp_path / "results", 1)
    code, err = merge(tmp_path / "book", tmp_path / "results", "--expect", cls, capsys=capsys)
    assert code == EXIT_INCOMPLETE and "1 of 5 submission(s) have no row: s05" in err
    entries = [a for p in sorted(cls.iterdir()) for a in ("--expect", p)]
    code, err = merge(tmp_path / "book", tmp_path / "results", *entries, capsys=capsys)
    assert code == EXIT_INCOMPLETE and "1 of 5 submission(s) have no row: s05" in err
