"""Issue 30: the instructor's route holds. Whose metadata counts (a class folder's own, or one given as a PATH;
never a file inside a submission), who is who (`grade batch uploads/*` gives the ids `grade batch uploads/` gives,
every row its path relative to the class, a student on two submissions named), merges that lose no student
(torn, duplicate and foreign rows named by file and line, verdicts read from their reports, only the files a batch
writes, writers that never crash each other), reports that name no path of the grading machine, and one grammar
for the commands (--json, --format, exit codes). No GPU needed: the rows are the static checks' (or a stand-in
worker's)."""

from __future__ import annotations

import threading
from pathlib import Path

from grader.output.student_files import write_atomic


def test_two_writers_of_one_file_never_crash_each_other(tmp_path):
    target = tmp_path / "gradebook.json"
    errors: list[BaseException] = []
    texts = [f"writer {n}\n" * 2000 for n in range(4)]

    def write(n: int) -> None:
        try:
            for _ in range(150):
                write_atomic(target, texts[n])
        except OSError as err:  # with one fixed temporary name: FileNotFoundError ... gradebook.json.tmp
            errors.append(err)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert target.read_text() in texts  # one writer's whole text, never a mix
    assert [p.name for p in tmp_path.iterdir()] == ["gradebook.json"]  # no temporary file left behind
    assert target.stat().st_mode & 0o777 == 0o644 & ~_umask()


def _umask() -> int:
    import os

    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# --- helpers: a class graded by a stand-in worker (tests/fake_worker.py), without probing a GPU -----------------
import csv  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402

from conftest import ROOT  # noqa: E402
from grader.batch import gpus, pool  # noqa: E402
from grader.cli import main  # noqa: E402

FAKE_WORKER = ROOT / "tests" / "fake_worker.py"
REFUSED_INCLUDE = ('#include "/etc/passwd"\n'
                   "__global__ void biasGeluFused(const float* x, const float* b, float* o, size_t c) {}\n")
SCORE = {"gold": "10", "silver": "8", "fail": "5"}


def kernel(verdict: str, fraction: float, tag: str) -> str:
    """A submission the stand-in worker grades to `verdict` at `fraction` (its Gradescope score: SCORE)."""
    return f"// FAKE: graded {verdict} {fraction}\n// {tag}\n"


@pytest.fixture
def fake(monkeypatch):
    """No GPU probe (the answer: none) and the stand-in worker."""
    monkeypatch.setattr(gpus, "run_probe", lambda: {"count": 0, "names": [], "reason": "test: no GPU"})
    monkeypatch.setattr(pool, "WORKER_COMMAND", [sys.executable, str(FAKE_WORKER)])


def grade(capsys, *argv) -> tuple[int, str, str]:
    """`grade ARGV` in this process: (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    got = capsys.readouterr()
    return code, got.out, got.err


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def table(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


def rows(out: Path, name: str = "gradebook.json") -> dict[str, dict]:
    return {r["id"]: r for r in json.loads((out / name).read_text())["rows"]}


METADATA = """---
submission_1:
  :submitters:
  - :name: Ada Lovelace
    :sid: '0012345'
    :email: ada@example.edu
  :created_at: 2026-11-30 22:45:14.344165000 Z
submission_2:
  :submitters:
  - :name: Grace Hopper
    :sid: '0012346'
    :email: grace@example.edu
  - :name: Alan Turing
    :sid: '0012347'
    :email: alan@example.edu
  :created_at: 2026-12-01 05:25:21.716840000 Z
submission_3:
  :submitters:
  - :name: Zoë Çelik
    :sid: '0099'
    :email: zoe@example.edu
  :created_at: 2026-12-01 06:00:00.000000000 Z
