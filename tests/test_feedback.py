"""One report per student (grader.output.student_files): the file-name rule, the text identical to `grade FILE`'s, the
reports a batch writes as each row lands and those `grade merge` writes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from class_fixture import HOSTILE, write_results
from grader.batch import gradebook as gb
from grader.output.gradescope_export import Submitter
from grader.output.report import GradeReport, render_text
from grader.output.student_files import PLAIN_MAX, StudentReport, report_file, report_stem, report_text

ROOT = Path(__file__).resolve().parent.parent
SUBS = ROOT / "submissions"
REFUSED_INCLUDE = ('#include "/etc/passwd"\n'
                   "__global__ void biasGeluFused(const float* x, const float* b, float* o, size_t c) {}\n")
SAFE_NAME = re.compile(r"[A-Za-z0-9._~@+-]+")


def grade(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


@pytest.mark.parametrize("id", ["alice", "bob.smith", "s-01", "ada@example.edu", "x~2", "a" * PLAIN_MAX])
def test_a_plain_id_is_its_own_file_name(id):
    assert report_stem(id) == id and report_file(id) == f"reports/{id}.txt"


@pytest.mark.parametrize("id", [*HOSTILE, "Alice", "con", "NUL.x", ".hidden", "-rf", "..", ".", "", "a+b", "a/b",
                                "a" * (PLAIN_MAX + 1), "\\x1b[31m", "caf\\xe9"])
def test_any_other_id_gets_safe_characters_and_a_hash(id):
    stem = report_stem(id)
    assert SAFE_NAME.fullmatch(stem) and len(stem) <= 53 and stem.count("+") == 1
    assert not stem.startswith((".", "-")) and "/" not in stem and "\\" not in stem
    assert re.fullmatch(r"[0-9a-f]{12}", stem.split("+")[1])
    assert report_stem(id) == stem  # stable: the id alone decides


def test_names_are_distinct_even_where_case_is_ignored():
    ids = [*HOSTILE, "alice", "Alice", "ALICE", "a b", "a_b", "a/b", "a\\b", "a..b", "con", "Con", "a+b", "a_b+0"]
    ids += [f"student {i}" for i in range(200)] + [f"Student_{i}" for i in range(200)]
    stems = [report_stem(i) for i in ids]
    assert len({s.lower() for s in stems}) == len(ids)


def test_a_plain_name_cannot_take_a_hashed_one():  # a student naming a file after another's report
    other = report_stem("Ada Lovelace")
    assert report_stem(other) != other and "+" in other


def test_the_text_is_grade_files_and_the_json_holds_the_report():
    report = GradeReport(file="a.cu", verdict="gold", stage="grade", reason="0.951 of the copy floor", fraction=0.951)
    assert report_text(report) == render_text(report) + "\n"
    people = [Submitter(name="Ada", email="ada@example.edu", sid="1"), Submitter(name="Bo")]
    text = report_text(report, people)
    assert text == "Submitted by: Ada <ada@example.edu> (sid 1); Bo\n" + render_text(report) + "\n"
    doc = StudentReport(id="a", submitters=people, report=report)
    back = StudentReport.model_validate_json(doc.model_dump_json())
    assert back.report == report and back.submitters == people


def test_a_batch_writes_each_report_identical_to_grade_file(tmp_path):
    cls = tmp_path / "class"
    cls.mkdir()
    (cls / "refused.cu").write_text(REFUSED_INCLUDE)
    (cls / "compile_error.cu").write_bytes((SUBS / "compile_error.cu").read_bytes())
    (cls / "Gold Kernel.cu").write_bytes((SUBS / "gold_float4.cu").read_bytes())
    out = tmp_path / "out"
    r = grade("batch", "class", "--out", out, "--quiet", "--seed", "7", cwd=tmp_path)
    assert r.returncode in (0, 3, 4), r.stderr
    book = json.loads((out / "gradebook.json").read_text())
    assert set(book["reports"]) == {"refused", "compile_error", "Gold Kernel"}
    files = sorted(p.name for p in (out / "reports").iterdir())
    assert files == sorted(f"{report_stem(i)}{s}" for i in book["reports"] for s in (".txt", ".json"))
    for row in book["rows"]:
        if row["verdict"] not in ("error", "no-gpu"):  # with a GPU, timing differs from one run to the next
            continue
        text = (out / book["reports"][row["id"]]).read_text()
        alone = grade(f"class/{row['id']}.cu", "--seed", "7", cwd=tmp_path)
        assert text == alone.stdout, row["id"]
        student = StudentReport.model_validate_json((out / "reports" / f"{report_stem(row['id'])}.json").read_text())
        assert student.id == row["id"] and render_text(student.report) + "\n" == text
    with open(out / "gradebook.csv", encoding="utf-8-sig") as f:
        assert f"reports/{report_stem('Gold Kernel')}.txt" in f.read()


def test_a_row_s_report_is_written_the_moment_the_row_lands(tmp_path, monkeypatch):
    from grader.batch import command as batch
    from grader.batch import pool

    monkeypatch.setattr(pool, "WORKER_COMMAND", [sys.executable, str(ROOT / "tests" / "fake_worker.py")])
    cls = tmp_path / "class"
    cls.mkdir()
    (cls / "a.cu").write_text("// fine\n")
    (cls / "b.cu").write_text("// fine\n")
    seen = []
    real = batch.write_report

    def spy(out, id, report, *rest):
        seen.append((id, sorted(p.name for p in (out / "reports").glob("*.txt")) if (out / "reports").exists() else []))
        return real(out, id, report, *rest)

    monkeypatch.setattr(batch, "write_report", spy)
    batch.main(["batch", str(cls), "--out", str(tmp_path / "out"), "--quiet"])
    assert seen[:2] == [("a", []), ("b", ["a.txt"])]  # b's turn finds a's report already there


def test_merge_writes_every_report_and_the_page(tmp_path):
    rows = write_results(tmp_path / "res" / "results.jsonl")
    out = tmp_path / "merged"
    r = grade("merge", out, tmp_path / "res")
    assert r.returncode == 0, r.stderr
    assert "page: " in r.stdout and (out / "index.html").is_file()
    for row in rows:
        text = (out / report_file(row.id)).read_text(encoding="utf-8")
        assert text == report_text(row.report, row.submitters), row.id
    assert len(list((out / "reports").glob("*.txt"))) == len(rows)
    book = gb.Gradebook.model_validate_json((out / "gradebook.json").read_text())
    assert book.reports == {row.id: report_file(row.id) for row in rows}
