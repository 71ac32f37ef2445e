"""Gradescope's "Export Submissions" (grader.output.gradescope_export): the metadata read safely, and a batch on an
export folder whose names and emails reach the gradebook, scores.csv (one line per submitter) and the reports.

The metadata below has the layout Gradescope writes (Ruby symbols as keys, quoted sids, a timestamp, nested
results and history); the people in it are made up."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.core.errors import InputError
from grader.output import gradescope_export as gx
from grader.output.student_files import report_file

ROOT = Path(__file__).resolve().parent.parent
REFUSED_INCLUDE = ('#include "/etc/passwd"\n'
                   "__global__ void biasGeluFused(const float* x, const float* b, float* o, size_t c) {}\n")
METADATA = """---
submission_100001:
  :submitters:
  - :name: Ada Lovelace
    :sid: '0012345'
    :email: ada@example.edu
  :created_at: 2026-11-30 22:45:14.344165000 Z
  :score: 0.0
  :status: processed
  :results:
    score: 0.0
    tests: []
    output: 'Earlier run: no GPU'
    extra_data:
    leaderboard: []
    execution_time:
  :history: []
submission_100002:
  :submitters:
  - :name: Grace Hopper
    :sid: '0012346'
    :email: grace@example.edu
  - :name: "Zo\\u00eb \\"Z\\" Çelik"
    :sid: '0099'
    :email: zoe@example.edu
  :created_at: 2026-12-01 05:25:21.716840000 Z
  :score: 8.0
  :status: processed
  :results:
    output: |-
      line one
      :submitters: not a key here
  :history:
  - :submitters: []
    :created_at: 2026-11-29 07:30:05.262325000 Z
    :id: 100000