"""


def export(tmp_path: Path) -> Path:
    """A Gradescope export of three submissions (one a group's), each graded by the stand-in worker."""
    return write_tree(tmp_path / "export", {"submission_1/kernel.cu": kernel("gold", 0.95, "1"),
                                            "submission_2/src/k.cu": kernel("silver", 0.8, "2"),
                                            "submission_3/kernel.cu": kernel("fail", 0.5, "3"),
                                            "submission_metadata.yml": METADATA})


def who(scores: list[dict[str, str]]) -> set[tuple[str, ...]]:
    """scores.csv's lines as (id, email, name, sid, score, path)."""
    return {(s["id"], s["Email"], s["Name"], s["SID"], s["Score"], s["path"]) for s in scores}


# --- 1. whose metadata counts ----------------------------------------------------------------------------------
FORGED = "kernel.cu:\n  :submitters:\n  - :name: Alice\n    :email: alice@uni.example\n"


@pytest.mark.parametrize("form", ["uploads/*", "uploads/"])
def test_a_students_own_metadata_file_names_nobody_and_is_noted(tmp_path, capsys, fake, form):
    up = write_tree(tmp_path / "uploads", {"alice/kernel.cu": kernel("fail", 0.4, "a"),
                                           "mallory/kernel.cu": kernel("gold", 0.97, "m"),
                                           "mallory/submission_metadata.yml": FORGED,
                                           "bob/kernel.cu": kernel("silver", 0.8, "b"),
                                           "bob/deep/submission_metadata.yml": "kernel.cu: [\n"})  # malformed
    paths = sorted(up.iterdir()) if form == "uploads/*" else [up]
    code, _, err = grade(capsys, "batch", *paths, "--out", tmp_path / "out", "--quiet")
    assert code == 3, err  # every student graded (no GPU here): a student's file stops nothing
    assert "alice@uni.example" not in (tmp_path / "out" / "scores.csv").read_text(encoding="utf-8-sig")
    assert sorted(rows(tmp_path / "out")) == ["alice", "bob", "mallory"]
    report = (tmp_path / "out" / "reports" / "mallory.txt").read_text()
    assert "Submitted by" not in report and report.startswith("mallory/kernel.cu:")
    assert rows(tmp_path / "out")["mallory"]["remarks"] == [
        "mallory/submission_metadata.yml: Gradescope's metadata inside the submission: the student's own file, not "
        "read (only the class folder's own, or one given as a PATH, names the students)"]
    assert "bob/deep/submission_metadata.yml: Gradescope's metadata inside the submission" in err  # said on stderr
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "mallory/submission_metadata.yml" in summary and "bob/deep/submission_metadata.yml" in summary


def test_on_gradescopes_route_a_students_metadata_file_still_gives_results_json(tmp_path, capsys, fake):
    auto = write_tree(tmp_path / "autograder", {"submission/kernel.cu": kernel("gold", 0.96, "x"),
                                                "submission/submission_metadata.yml": "x: [\n",
                                                "submission/submission_metadata.json": "{not json"})
    code, _, err = grade(capsys, "batch", auto / "submission", "--format", "gradescope", "--out", auto / "results",
                         "--quiet")
    assert code == 3, err
    results = json.loads((auto / "results" / "results.json").read_text())
    assert results["score"] == 10.0  # graded: the files inside the upload are the student's, read by nobody
    assert rows(auto / "results")["submission"]["submitters"] == []


def test_a_malformed_metadata_file_given_on_gradescopes_route_is_a_warning_not_a_lost_result(tmp_path, capsys,
                                                                                              fake):
    auto = write_tree(tmp_path / "autograder", {"submission/kernel.cu": kernel("silver", 0.8, "x"),
                                                "submission_metadata.json": '{"id": 7,\n "users": [\n'})
    code, _, err = grade(capsys, "batch", auto / "submission", auto / "submission_metadata.json", "--format",
                         "gradescope", "--out", auto / "results", "--quiet")
    assert code == 3 and "not readable as Gradescope's autograder metadata at line 3" in err
    assert "graded without names" in err
    assert json.loads((auto / "results" / "results.json").read_text())["score"] == 8.0


def test_every_exit_of_gradescopes_route_writes_results_json(tmp_path, capsys, fake, monkeypatch):
    from grader.compile import sandbox

    monkeypatch.setattr(sandbox, "state", lambda: sandbox.SandboxState(False, 0, "no Landlock (test)"))
    auto = write_tree(tmp_path / "autograder", {"submission/kernel.cu": kernel("gold", 0.96, "x")})
    code, _, err = grade(capsys, "batch", auto / "submission", "--format", "gradescope", "--out", auto / "results")
    assert code == 2 and "cannot be sandboxed" in err
    results = json.loads((auto / "results" / "results.json").read_text())
    assert results["output"].startswith("not graded: the grader could not grade here (NVRTC cannot be sandboxed")
    assert results["extra_data"] == {"graded": False} and "not your submission's fault" in results["output"]


# --- 2. identity: the same ids, paths and names by every route ---------------------------------------------------
def test_uploads_star_gives_the_ids_and_paths_the_class_folder_gives(tmp_path, capsys, fake):
    up = write_tree(tmp_path / "uploads", {"alice/src/kernel.cu": kernel("gold", 0.95, "a"),
                                           "bob/kernel.cu": kernel("fail", 0.3, "b"),
                                           "carol.cu": kernel("fail", 0.2, "c"),
                                           "y/k.cu": kernel("fail", 0.1, "y"), "y.cu": kernel("fail", 0.1, "y2"),
                                           "dave.zip": "x", "notes.txt": "x", "erin/main.cpp": "x"})
    got = {}
    for form, paths in (("star", sorted(up.iterdir())), ("folder", [up])):
        out = tmp_path / form
        code, _, err = grade(capsys, "batch", *paths, "--out", out, "--quiet")
        assert code == 3, err
        got[form] = {i: (r["path"], r["verdict"], r["report"]["file"]) for i, r in rows(out).items()}
        if form == "star":
            assert "notes.txt: not a .cu file, a student folder, a source file or an archive; ignored" in err
        assert [r["path"] for r in table(out / "gradebook.csv")] == [r[0] for r in got[form].values()]
    assert got["star"] == got["folder"]
    assert {i: p for i, (p, _, _) in got["folder"].items()} == {
        "alice": "alice/src/kernel.cu", "bob": "bob/kernel.cu", "carol": "carol.cu", "dave": "dave.zip",
        "erin": "erin", "y": "y/k.cu", "y~2": "y.cu"}


def _autograder(tmp_path: Path, folder: Path, number: int, users: list[dict]) -> Path:
    """Gradescope's autograder layout for the submission in `folder`: /autograder/submission and the metadata
    JSON beside it."""
    auto = tmp_path / f"autograder_{number}"
    shutil.copytree(folder, auto / "submission")
    (auto / "submission_metadata.json").write_text(json.dumps({
        "id": number, "created_at": "2026-12-01T05:25:21.716840-08:00", "assignment": {"title": "biasGeluFused"},
        "users": users, "previous_submissions": []}))
    return auto


def test_every_route_gives_the_same_ids_names_and_scores(tmp_path, capsys, fake):
    ex = export(tmp_path)
    routes = {}
    code, _, err = grade(capsys, "batch", ex, "--out", tmp_path / "whole", "--quiet")
    assert code == 3, err
    routes["export/"] = who(table(tmp_path / "whole" / "scores.csv"))
    code, _, err = grade(capsys, "batch", *sorted(ex.iterdir()), "--out", tmp_path / "star", "--quiet")
    assert code == 3, err
    routes["export/*"] = who(table(tmp_path / "star" / "scores.csv"))
    for k in (1, 2):
        code, _, err = grade(capsys, "batch", ex, "--out", tmp_path / "shards", "--shard", f"{k}/2", "--quiet")
        assert code == 3, err
    code, _, err = grade(capsys, "merge", tmp_path / "merged", tmp_path / "shards", "--quiet")
    assert code == 0, err
    routes["shards + merge"] = who(table(tmp_path / "merged" / "scores.csv"))
    lines = set()
    for sub in sorted(p for p in ex.iterdir() if p.is_dir()):
        n = int(sub.name.split("_")[1])
        people = [{"name": s["Name"], "email": s["Email"], "sid": s["SID"], "id": 99}
                  for s in table(tmp_path / "whole" / "scores.csv") if s["id"] == sub.name]
        auto = _autograder(tmp_path, sub, n, people)
        code, _, err = grade(capsys, "batch", auto / "submission", auto / "submission_metadata.json",
                             "--format", "gradescope", "--out", auto / "results", "--quiet")
        assert code == 3, err
        score = json.loads((auto / "results" / "results.json").read_text())["score"]
        row = rows(auto / "results")[sub.name]  # the export's name for the submission
        lines |= {(row["id"], s["email"], s["name"], s["sid"], f"{score:g}") for s in row["submitters"]}
    routes["gradescope"] = lines
    expected = {("submission_1", "ada@example.edu", "Ada Lovelace", "0012345", "10"),
                ("submission_2", "grace@example.edu", "Grace Hopper", "0012346", "8"),
                ("submission_2", "alan@example.edu", "Alan Turing", "0012347", "8"),
                ("submission_3", "zoe@example.edu", "Zoë Çelik", "0099", "5")}
    assert {line[:5] for line in routes["export/"]} == expected
    for name, got in routes.items():
        assert {line[:5] for line in got} == expected, name
    paths = {line[5] for route in ("export/", "export/*", "shards + merge") for line in routes[route]}
    assert paths == {"submission_1/kernel.cu", "submission_2/src/k.cu", "submission_3/kernel.cu"}


def test_a_student_on_two_submissions_is_listed_with_the_rule_and_scored_once(tmp_path, capsys, fake):
    twice = METADATA.replace("zoe@example.edu", "ADA@example.edu")  # submission_3 names Ada too (case differs)
    ex = write_tree(tmp_path / "export", {"submission_1/kernel.cu": kernel("gold", 0.95, "1"),
                                          "submission_2/kernel.cu": kernel("silver", 0.8, "2"),
                                          "submission_3/kernel.cu": kernel("fail", 0.5, "3"),
                                          "submission_metadata.yml": twice})
    code, _, err = grade(capsys, "batch", ex, "--out", tmp_path / "out", "--quiet")
    assert code == 3, err
    said = ("ada@example.edu is on 2 submissions (submission_1, submission_3): scores.csv keeps submission_3 "
            "(handed in last)")
    assert said in err
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "## Students on more than one submission" in summary and said in summary
    assert "scores.csv keeps the submission handed in last" in summary
    ada = [s for s in table(tmp_path / "out" / "scores.csv") if s["Email"].lower() == "ada@example.edu"]
    assert [(s["id"], s["Score"]) for s in ada] == [("submission_3", "5")]  # the later one, though it scored less
    book = json.loads((tmp_path / "out" / "gradebook.json").read_text())
    assert book["shared"][0]["kept"] == "submission_3"


# --- 3. merges that lose nothing -----------------------------------------------------------------------------------
def _shards(tmp_path: Path, capsys) -> tuple[Path, dict[str, str]]:
    """A class of four graded in two shards into one folder; the shards' files by name."""
    cls = write_tree(tmp_path / "class", {f"{c}.cu": kernel("gold", 0.9 + i / 100, c) for i, c in enumerate("abcd")})
    for k in (1, 2):
        code, _, err = grade(capsys, "batch", cls, "--out", tmp_path / "shards", "--shard", f"{k}/2", "--quiet")
        assert code == 3, err
    return tmp_path / "shards", {k: tmp_path / "shards" / f"results.shard-{k}-of-2.jsonl" for k in (1, 2)}


def test_a_torn_last_line_stops_the_merge_with_its_file_and_line_even_when_quiet(tmp_path, capsys, fake):
    folder, files = _shards(tmp_path, capsys)
    lines = files[2].read_text().splitlines()
    files[2].write_text("\n".join(lines[:-1] + [lines[-1][: len(lines[-1]) // 2]]))  # d's row, cut by a kill
    code, out, err = grade(capsys, "merge", tmp_path / "merged", folder, "--quiet")
    assert code == 2 and out == ""
    assert f"{files[2]}:2: torn: the row of d was cut short" in err and "nothing was written" in err
    assert not (tmp_path / "merged").exists()
    code, _, err = grade(capsys, "merge", tmp_path / "merged", folder, "--quiet", "--accept-problems")
    assert code == 0 and "accepted:" in err
    assert sorted(rows(tmp_path / "merged")) == ["a", "b", "c"]
    book = json.loads((tmp_path / "merged" / "gradebook.json").read_text())
    assert [p["kind"] for p in book["settings"]["problems_accepted"]] == ["torn"]


def test_a_torn_line_that_a_rerun_graded_again_loses_nothing(tmp_path, capsys, fake):
    folder, files = _shards(tmp_path, capsys)
    lines = files[2].read_text().splitlines()
    files[2].write_text("\n".join(lines[:-1] + [lines[-1][:60]]))
    code, _, err = grade(capsys, "batch", tmp_path / "class", "--out", folder, "--shard", "2/2", "--quiet")
    assert code == 3, err  # the rerun grades d again (its row was torn) and appends it
    code, _, err = grade(capsys, "merge", tmp_path / "merged", folder)
    assert code == 0 and f"{files[2]}:2: a torn line (a write cut short) of d, whose later row counts" in err
    assert sorted(rows(tmp_path / "merged")) == ["a", "b", "c", "d"]


def test_a_row_whose_verdict_is_not_its_reports_is_taken_from_the_report(tmp_path, capsys, fake):
    folder, files = _shards(tmp_path, capsys)
    lines = files[1].read_text().splitlines()
    row = json.loads(lines[0])
    row["report"].update(verdict="no-gpu", stage="compile", reason="no GPU", fraction=None)  # the truth
    lines[0] = json.dumps(row)  # the row still says gold 0.9: a score of 10 in scores.csv
    files[1].write_text("\n".join(lines) + "\n")
    code, _, err = grade(capsys, "merge", tmp_path / "merged", folder)
    assert code == 2 and f"{files[1]}:1: mismatch: verdict: the row says \"gold\", its report \"no-gpu\"" in err
    code, _, err = grade(capsys, "merge", tmp_path / "merged", folder, "--accept-problems")
    assert code == 0
    assert rows(tmp_path / "merged")["a"]["verdict"] == "no-gpu"
    assert {s["id"]: s["Score"] for s in table(tmp_path / "merged" / "scores.csv")}["a"] == ""  # not graded


def test_merge_reads_the_files_a_batch_writes_not_any_results_jsonl(tmp_path, capsys, fake):
    folder, files = _shards(tmp_path, capsys)
    old = folder / "results-old.jsonl"
    old.write_text(files[1].read_text().replace('"verdict":"gold"', '"verdict":"fail"'))
    code, _, err = grade(capsys, "merge", tmp_path / "merged", folder)
    assert code == 0, err
    assert f"{old}: not a name a batch writes" in err and "not read" in err
    assert {r["verdict"] for r in rows(tmp_path / "merged").values()} == {"gold"}
    code, _, err = grade(capsys, "merge", tmp_path / "both", folder, old)  # given by its path: read, and a duplicate
    assert code == 2 and "duplicate: a has a row in" in err and "two batches or shards graded it" in err


def test_a_row_of_another_shard_or_schema_is_foreign(tmp_path, capsys, fake):
    folder, files = _shards(tmp_path, capsys)
    with open(files[2], "a") as f:
        f.write(files[1].read_text().splitlines()[0] + "\n")  # shard 1's row of a, in shard 2's file
        f.write('{"id": "zed", "score": 3}\n')
    code, _, err = grade(capsys, "merge", tmp_path / "merged", folder)
    assert code == 2
    assert f"{files[2]}:3: foreign: a row of shard 1/2 in the file of shard 2/2" in err
    assert f"{files[2]}:4: foreign: not a row of this grader's results" in err


def test_two_merges_into_one_folder_at_once_both_finish(tmp_path, capsys, fake):
    folder, _ = _shards(tmp_path, capsys)
    cmd = [sys.executable, "-m", "grader.cli", "merge", str(tmp_path / "merged"), str(folder), "--quiet"]
    for _ in range(3):
        runs = [subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        for run in runs:
            assert run.wait(timeout=300) == 0, run.stderr.read()
            run.stderr.close()
    assert sorted(rows(tmp_path / "merged")) == ["a", "b", "c", "d"]
    assert not [p for p in (tmp_path / "merged").rglob("*.tmp")]


# --- 4. reports name the student's file, never a path of this machine -----------------------------------------
def test_no_output_a_student_gets_names_a_path_of_the_grading_machine(tmp_path, capsys, fake):
    cls = write_tree(tmp_path / "class", {"alice/src/kernel.cu": kernel("gold", 0.95, "a"),
                                          "bob/kernel.cu": REFUSED_INCLUDE, "carol/main.cpp": "x", "dan.zip": "x"})
    (cls / "erin").mkdir()
    (cls / "erin" / "k.cu").symlink_to(tmp_path / "elsewhere.cu")
    out = tmp_path / "out"
    code, _, err = grade(capsys, "batch", cls, "--out", out, "--quiet")
    assert code == 3, err
    machine = str(tmp_path)
    for report in (out / "reports").iterdir():  # what is handed back to each student
        assert machine not in report.read_text(), report.name
    for row in rows(out).values():
        assert machine not in json.dumps(row), row["id"]
    assert machine not in (out / "gradebook.csv").read_text() + (out / "scores.csv").read_text()
    assert rows(out)["alice"]["report"]["file"] == "alice/src/kernel.cu"
    assert rows(out)["carol"]["reason"].startswith("carol: student folder with no .cu file; carol/main.cpp: not a .cu")


def test_grade_file_names_the_file_by_its_base_name(capsys, tmp_path):
    src = tmp_path / "deep" / "folder" / "my_kernel.cu"
    src.parent.mkdir(parents=True)
    src.write_text(REFUSED_INCLUDE)
    code, out, _ = grade(capsys, str(src), "--json")
    assert code == 1 and json.loads(out)["file"] == "my_kernel.cu"
    code, out, _ = grade(capsys, str(src))
    assert out.startswith("my_kernel.cu:") and str(tmp_path) not in out


# --- 5. one grammar: --json everywhere, the same --format words, exit codes that tell done from did nothing ------
def test_json_on_batch_and_merge_is_one_document_on_stdout(tmp_path, capsys, fake):
    cls = write_tree(tmp_path / "class", {"a.cu": kernel("gold", 0.95, "a"), "b.cu": kernel("fail", 0.4, "b")})
    code, out, err = grade(capsys, "batch", cls, "--out", tmp_path / "out", "--json")
    doc = json.loads(out)  # all of stdout: one document
    assert code == doc["exit_code"] == 3 and doc["command"] == "batch" and doc["submissions"] == 2
    assert doc["counts"]["gold"] == 1 and doc["files"]["scores"] == str(tmp_path / "out" / "scores.csv")
    assert doc["no_gpu"] == "test: no GPU" and "2/2" in err  # progress on stderr
    assert json.loads(grade(capsys, "batch", cls, "--out", tmp_path / "out2", "--format", "json")[1]) \
        .keys() == doc.keys()
    code, out, _ = grade(capsys, "merge", tmp_path / "merged", tmp_path / "out", "--json")
    doc = json.loads(out)
    assert code == doc["exit_code"] == 0 and doc["command"] == "merge" and doc["submissions"] == 2
    code, out, err = grade(capsys, "merge", tmp_path / "merged", tmp_path / "nothing", "--json")
    doc = json.loads(out)
    assert code == doc["exit_code"] == 2 and "no such file or folder" in doc["error"] and "no such file" in err
    code, out, _ = grade(capsys, "batch", tmp_path / "typo", "--json")
    assert code == 2 and json.loads(out)["error"].startswith("no such file or folder")


@pytest.mark.parametrize("argv", [["batch", "class/", "--json", "--shard", "9/2"],
                                  ["merge", "out", "--json", "--bogus"], ["cache", "--json", "--bogus"]])
def test_a_usage_error_with_json_is_still_one_document(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == argv[0] and doc["exit_code"] == 2 and doc["error"].startswith("usage error:")


def test_a_usage_error_on_gradescopes_route_still_writes_results_json(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["batch", "submission", "--format", "gradescope", "--out", str(tmp_path / "results"), "--limit", "0"])
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    assert results["output"].startswith("not graded: the grader was called wrongly")


def test_format_words_mean_the_same_in_every_command(capsys):
    from grader.batch.command import batch_parser, merge_parser
    from grader.cli import single_parser
    from grader.compile.kernel_cache import parser as cache_parser

    def words(p) -> tuple[str, ...]:
        return next(a.choices for a in p._actions if "--format" in a.option_strings)

    assert words(single_parser()) == words(batch_parser()) == ("text", "json", "gradescope")
    assert words(merge_parser()) == words(cache_parser()) == ("text", "json")
    for p in (single_parser(), batch_parser(), merge_parser(), cache_parser()):
        assert next(a for a in p._actions if "--json" in a.option_strings).const == "json"
    assert batch_parser().parse_args(["c", "--format", "gradebook"]).format == "text"  # the old word still works


def test_cache_clear_that_removed_nothing_says_so_in_its_exit_code(tmp_path, monkeypatch, capsys):
    from grader.compile import kernel_cache

    monkeypatch.setenv(kernel_cache.ENV, str(tmp_path / "cache"))
    code, out, err = grade(capsys, "cache", "--clear")
    assert code == kernel_cache.CACHE_EXIT_NOTHING == 1 and "nothing to remove" in err and out == ""
    (tmp_path / "cache").mkdir(mode=0o700)
    (tmp_path / "cache" / ("0" * 32 + ".json")).write_text("{}")
    code, out, _ = grade(capsys, "cache", "--clear", "--json")
    doc = json.loads(out)
    assert code == doc["exit_code"] == 0 and doc["removed"] == 1 and doc["command"] == "cache"
    monkeypatch.setenv(kernel_cache.ENV, "off")
    assert grade(capsys, "cache", "--clear")[0] == 1


def test_gpus_that_name_no_gpu_are_an_error(tmp_path, capsys, fake):
    cls = write_tree(tmp_path / "class", {"a.cu": kernel("gold", 0.95, "a")})
    code, _, err = grade(capsys, "batch", cls, "--out", tmp_path / "out", "--gpus", "0")
    assert code == 2 and "--gpus 0: no GPU is visible here (test: no GPU)" in err
    assert not (tmp_path / "out").exists()
    for bad in ("", ",", "a", "0,0", "-1"):
        with pytest.raises(SystemExit) as stop:
            main(["batch", str(cls), "--gpus", bad])
        assert stop.value.code == 2
    capsys.readouterr()


def test_the_keep_rule_without_times_takes_the_higher_score_and_lists_a_sid_under_two_emails():
    from grader.batch import gradebook as gb
    from grader.check.verify import Verification
    from grader.output.gradescope_export import Submitter
    from grader.output.report import CompileSummary, GradeReport

    def row(id: str, verdict: str, *people: Submitter) -> gb.BatchResult:
        report = GradeReport(file=f"{id}/k.cu", verdict=verdict, stage="grade", reason="r", fraction=0.5,
                             compile=CompileSummary(arch="sm_90"), verification=[Verification(
                                 rows=1, cols=1, passed=True, total=1)])
        return gb.make_result(id=id, path=f"{id}/k.cu", key=id, sha256=None, report=report, grader_version="t",
                              submitters=list(people))

    ada = Submitter(name="Ada", email="ada@x.edu", sid="1")
    rows = [row("s1", "silver", ada), row("s2", "gold", ada), row("s3", "fail", Submitter(email="eve@x.edu", sid="1"))]
    shared = gb.shared_students(rows)
    assert [(s.who, s.ids, s.kept) for s in shared] == [("ada@x.edu", ["s1", "s2"], "s2"),
                                                        ("sid 1", ["s1", "s2", "s3"], "")]
    assert "the higher score" in shared[0].why and "every line kept" in shared[1].why
    scores = list(csv.DictReader(gb.scores_csv(rows).splitlines()))
    assert [(s["id"], s["Email"], s["Score"]) for s in scores] == [("s2", "ada@x.edu", "10"), ("s3", "eve@x.edu", "5")]
