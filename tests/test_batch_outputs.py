"""The batch's outputs as one table (grader.batch.outputs, issue 32): a batch, its shards, a merge and Gradescope's
route leave exactly the files OUTPUTS names, every one but the results file written through the one atomic writer,
and docs/batch.md lists them from the table. No GPU needed: the rows come from a stand-in worker (tests/fake_worker.py)
or from the static checks (`grade batch` on a machine without a GPU)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from grader.batch import command, outputs, pool
from grader.batch import gradebook as gb
from grader.batch.outputs import BATCH, MERGE, OUTPUTS, Settled
from grader.output.report import GradeReport

ROOT = Path(__file__).resolve().parent.parent
FAKE_WORKER = ROOT / "tests" / "fake_worker.py"
CLASS = {"gold.cu": "// FAKE: graded gold 0.95\n", "Zoë Çelik.cu": "// FAKE: graded silver 0.8\n",
         "=cmd.cu": "// FAKE: graded fail 0.3\n", "a@b.edu.cu": "// an error row\n"}


def listing(out: Path) -> list[str]:
    """Every file under `out`, relative to it, with `/`, sorted."""
    return sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())


def book_of(out: Path, suffix: str = "") -> gb.Gradebook:
    return gb.Gradebook.model_validate_json((out / f"gradebook{suffix}.json").read_text())


@pytest.fixture
def fake_class(tmp_path, monkeypatch) -> Path:
    monkeypatch.setattr(pool, "WORKER_COMMAND", [sys.executable, str(FAKE_WORKER)])
    cls = tmp_path / "class"
    cls.mkdir()
    for name, text in CLASS.items():
        (cls / name).write_text(text, encoding="utf-8")
    return cls


def test_the_table_names_every_file_once_in_write_order():
    files = [o.file("", "NAME") for o in OUTPUTS]
    assert len(set(files)) == len(files)
    assert files[0] == "results.jsonl" and OUTPUTS[0].text is None and OUTPUTS[0].student is None  # ResultStore's
    assert {o.kind for o in OUTPUTS} == {"results", "csv", "json", "summary", "scores", "reports", "page", "gradescope"}
    assert all((o.text is None) != (o.student is None) for o in OUTPUTS[1:])  # one way to make each file's text
    assert {f for o in OUTPUTS if o.by == (BATCH,) for f in [o.file()]} == {"results.jsonl", "results.json"}


def test_a_batch_its_shards_and_a_merge_leave_exactly_the_files_of_the_table(tmp_path, fake_class):
    out = tmp_path / "out"
    assert command.main(["batch", str(fake_class), "--out", str(out), "--quiet"]) in (0, 3)
    assert listing(out) == sorted(outputs.planned(BATCH, Settled(book_of(out))))
    assert len(listing(out / "reports")) == 2 * len(CLASS)
    assert command.main(["batch", str(fake_class), "--out", str(out), "--quiet", "--regrade"]) in (0, 3)
    assert listing(out) == sorted(outputs.planned(BATCH, Settled(book_of(out))))  # a rerun adds no file
    shards = tmp_path / "shards"
    for k in (1, 2):
        assert command.main(["batch", str(fake_class), "--out", str(shards), "--shard", f"{k}/2", "--quiet"]) in (0, 3)
    want = {f for k in (1, 2) for suffix in [f".shard-{k}-of-2"]
            for f in outputs.planned(BATCH, Settled(book_of(shards, suffix), suffix))}
    assert listing(shards) == sorted(want) and "index.shard-2-of-2.html" in want
    merged = tmp_path / "merged"
    assert command.main(["merge", str(merged), str(shards), "--quiet"]) == 0
    assert listing(merged) == sorted(outputs.planned(MERGE, Settled(book_of(merged))))
    assert "results.jsonl" not in listing(merged)


def test_gradescope_s_route_leaves_the_table_s_files_and_results_json_on_every_exit(tmp_path, fake_class, capsys):
    out = tmp_path / "gs"
    assert command.main(["batch", str(fake_class / "gold.cu"), "--format", "gradescope", "--out", str(out)]) in (0, 3)
    assert listing(out) == sorted(outputs.planned(BATCH, Settled(book_of(out), gradescope=True)))
    assert "results.json" in listing(out) and "gradescope: " in capsys.readouterr().out
    for argv in (["batch", str(tmp_path / "missing"), "--format", "gradescope"],  # nothing to grade
                 ["batch", str(fake_class / "gold.cu"), str(fake_class / "=cmd.cu"), "--format", "gradescope"]):
        stopped = tmp_path / f"stopped{len(argv)}"
        assert command.main([*argv, "--out", str(stopped), "--quiet"]) == 2
        assert listing(stopped) == outputs.planned(BATCH, Settled(gradescope=True)) == ["results.json"]


def test_every_file_but_the_results_file_goes_through_the_one_atomic_writer(tmp_path, fake_class, monkeypatch):
    written: list[Path] = []
    real = outputs.write_atomic

    def spy(path, text, encoding="utf-8"):
        written.append(Path(path))
        real(path, text, encoding)

    monkeypatch.setattr(outputs, "write_atomic", spy)
    out = tmp_path / "out"
    assert command.main(["batch", str(fake_class / "gold.cu"), "--format", "gradescope", "--out", str(out),
                         "--quiet"]) in (0, 3)
    through = {p.relative_to(out).as_posix() for p in written}
    assert through == set(listing(out)) - {"results.jsonl"}
    assert sum(p.name == "gold.txt" for p in written) == 2  # the moment the row landed, and again at the end


def test_a_real_batch_without_a_gpu_leaves_exactly_the_files_of_the_table(tmp_path):
    cls = tmp_path / "class"
    cls.mkdir()
    (cls / "refused.cu").write_text('#include "/etc/passwd"\n__global__ void biasGeluFused() {}\n')
    (cls / "Not UTF-8 Name.cu").write_bytes(b"\xff\xfe not a kernel\n")
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "grader.cli", "batch", str(cls), "--out", str(out), "--quiet"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode in (0, 3), r.stderr
    assert listing(out) == sorted(outputs.planned(BATCH, Settled(book_of(out))))
    assert len(book_of(out).rows) == 2


def test_write_outputs_answers_each_kind_in_the_table_s_order(tmp_path):
    report = GradeReport(file="a.cu", verdict="gold", reason="fine", fraction=0.95, stage="grade")
    row = gb.make_result(id="a", path="a.cu", key="k", sha256=None, report=report, grader_version="t",
                         phases={"wall": 1.5})
    book = gb.build_gradebook([row], "t", {})
    paths = outputs.write_outputs(tmp_path, Settled(book, ".shard-1-of-3", gradescope=True))
    assert list(paths) == ["csv", "json", "summary", "scores", "reports", "page", "gradescope"]
    assert paths["reports"] == tmp_path / "reports" and paths["page"] == tmp_path / "index.shard-1-of-3.html"
    assert '"execution_time": 1.5' in paths["gradescope"].read_text()
    assert list(outputs.write_outputs(tmp_path / "merge", Settled(book))) == ["csv", "json", "summary", "scores",
                                                                            "reports", "page"]


def test_the_gradebook_s_own_writer_writes_the_table_s_four_files_byte_for_byte(tmp_path):
    """gb.write_outputs (for code holding only a gradebook) names and writes its files as the table does."""
    rows = [gb.make_result(id=i, path=f"{i}.cu", key=i, sha256=None, grader_version="t",
                           report=GradeReport(file=f"{i}.cu", verdict="fail", reason="slow", fraction=0.5))
            for i in ("Zoë", "=x")]
    book = gb.build_gradebook(rows, "t", {})
    mine = gb.write_outputs(book, tmp_path / "gb", ".shard-1-of-2")
    table = outputs.write_outputs(tmp_path / "table", Settled(book, ".shard-1-of-2"))
    for kind, path in mine.items():
        assert table[kind].name == path.name and table[kind].read_bytes() == path.read_bytes(), kind


def test_docs_list_the_outputs_from_the_table():
    text = (ROOT / "docs" / "batch.md").read_text(encoding="utf-8")
    assert outputs.markdown_table() + "\n" in text, "docs/batch.md's Outputs: paste outputs.markdown_table()"
    for o in OUTPUTS:
        assert f"`{o.file('', 'NAME')}`" in text