"""


def test_the_export_metadata_is_read_as_gradescope_writes_it():
    entries = gx.parse_metadata(METADATA)
    assert sorted(entries) == ["submission_100001", "submission_100002"]
    ada = entries["submission_100001"]
    assert ada.submitters == [gx.Submitter(name="Ada Lovelace", email="ada@example.edu", sid="0012345")]
    assert ada.created_at == "2026-11-30 22:45:14.344165000 Z"
    group = entries["submission_100002"].submitters
    assert [s.email for s in group] == ["grace@example.edu", "zoe@example.edu"]
    assert group[1].name == 'Zoë "Z" Çelik' and group[1].sid == "0099"


def test_no_implicit_types_and_no_objects():
    text = ("s1:\n  :submitters:\n  - :name: No\n    :sid: 0012\n    :email: 1e3\n"
            "s2:\n  :submitters:\n  - !ruby/object:Submitter\n    :name: !!python/object/apply:os.system ['echo x']\n"
            "    :email: !binary |-\n      ZXZlQGV4YW1wbGUuZWR1\n")
    entries = gx.parse_metadata(text)
    assert entries["s1"].submitters == [gx.Submitter(name="No", sid="0012", email="1e3")]  # strings, as written
    evil = entries["s2"].submitters[0]
    assert evil.email == "eve@example.edu" and evil.name == ""  # a tag gives its plain value: never a call


@pytest.mark.parametrize("text, words", [("[", "at line 1"), ("- a\n- b\n", "expected a mapping"),
                                         ("[" * 5000, "not readable"), ("a: [1\n", "not readable")])
def test_metadata_that_is_not_the_export_s_is_refused_with_the_reason(text, words):
    with pytest.raises(InputError, match=words):
        gx.parse_metadata(text)


def test_hostile_fields_are_escaped_and_cut():
    text = "s1:\n  :submitters:\n  - :name: \"\\e[31mred\\nline\"\n    :email: \"" + "x" * 500 + "\"\n"
    who = gx.parse_metadata(text)["s1"].submitters[0]
    assert who.name == "\\x1b[31mred\\nline" and len(who.email) == gx.MAX_FIELD_CHARS


def test_the_file_is_read_only_up_to_its_cap_and_never_through_a_link(tmp_path, monkeypatch):
    (tmp_path / gx.METADATA_NAME).write_text("a: b\n" * 100)
    monkeypatch.setattr(gx, "MAX_METADATA_BYTES", 64)
    with pytest.raises(InputError, match="over 0 MiB"):
        gx.read_metadata(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / gx.METADATA_NAME).symlink_to(tmp_path / gx.METADATA_NAME)
    with pytest.raises(InputError, match="a link is not followed"):
        gx.read_metadata(other)
    assert gx.read_metadata(tmp_path / "nothing") is None


def export(tmp_path: Path) -> Path:
    folder = tmp_path / "assignment_7_export"
    for sub in ("submission_100001", "submission_100002", "submission_100003"):
        (folder / sub).mkdir(parents=True)
        (folder / sub / "kernel.cu").write_text(REFUSED_INCLUDE + f"// {sub}\n")
    (folder / gx.METADATA_NAME).write_text(METADATA)
    return folder


def test_a_batch_on_an_export_puts_every_submitter_in_scores_gradebook_and_reports(tmp_path):
    folder = export(tmp_path)
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "grader.cli", "batch", str(folder), "--out", str(out), "--quiet"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode in (0, 3), r.stderr
    with open(out / "scores.csv", newline="", encoding="utf-8-sig") as f:
        scores = list(csv.DictReader(f))
    assert [(s["Email"], s["id"], s["Name"], s["SID"]) for s in scores] == [
        ("ada@example.edu", "submission_100001", "Ada Lovelace", "0012345"),
        ("grace@example.edu", "submission_100002", "Grace Hopper", "0012346"),
        ("zoe@example.edu", "submission_100002", 'Zoë "Z" Çelik', "0099"),
        ("", "submission_100003", "", "")]  # a folder the metadata does not name keeps its row
    assert all(s["Score"] == "0" for s in scores)  # refused before compiling: no point, but graded
    with open(out / "gradebook.csv", newline="", encoding="utf-8-sig") as f:
        book = {row["id"]: row for row in csv.DictReader(f)}
    assert book["submission_100002"]["emails"] == "grace@example.edu; zoe@example.edu"
    assert book["submission_100002"]["sids"] == "0012346; 0099"
    text = (out / report_file("submission_100002")).read_text(encoding="utf-8")
    assert text.startswith("Submitted by: Grace Hopper <grace@example.edu> (sid 0012346); Zoë")
    doc = json.loads((out / "reports" / "submission_100001.json").read_text())
    assert doc["submitters"][0]["email"] == "ada@example.edu" and doc["submitted_at"].startswith("2026-11-30")
    settings = json.loads((out / "gradebook.json").read_text())["settings"]
    assert list(settings["gradescope_export"].values()) == [{"entries": 2, "named": 2, "submitters": 3}]
    assert "ada@example.edu" in (out / "index.html").read_text(encoding="utf-8")


def test_a_rerun_keeps_its_rows_and_takes_the_names_the_metadata_gives_now(tmp_path):
    folder = export(tmp_path)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "grader.cli", "batch", str(folder), "--out", str(out), "--quiet"]
    subprocess.run(cmd, capture_output=True, timeout=300, cwd=ROOT)
    (folder / gx.METADATA_NAME).write_text(METADATA.replace("ada@example.edu", "ada@new.example.edu"))
    subprocess.run(cmd, capture_output=True, timeout=300, cwd=ROOT)
    assert len((out / "results.jsonl").read_text().splitlines()) == 3  # nothing graded again
    assert "ada@new.example.edu" in (out / "scores.csv").read_text(encoding="utf-8-sig")


def test_a_broken_metadata_file_stops_the_batch_before_anything_is_graded(tmp_path):
    folder = export(tmp_path)
    (folder / gx.METADATA_NAME).write_text("submission_100001: [\n")
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "grader.cli", "batch", str(folder), "--out", str(out)],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 2 and "submission_metadata.yml: not readable" in r.stderr
    assert "at line 2" in r.stderr and "add --no-metadata to grade without names" in r.stderr
    assert not (out / "results.jsonl").exists()
    r = subprocess.run([sys.executable, "-m", "grader.cli", "batch", str(folder), "--out", str(out), "--quiet",
                        "--no-metadata"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode in (0, 3) and "not read (--no-metadata)" in r.stderr  # the class graded, without names
    assert len((out / "results.jsonl").read_text().splitlines()) == 3
    assert "@" not in (out / "scores.csv").read_text(encoding="utf-8-sig")


def test_an_export_given_as_the_current_folder_is_read_too(tmp_path):
    folder = export(tmp_path)
    r = subprocess.run([sys.executable, "-m", "grader.cli", "batch", ".", "--out", str(tmp_path / "out"), "--quiet"],
                       capture_output=True, text=True, timeout=300, cwd=folder,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode in (0, 3), r.stderr
    assert "grace@example.edu" in (tmp_path / "out" / "scores.csv").read_text(encoding="utf-8-sig")


def test_a_folder_named_with_a_backslash_gets_its_submitters(tmp_path):
    from grader.batch import discovery

    # the batch's id doubles the backslash (grader.core.text.name_text); the metadata's folder names are escaped the
    # same way, so the folder and its entry still meet
    folder = tmp_path / "export"
    (folder / "sub\\mission_1").mkdir(parents=True)
    (folder / "sub\\mission_1" / "k.cu").write_text(REFUSED_INCLUDE)
    (folder / gx.METADATA_NAME).write_text("'sub\\mission_1':\n  :submitters:\n  - :email: one@example.edu\n")
    found = discovery.find([str(folder)])
    discovery.name_submitters(found)
    assert [(it.id, [s.email for s in it.submitters]) for it in found.items] == [("sub\\\\mission_1",
                                                                                   ["one@example.edu"])]
