"""`grade batch` and `grade merge` without a GPU: discovery, hostile input, no host byte in any output,
resume after --limit and after a kill, shards and merge, time limits and crashes (with a stand-in worker),
the gradebook files and Gradescope's format.

Tests whose expected verdicts assume no GPU (no-gpu rows, exit 3) take the `no_gpu` fixture and skip on a
GPU machine; the rest hold on both.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from conftest import alive, ended, wait_until
from grader.batch import command as batch
from grader.batch import gradebook as gb
from grader.batch import pool
from grader.batch.protocol import BatchSettings, Job, event_line
from grader.check.verify import Verification
from grader.core.errors import EXIT_INPUT
from grader.core.text import markdown_cell
from grader.output.gradescope import gradescope_results
from grader.output.report import CompileSummary, GradeReport

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "batch"
SUBS = ROOT / "submissions"
FAKE_WORKER = ROOT / "tests" / "fake_worker.py"
REFUSED_INCLUDE = ('#include "/etc/passwd"\n'
                   "__global__ void biasGeluFused(const float* x, const float* b, float* o, size_t c) {}\n")


@pytest.fixture(scope="module")
def no_gpu():
    count, names, _ = batch.probe_gpus()
    if count:
        pytest.skip(f"expects no GPU (no-gpu verdicts, exit 3); this machine has {', '.join(names)}")


def gpu_present() -> bool:
    return batch.probe_gpus()[0] > 0


def grade(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def by_id(out: Path, name: str = "gradebook.json") -> dict[str, dict]:
    return {r["id"]: r for r in json.loads((out / name).read_text())["rows"]}


def make_class(tmp_path: Path, files: dict[str, str | bytes | Path]) -> Path:
    cls = tmp_path / "class"
    cls.mkdir()
    for name, content in files.items():
        p = cls / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copy(content, p)
        else:
            p.write_bytes(content if isinstance(content, bytes) else content.encode())
    return cls


# --- the whole batch on the examples ---------------------------------------------------------------------
def test_examples_grade_to_no_gpu_and_every_output_is_written(tmp_path, no_gpu):
    cls = make_class(tmp_path, {p.name: p for p in SUBS.glob("*.cu")})
    out = tmp_path / "out"
    r = grade("batch", cls, "--out", out)
    assert r.returncode == 3, r.stderr
    ids = sorted(p.stem for p in SUBS.glob("*.cu"))
    with open(out / "gradebook.csv", newline="", encoding="utf-8-sig") as f:
        table = list(csv.reader(f))
    assert tuple(table[0]) == gb.CSV_COLUMNS
    assert [row[0] for row in table[1:]] == ids
    rows = by_id(out)
    for i in ids:
        if i == "compile_error":
            assert rows[i]["verdict"] == "error" and rows[i]["stage"] == "compile"
            assert "compile_error.cu:" in rows[i]["error"]
        else:
            assert rows[i]["verdict"] == "no-gpu", rows[i]["reason"]
            assert rows[i]["phases"]["compile"] > 0 and "context" in rows[i]["phases"]
    book = gb.Gradebook.model_validate_json((out / "gradebook.json").read_text())
    assert book.counts["no-gpu"] == len(ids) - 1 and book.counts["error"] == 1
    summary = (out / "summary.md").read_text()
    assert "## Verdicts" in summary and "no GPU" in summary and "## Fraction of the copy floor" in summary
    assert len(jsonl(out / "results.jsonl")) == len(ids)
    assert sorted(p.stem for p in (out / "reports").glob("*.txt")) == ids  # one report per student
    assert (out / "index.html").read_text().count('<tr data-verdict="') == len(ids)  # the class page
    assert f"{len(ids)}/{len(ids)}" in r.stderr  # progress lines
    assert "no GPU" in r.stdout and "csv:" in r.stdout


def test_quiet_prints_nothing(tmp_path):
    cls = make_class(tmp_path, {"a.cu": REFUSED_INCLUDE})
    r = grade("batch", cls, "--out", tmp_path / "out", "--quiet")
    assert r.returncode in (0, 3) and r.stdout == "" and r.stderr == ""


# --- finding submissions ---------------------------------------------------------------------------------
def test_discover_files_student_folders_and_ids(tmp_path):
    gold = SUBS / "gold_float4.cu"
    cls = make_class(tmp_path, {"alice/src/kernel.cu": gold, "alice/README.md": "x", "bob/a.cu": gold,
                                "bob/b.cu": gold, "carol/notes.txt": "x", "dave.cu": gold, "notes.txt": "x",
                                ".hidden.cu": gold, "erin.cu": gold, "erin/k.cu": gold, "frank/.git/x.cu": gold,
                                "frank/k.cu": gold})
    items = {it.id: it for it in batch.discover([str(cls)])}
    assert sorted(items) == ["alice", "bob", "carol", "dave", "erin", "erin~2", "frank"]
    assert items["alice"].problem is None and items["alice"].real.name == "kernel.cu"
    assert items["bob"].problem == "bob: student folder with 2 .cu files (bob/a.cu, bob/b.cu); expected one"
    assert items["alice"].path == "alice/src/kernel.cu" and items["dave"].path == "dave.cu"  # relative to the class
    assert "no .cu file" in items["carol"].problem
    assert items["frank"].problem is None and len(items["dave"].sha256) == 64


def test_links_are_refused_before_reading_unless_inside_their_own_student_folder(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.cu").write_text("secret")
    (outside / "k.cu").write_text("k")
    gold = SUBS / "gold_float4.cu"
    cls = make_class(tmp_path, {"real/k.cu": gold, "dan/.src/kernel.cu": gold, "fay/notes.txt": "x"})
    (cls / "leak.cu").symlink_to(outside / "secret.cu")
    (cls / "leakdir").symlink_to(outside)
    (cls / "inside.cu").symlink_to(cls / "real" / "k.cu")
    (cls / "dangling.cu").symlink_to(tmp_path / "nothing")
    (cls / "notes.md").symlink_to(outside / "k.cu")  # not a submission's name: ignored, as a file would be
    for student, target in (("carol", cls / "real" / "k.cu"), ("erin", outside / "k.cu")):
        (cls / student).mkdir()
        (cls / student / "k.cu").symlink_to(target)
    (cls / "dan" / "k.cu").symlink_to(cls / "dan" / ".src" / "kernel.cu")  # inside dan/: followed
    (cls / "fay" / "src").symlink_to(cls / "real")  # a linked folder is never entered
    items = {it.id: it for it in batch.discover([str(cls)])}
    assert sorted(items) == ["carol", "dan", "dangling", "erin", "fay", "inside", "leak", "leakdir", "real"]
    for i in ("leak", "leakdir", "inside", "dangling"):  # a link directly in the class folder: never followed
        assert "a link, not followed; hand in the file itself" in items[i].problem, items[i]
        assert items[i].sha256 is None and items[i].real is None
    for i in ("carol", "erin"):
        assert items[i].problem == f"{i}/k.cu: a link pointing outside its student folder {i}; refused without " \
                                   "reading it"  # no path of this machine: the student reads it
        assert items[i].sha256 is None and items[i].real is None
    assert items["dan"].problem is None and items["dan"].real == cls / "dan" / ".src" / "kernel.cu"
    assert "no .cu file" in items["fay"].problem and "fay/src: a linked folder, not entered" in items["fay"].problem
    assert items["real"].problem is None
    for link in ("leak.cu", "leakdir", "inside.cu"):  # `grade batch uploads/*` names each upload
        direct = batch.discover([str(cls / link)])
        assert len(direct) == 1 and "a link, not followed; give the real path" in direct[0].problem
        assert direct[0].sha256 is None
    (tmp_path / "class_link").symlink_to(cls)  # changed on purpose: a link given as PATH is never followed
    assert "give the real path" in batch.discover([str(tmp_path / "class_link")])[0].problem
    direct = batch.discover([str(cls / "real" / "k.cu")])[0]
    assert direct.id == "k" and direct.problem is None and direct.real == cls / "real" / "k.cu"


def test_worker_clock_announces_compile_and_run_and_times_phases():
    from grader.batch.worker import PhaseClock
    from grader.core.errors import PROGRESS as STAGES

    sent = []

    class Chan:
        def send(self, event):
            sent.append(event.stage)

    clock = PhaseClock(Chan())
    for stage in STAGES:
        clock(stage)
    clock.stop()
    assert sent == ["read", "context", "compile", "verify", "time"]  # the parent's limits start at compile, verify
    assert set(clock.phases) == set(STAGES)


def test_unreadable_paths_become_error_rows(tmp_path):
    cls = make_class(tmp_path, {"big.cu": b"//" + b"x" * (300 * 1024), "folder.cu/readme.txt": "x"})
    os.mkfifo(cls / "fifo.cu")
    r = grade("batch", *sorted(cls.iterdir()), tmp_path / "missing_student", "--out", tmp_path / "out", "--quiet")
    assert r.returncode in (0, 3), r.stderr
    rows = by_id(tmp_path / "out")
    assert "over the 262144-byte cap" in rows["big"]["error"]
    assert "not a regular file" in rows["fifo"]["error"]
    assert "no such file or folder" in rows["missing_student"]["error"]
    assert "no .cu file" in rows["folder.cu"]["error"]
    assert all(row["verdict"] == "error" and row["stage"] == "input" for row in rows.values())


def test_stray_sources_and_archives_are_rows_naming_the_fix(tmp_path):
    gold = SUBS / "gold_float4.cu"
    cls = make_class(tmp_path, {"alice.cpp": "x", "bob.TAR.GZ": b"x", "carol.cuh": "x", "dave/main.cpp": "x",
                                "dave/README.md": "x", "erin/erin.zip": b"x", "frank.zip": b"x", "frank/k.cu": gold,
                                "gus.cu": gold, "gus.h": "x", "roster.csv": "x", "README.md": "x", "notes.pdf": b"x",
                                ".hidden.cpp": "x", "hal/k.cu": gold, "hal/helper.cpp": "x"})
    items = {it.id: it for it in batch.discover([str(cls)])}
    assert sorted(items) == ["alice", "bob", "carol", "dave", "erin", "frank", "gus", "hal"]
    assert items["alice"].problem.endswith("alice.cpp: not a .cu file; rename it alice.cu if it is your kernel")
    assert items["carol"].problem.endswith("carol.cuh: not a .cu file; rename it carol.cu if it is your kernel")
    assert "bob.TAR.GZ: an archive; unpack it into a folder of its own" in items["bob"].problem
    assert "student folder with no .cu file; " in items["dave"].problem
    assert items["dave"].problem.endswith("dave/main.cpp: not a .cu file; rename it main.cu if it is your kernel")
    assert "no .cu file; " in items["erin"].problem and "erin/erin.zip: an archive" in items["erin"].problem
    for i in ("frank", "gus", "hal"):  # a stray file beside the student's .cu file or folder: not a missing one
        assert items[i].problem is None and items[i].sha256 == hashlib.sha256(gold.read_bytes()).hexdigest()
    assert all(it.sha256 is None for it in items.values() if it.problem)  # never read
    direct = batch.discover([str(cls / "alice.cpp")])  # given by name: the same row, before any worker
    assert len(direct) == 1 and "not a .cu file; rename it alice.cu" in direct[0].problem


def test_names_that_are_not_utf8_or_hold_controls_give_escaped_distinct_ids(tmp_path):
    gold = (SUBS / "gold_float4.cu").read_bytes()
    cls = make_class(tmp_path, {})
    # the byte 0xE9 is shown as \xe9; a name spelled with a backslash shows it doubled: the ids are one-to-one
    names = {b"caf\xe9.cu": "caf\\xe9", b"caf\\xe9.cu": "caf\\\\xe9", b"a\nb.cu": "a\\nb",
             b"\x1b[31mred.cu": "\\x1b[31mred", b"\xe2\x80\xaeevil.cu": "\\u202eevil", b"st\xfcdent": "st\\xfcdent"}
    for name in names:
        target = os.path.join(os.fsencode(cls), name)
        if name.endswith(b".cu"):
            with open(target, "wb") as f:
                f.write(gold + name)
        else:
            os.mkdir(target)
            with open(os.path.join(target, b"k\xff.cu"), "wb") as f:
                f.write(gold + name)
    items = {it.id: it for it in batch.discover([str(cls)])}
    assert sorted(items) == sorted(names.values())
    for name, id in names.items():
        it = items[id]
        assert it.problem is None and it.id.isprintable() and it.path.isprintable(), it
        assert it.sha256 == hashlib.sha256(gold + name).hexdigest()
        assert os.fsencode(it.real).startswith(os.path.join(os.fsencode(cls), name))
        job = Job.from_line(Job.for_item(it, BatchSettings()).to_line())  # as the pool sends it to the worker
        assert open(job.path, "rb").read() == gold + name
    assert items["caf\\xe9"].path == "caf\\xe9.cu" and items["caf\\\\xe9"].path == "caf\\\\xe9.cu"
    assert items["st\\xfcdent"].path == "st\\xfcdent/k\\xff.cu"


def test_a_class_that_tries_everything_gives_one_row_per_student_each_its_own_file(tmp_path, no_gpu):
    gold, compile_error = SUBS / "gold_float4.cu", SUBS / "compile_error.cu"
    staff = "__global__ void biasGeluFused(const float* x, const float* b, float* o, size_t c) { STAFFMARK }\n"
    cls = make_class(tmp_path, {"bob/k.cu": compile_error, ".staff/solution.cu": staff,
                                "ivy.cu": gold, "jon/kernel.cu": gold, "kim.cpp": gold, "lee.tar.gz": b"\x1f\x8b",
                                "roster.csv": "id\n"})
    def own_copy(name: bytes) -> bytes:  # the kernel, made distinct by a comment
        return gold.read_bytes() + b"\n// " + name.hex().encode() + b"\n"

    for name in (b"caf\xe9.cu", b"a\nb.cu"):
        with open(os.path.join(os.fsencode(cls), name), "wb") as f:
            f.write(own_copy(name))
    (cls / "carol").mkdir()
    (cls / "carol" / "k.cu").symlink_to(cls / "bob" / "k.cu")  # another student's file
    (cls / "dave.cu").symlink_to(cls / ".staff" / "solution.cu")  # a staff file kept in the class folder
    out = tmp_path / "out"
    r = grade("batch", cls, "--out", out)
    assert r.returncode == 3, r.stderr  # no GPU: every student has a row, static checks only
    assert "Traceback" not in r.stderr
    rows = by_id(out)
    assert sorted(rows) == ["a\\nb", "bob", "caf\\xe9", "carol", "dave", "ivy", "jon", "kim", "lee"]
    own = {"a\\nb": own_copy(b"a\nb.cu"), "caf\\xe9": own_copy(b"caf\xe9.cu"),
           "bob": compile_error.read_bytes(), "ivy": gold.read_bytes(), "jon": gold.read_bytes()}
    for i, row in rows.items():  # nobody graded with another's file: each sha256 is of the student's own bytes
        assert row["sha256"] == (hashlib.sha256(own[i]).hexdigest() if i in own else None), row
    for i in ("a\\nb", "caf\\xe9", "ivy", "jon"):
        assert rows[i]["verdict"] == "no-gpu", rows[i]
    assert rows["a\\nb"]["path"] == "a\\nb.cu" and rows["caf\\xe9"]["path"] == "caf\\xe9.cu"  # relative to the class
    refused = {"carol": "a link pointing outside its student folder", "dave": "a link, not followed",
               "kim": "kim.cpp: not a .cu file; rename it kim.cu", "lee": "lee.tar.gz: an archive; unpack it"}
    for i, words in refused.items():
        assert rows[i]["verdict"] == "error" and rows[i]["stage"] == "input" and words in rows[i]["reason"]
    assert rows["bob"]["stage"] == "compile"
    assert len(jsonl(out / "results.jsonl")) == 9
    outputs = r.stdout + r.stderr + "".join(p.read_text(errors="replace") for p in out.iterdir() if p.is_file())
    assert "STAFFMARK" not in outputs  # a compile diagnostic would quote the staff file's line
    for name in ("gradebook.csv", "scores.csv"):
        with open(out / name, newline="", encoding="utf-8-sig") as f:
            assert sorted(row["id"] for row in csv.DictReader(f)) == sorted(rows)
    summary = (out / "summary.md").read_text()
    assert "## Identical files" in summary and "- ivy, jon" in summary
    assert "caf" not in summary.split("## Identical files")[1]  # its bytes are its own


def test_summary_lists_ids_with_identical_files_and_says_none_when_none():
    rows = [_row(i) for i in ("a", "b", "c", "d", "e")]
    for r, sha in zip(rows, ["1" * 64, "2" * 64, "1" * 64, None, "2" * 64], strict=True):
        r.sha256 = sha
    assert gb.identical_groups(rows) == [["a", "c"], ["b", "e"]]
    md = gb.summary_markdown(gb.build_gradebook(rows, "t", {}))
    assert "2 group(s) of ids handed in byte-identical files" in md and "- a, c\n- b, e" in md
    md = gb.summary_markdown(gb.build_gradebook(rows[:2], "t", {}))
    assert "## Identical files\n\nNone: no two submissions have the same bytes." in md


# --- hostile and broken submissions ----------------------------------------------------------------------
EXPECTED = {
    "empty": ("input", "the file is empty"),
    "binary": ("input", "binary"),
    "latin1": ("input", "latin1.cu:1: not UTF-8"),
    "include_passwd": ("source", "refused `#include`"),
    "wrong_name": ("compile", "kernels found: biasGelu, addBias"),
    "wrong_params": ("contract", "parameter list does not match"),
    "deep_template": ("compile", "compile time limit exceeded"),
}


def test_hostile_submissions_get_a_clear_error_row(tmp_path):
    cls = make_class(tmp_path, {f"{i}.cu": DATA / f"{i}.cu" for i in EXPECTED})
    out = tmp_path / "out"
    r = grade("batch", cls, "--out", out, "--compile-limit", "3")
    assert r.returncode == (0 if gpu_present() else 3), r.stderr
    rows = by_id(out)
    for i, (stage, words) in EXPECTED.items():
        assert rows[i]["verdict"] == "error" and rows[i]["stage"] == stage, rows[i]
        assert words in rows[i]["reason"], rows[i]["reason"]
    assert "kernel:   biasGeluFused(const float* x, float* out, size_t cols)" in rows["wrong_params"]["details"]


def _include_attempts(secret: Path) -> dict[str, str]:
    """Every include form we know, each pointing at `secret` (the file's text is valid C, so an include that
    got through would compile it and print its identifier in a diagnostic)."""
    k = "__global__ void biasGeluFused(const float* x, const float* b, float* o, size_t c) { o[0] = x[0]; }\n"
    s = str(secret)
    rel = secret.name
    return {
        "plain": f'#include "{s}"\n{k}',
        "angle": f"#include <{s}>\n{k}",
        "digraph": f'%:include "{s}"\n{k}',
        "splice": f'#inc\\\nlude "{s}"\n{k}',
        "comment": f'#/* x */include "{s}"\n{k}',
        "comment_newline": f'# /* a\n b */ include "{s}"\n{k}',
        "macro": f'#define H "{s}"\n#include H\n{k}',
        "macro_angle": f"#define H <{s}>\n#include H\n{k}",
        "include_next": f'#include_next "{s}"\n{k}',
        "import": f'#import "{s}"\n{k}',
        "embed": f'__device__ const char d[] = {{\n#embed "{s}"\n}};\n{k}',
        "has_include": f'#if __has_include("{s}")\n#error found\n#endif\n{k}',
        "pasted_has_include": f'#define CAT(a,b) a##b\n#if CAT(__has_,include)("{s}")\n#error found\n#endif\n{k}',
        "trigraph": f'??=include "{s}"\n{k}',
        "string_comment": f'__device__ const char* t = "/*";\n#/**/include "{s}"\n// */\n{k}',
        "relative": f'#include "{rel}"\n{k}',
        "line_directive": f'#line 1 "{s}"\n{k}int broken = ;\n',
        "pragma_dependency": f'#pragma GCC dependency "{s}"\n{k}',
        'name"\n#include "' + rel: k,  # a file name that would inject an include into the #line directive
    }


def test_no_byte_of_a_host_file_reaches_any_output(tmp_path):
    marker = f"LEAKMARK{uuid.uuid4().hex}"
    secret_dir = tmp_path / "host"
    secret_dir.mkdir()
    secret = secret_dir / "secret_data.h"
    secret.write_text(f"int {marker} = 1;\n{marker} {marker}\n")
    attempts = _include_attempts(secret)
    cls = make_class(tmp_path, {f"{name}.cu": text for name, text in attempts.items()})
    (cls / secret.name).write_text(secret.read_text())  # a relative include would find it here
    (cls / "link.cu").symlink_to(secret)

    # The threat is real: NVRTC given the plain include reads the file and prints it in its log.
    from cuda.core import Program, ProgramOptions

    try:
        Program(attempts["plain"], "c++", ProgramOptions(name="x.cu", arch="sm_90")).compile("cubin")
        raw = ""
    except Exception as err:  # noqa: BLE001
        raw = str(err)
    assert marker in raw

    out = tmp_path / "out"
    r = grade("batch", cls, "--out", out, "--compile-limit", "30")
    assert r.returncode in (0, 3), r.stderr
    outputs = r.stdout + r.stderr + "".join(p.read_text(errors="replace") for p in out.iterdir() if p.is_file())
    assert marker not in outputs
    rows = by_id(out)
    assert len(rows) == len(attempts) + 2  # and link.cu; the header, a stray file, is a row (changed on purpose)
    assert "secret_data.h: not a .cu file" in rows["secret_data"]["reason"]
    harmless = {"line_directive", "pragma_dependency"}  # no file is read: the #line excerpt is the submission's
    for row in rows.values():
        if row["id"] not in harmless and not row["id"].startswith("name"):
            assert row["verdict"] == "error" and row["stage"] in ("source", "input"), row
    for name, text in attempts.items():  # single mode too
        f = tmp_path / "single.cu"
        f.write_text(text)
        single = grade(f, "--json")
        assert marker not in single.stdout + single.stderr, name


# --- resume ------------------------------------------------------------------------------------------------
def test_rerun_after_limit_grades_only_what_is_missing(tmp_path):
    cls = make_class(tmp_path, {f"{c}.cu": REFUSED_INCLUDE + f"// {c}\n" for c in "abcde"})
    out = tmp_path / "out"
    r = grade("batch", cls, "--out", out, "--limit", "2", "--quiet")
    assert r.returncode == batch.EXIT_INCOMPLETE
    assert [row["id"] for row in jsonl(out / "results.jsonl")] == ["a", "b"]
    assert len(by_id(out)) == 2  # the gradebook of what is done is written anyway
    r = grade("batch", cls, "--out", out, "--quiet")
    assert r.returncode in (0, 3)
    assert [row["id"] for row in jsonl(out / "results.jsonl")] == list("abcde")  # nothing graded twice
    grade("batch", cls, "--out", out, "--quiet")
    assert len(jsonl(out / "results.jsonl")) == 5
    (cls / "c.cu").write_text(REFUSED_INCLUDE + "// changed\n")
    grade("batch", cls, "--out", out, "--quiet")
    assert [row["id"] for row in jsonl(out / "results.jsonl")][5:] == ["c"]
    grade("batch", cls, "--out", out, "--quiet", "--retry-errors")
    assert len(jsonl(out / "results.jsonl")) == 11
    with open(out / "results.jsonl", "ab") as f:
        f.write(b'{"id": "torn li')  # a kill in the middle of a write
    (cls / "a.cu").write_text(REFUSED_INCLUDE + "// changed again\n")
    grade("batch", cls, "--out", out, "--quiet")
    rows, bad = gb.load_rows(out / "results.jsonl")
    assert bad == 1 and rows[-1].id == "a" and len(rows) == 12


def _children(pid: int) -> list[int]:
    kids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(d.name))
    return kids


def test_killed_batch_resumes_and_leaves_no_worker_behind(tmp_path):
    cls = make_class(tmp_path, {"a.cu": REFUSED_INCLUDE, "b.cu": REFUSED_INCLUDE + "//b\n",
                                "zz_deep.cu": DATA / "deep_template.cu"})
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "grader.cli", "batch", str(cls), "--out", str(out), "--quiet",
                             "--compile-limit", "120"], cwd=ROOT)
    try:
        wait_until(lambda: (out / "results.jsonl").exists() and len(jsonl(out / "results.jsonl")) == 2)
        time.sleep(1.0)  # zz_deep is compiling now
        workers = _children(proc.pid)
        assert workers, "the batch should have a worker running"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert ended(*workers), "a worker outlived its batch"
    assert len(jsonl(out / "results.jsonl")) == 2
    r = grade("batch", cls, "--out", out, "--quiet", "--compile-limit", "2")
    assert r.returncode in (0, 3)
    rows = jsonl(out / "results.jsonl")
    assert [row["id"] for row in rows] == ["a", "b", "zz_deep"]
    assert "compile time limit exceeded" in rows[2]["reason"]


def test_interrupt_stops_workers_and_writes_what_is_done(tmp_path):
    cls = make_class(tmp_path, {"a.cu": REFUSED_INCLUDE, "zz_deep.cu": DATA / "deep_template.cu"})
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "grader.cli", "batch", str(cls), "--out", str(out), "--quiet",
                             "--compile-limit", "120"], cwd=ROOT)
    wait_until(lambda: (out / "results.jsonl").exists() and bool(jsonl(out / "results.jsonl")))
    time.sleep(1.0)
    workers = _children(proc.pid)
    assert workers, "the batch should have a worker running (zz_deep is compiling)"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == batch.EXIT_INCOMPLETE
    assert not any(alive(w) for w in workers)
    assert list(by_id(out)) == ["a"]


# --- shards and merge ------------------------------------------------------------------------------------
def test_shard_is_deterministic_and_covers_once():
    items = [batch.Item(id=f"s{i:02d}", path="") for i in range(10)]
    slices = [[it.id for it in batch.shard(list(reversed(items)), k, 3)] for k in (1, 2, 3)]
    assert slices[0] == ["s00", "s03", "s06", "s09"]
    assert sorted(sum(slices, [])) == [it.id for it in items]
    for bad in ("0/3", "4/3", "x", "1/0"):
        with pytest.raises(ValueError):
            batch.parse_shard(bad)


def test_shards_then_merge_give_one_gradebook(tmp_path):
    cls = make_class(tmp_path, {f"{c}.cu": REFUSED_INCLUDE + f"// {c}\n" for c in "abcdefg"})
    out = tmp_path / "out"
    seen = []
    for k in (1, 2, 3):
        r = grade("batch", cls, "--out", out, "--shard", f"{k}/3", "--quiet")
        assert r.returncode in (0, 3), r.stderr
        ids = [row["id"] for row in jsonl(out / f"results.shard-{k}-of-3.jsonl")]
        assert ids == list("abcdefg")[k - 1 :: 3]
        assert (out / f"gradebook.shard-{k}-of-3.csv").exists()
        seen += ids
    assert sorted(seen) == list("abcdefg")
    merged = tmp_path / "merged"
    r = grade("merge", merged, out)
    assert r.returncode == 0, r.stderr
    with open(merged / "gradebook.csv", newline="", encoding="utf-8-sig") as f:
        assert [row["id"] for row in csv.DictReader(f)] == list("abcdefg")
    assert "7 submissions" in (merged / "summary.md").read_text()
    assert grade("merge", merged, tmp_path / "nothing").returncode == 2


# --- the worker's limits and crashes (stand-in worker) ---------------------------------------------------
def test_limits_and_crashes_become_error_rows_and_the_batch_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(pool, "WORKER_COMMAND", [sys.executable, str(FAKE_WORKER)])
    cls = make_class(tmp_path, {"a.cu": "// FAKE: hang-setup\n", "b.cu": "// FAKE: hang-compile\n",
                                "c.cu": "// FAKE: hang-run\n", "d.cu": "// FAKE: segv\n", "e.cu": "// FAKE: exit\n",
                                "f.cu": "// fine\n"})
    out = tmp_path / "out"
    code = batch.main(["batch", str(cls), "--out", str(out), "--compile-limit", "1", "--run-limit", "1.5", "--quiet"])
    assert code in (0, 3)  # the hanging workers sleep an hour: each reason below says which limit ended it
    rows = by_id(out)
    assert rows["a"]["stage"] == "setup" and "did not start within 1.5 s" in rows["a"]["reason"]
    assert rows["b"]["stage"] == "compile" and "compile time limit exceeded" in rows["b"]["reason"]
    assert rows["c"]["stage"] == "run" and "did not finish within 1.5 s while verifying" in rows["c"]["reason"]
    assert rows["d"]["stage"] == "run" and "died during the run (SIGSEGV)" in rows["d"]["reason"]
    assert rows["e"]["reason"].endswith("(exit code 1): RuntimeError: boom in the grader")
    assert rows["f"]["reason"] == "fake result for f.cu"
    assert all(r["verdict"] == "error" for r in rows.values())
    assert not _children(os.getpid()) or all(not alive(p) for p in _children(os.getpid()))


def test_a_worker_stopped_while_measuring_counters_keeps_its_verdict_and_leaves_no_profiler(tmp_path, monkeypatch):
    monkeypatch.setattr(pool, "WORKER_COMMAND", [sys.executable, str(FAKE_WORKER)])
    monkeypatch.setattr(pool, "COUNTERS_LIMIT_S", 1.5)
    cls = make_class(tmp_path, {"a.cu": "// FAKE: hang-counters\n"})
    out = tmp_path / "out"
    code = batch.main(["batch", str(cls), "--out", str(out), "--counters", "--run-limit", "30", "--quiet"])
    assert code in (0, 3)
    row = by_id(out)["a"]
    assert row["verdict"] == "gold" and row["fraction"] == 0.96, row
    assert "ncu did not finish within 1.5 s" in row["report"]["counters"]["unavailable"]
    child = int((tmp_path / "child.pid").read_text())
    assert ended(child), "the profiler's process group outlived its worker"


def test_memory_limit_stops_an_exploding_compile(tmp_path):
    cls = make_class(tmp_path, {"deep.cu": DATA / "deep_template.cu", "ok.cu": REFUSED_INCLUDE})
    out = tmp_path / "out"
    r = grade("batch", cls, "--out", out, "--memory-limit", "0.4", "--compile-limit", "120", "--quiet")
    assert r.returncode in (0, 3)
    rows = by_id(out)
    assert rows["deep"]["stage"] == "compile"
    assert "memory limit exceeded: the grading process used more than 0.4 GiB while compiling" in rows["deep"]["reason"]
    assert rows["ok"]["stage"] == "source"


def test_a_worker_that_cannot_start_stops_the_batch_without_rows(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(pool, "WORKER_COMMAND", [sys.executable, "-c", "import sys; sys.exit('broken install')"])
    cls = make_class(tmp_path, {"a.cu": REFUSED_INCLUDE, "b.cu": REFUSED_INCLUDE})
    out = tmp_path / "out"
    assert batch.main(["batch", str(cls), "--out", str(out), "--quiet"]) == batch.EXIT_INCOMPLETE
    err = capsys.readouterr().err
    assert "the grading process failed to start" in err and "broken install" in err
    assert jsonl(out / "results.jsonl") == []


# --- usage errors ----------------------------------------------------------------------------------------
def test_usage_errors_exit_2(tmp_path):
    cls = make_class(tmp_path, {"a.cu": REFUSED_INCLUDE, "b.cu": REFUSED_INCLUDE})
    assert grade("batch", cls, "--shard", "3/2").returncode == 2
    assert grade("batch", cls, "--compile-limit", "0").returncode == 2
    r = grade("batch", cls / "a.cu", cls / "b.cu", "--format", "gradescope", "--out", tmp_path / "gs")
    assert r.returncode == 2 and "one submission" in r.stderr
    res = json.loads((tmp_path / "gs" / "results.json").read_text())
    assert res["score"] == 0.0 and "found 2 (a, b)" in res["output"]
    r = grade("batch", cls, "--format", "gradescope", "--out", tmp_path / "gs2")  # PATH: the student's folder
    assert r.returncode in (0, 3), r.stderr
    res = json.loads((tmp_path / "gs2" / "results.json").read_text())
    assert res["score"] == 0.0 and "class: student folder with 2 .cu files (class/a.cu, class/b.cu)" in res["output"]
    (tmp_path / "empty").mkdir()
    r = grade("batch", tmp_path / "empty", "--out", tmp_path / "o")
    assert r.returncode == 2 and "nothing to grade" in r.stderr
    store = gb.ResultStore(tmp_path / "locked" / "results.jsonl")
    try:
        r = grade("batch", cls, "--out", tmp_path / "locked")
        assert r.returncode == 2 and "another batch" in r.stderr
    finally:
        store.close()


def test_the_batch_own_files_are_not_in_the_resume_key():
    from grader.batch import worker

    own = {Path(m.__file__).relative_to(ROOT / "grader").as_posix() for m in (batch, pool, gb, worker)}
    assert own <= batch.plumbing_files()
    named = {name for name, _ in batch.digest_files(ROOT / "grader")}
    assert "grader/batch/__init__.py" in named and not {f"grader/{path}" for path in own} & named


def _copy_for_digest(tmp_path: Path) -> Path:
    """A copy of grader/ (without caches) under tmp_path (a grading reads nothing of reference_kernels/:
    tests/test_layers.py)."""
    return Path(shutil.copytree(ROOT / "grader", tmp_path / "grader", ignore=shutil.ignore_patterns("__pycache__")))


def test_the_digest_covers_every_grading_file_at_any_depth(tmp_path):
    grader_dir = _copy_for_digest(tmp_path)
    first = batch.grader_digest(grader_dir)
    assert first == batch.grader_digest(ROOT / "grader") == batch.grader_digest()

    def changed(path: Path, text: str = "\n// edited\n") -> bool:
        before = batch.grader_digest(grader_dir)
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)
        return batch.grader_digest(grader_dir) != before

    assert changed(grader_dir / "gpu" / "kernels" / "floor.cu")  # two folders down
    (grader_dir / "newstage").mkdir()  # a new stage subpackage
    (grader_dir / "newstage" / "__init__.py").write_text("")
    assert batch.grader_digest(grader_dir) != first
    assert changed(grader_dir / "newstage" / "__init__.py", "X = 1\n")
    (grader_dir / "newstage" / "deeper").mkdir()
    (grader_dir / "newstage" / "deeper" / "table.json").write_text("{}")
    assert changed(grader_dir / "newstage" / "deeper" / "table.json", " ")
    assert changed(grader_dir / "source" / "host_macros.json", " ")
    assert changed(grader_dir / "timing" / "page_kernels.py", "# edited\n")
    assert changed(grader_dir / "exercises" / "bias_gelu" / "chain.cu")
    for own in batch.plumbing_files():  # the batch's own modules do not change a grade
        assert not changed(grader_dir / own, "# edited\n"), own
    (grader_dir / "newstage" / "__pycache__").mkdir()
    (grader_dir / "newstage" / "__pycache__" / "x.py").write_text("")
    assert not changed(grader_dir / "newstage" / "__pycache__" / "x.py", "# a cache\n")


def test_result_keys_of_existing_settings_are_unchanged(monkeypatch):
    from grader.batch.protocol import BatchSettings

    # the keys main gave before the settings became a model (rows graded then still resume)
    monkeypatch.setattr(batch, "__version__", "v")
    monkeypatch.setattr(batch, "grader_digest", lambda: "d")
    alice = batch.Item(id="alice", path="class/alice.cu", sha256="ab" * 32)
    bob = batch.Item(id="bob", path="class/bob.zip", problem="class/bob.zip: an archive")
    limits = {"compile_limit": 5.0, "run_limit": 9.0, "memory_limit_gib": 1.0, "sandbox": False}
    key = batch.settings_for(BatchSettings(arch="sm_90", seed=7, **limits), ["NVIDIA H200", "NVIDIA H200"])
    assert batch.result_key(alice, key) == "c0868722bbdc33c225e6eaa09329d6459f8795f250c321996de0ada27c81b07c"
    key = batch.settings_for(BatchSettings(counters=True), [])
    assert batch.result_key(alice, key) == "c2c7693e77238e53bb59ed05f4962fd8dbf0cc96bbd6435d1ce799ed98995b81"
    key = batch.settings_for(BatchSettings(), [])
    assert batch.result_key(bob, key) == "3693deb2d2d107a263a9e9d776f2273641886e6a55d5386fb90e33c9ebb6bc7d"
    slow = batch.settings_for(BatchSettings(counters_when_slow=True), [])  # a new setting: a key of its own
    assert slow == {**key, "counters_when_slow": True} and batch.result_key(bob, slow) != batch.result_key(bob, key)


def test_resume_regrades_what_is_missing_asked_for_or_graded_without_a_gpu():
    items = [batch.Item(id=i, path=f"{i}.cu", key=i) for i in ("new", "gold", "error", "no-gpu", "busy")]
    known = {r.key: r for r in (_row("gold", "gold", "fine", 0.95), _row("error"), _row("no-gpu", "no-gpu"),
                                _row("busy", "busy"))}
    ids = lambda todo: [it.id for it in todo]  # noqa: E731
    todo, kept = batch.resume(items, known)
    assert ids(todo) == ["new"] and sorted(kept) == ["busy", "error", "gold", "no-gpu"]
    assert ids(batch.resume(items, known, retry_errors=True)[0]) == ["new", "error"]
    todo, kept = batch.resume(items, known, gpu_seen=True)
    assert ids(todo) == ["new", "no-gpu", "busy"] and sorted(kept) == ["error", "gold"]
    assert ids(batch.resume(items, known, regrade=True)[0]) == ids(items)
    items[1].submitted_at = "2024-01-01"  # a kept row carries the submitters the export names now
    assert batch.resume(items, known)[1]["gold"].submitted_at == "2024-01-01"


def test_exit_codes_are_documented():
    for code in ("0  every submission", "2  nothing graded", "3  no GPU", "4  incomplete"):
        assert code in batch.__doc__


# --- gradebook files -------------------------------------------------------------------------------------
def _row(id: str, verdict: str = "error", reason: str = "r", fraction: float | None = None) -> gb.BatchResult:
    report = GradeReport(file=f"{id}.cu", verdict=verdict, reason=reason, fraction=fraction)
    return gb.make_result(id=id, path=f"{id}.cu", key=id, sha256=None, report=report, grader_version="t")


def test_csv_neutralises_formulas_and_terminal_text_is_printable():
    text = gb.gradebook_csv([_row("=HYPERLINK(\"http://x\")"), _row("-2+3"), _row("ok", "gold", "fine", 0.95)])
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[1][0].startswith("'=") and rows[2][0].startswith("'-")
    assert rows[3][:4] == ["ok", "ok.cu", "gold", "0.950"]
    shown = markdown_cell("evil\x1b[31m|name\n")
    assert "\x1b" not in shown and "\n" not in shown and "\\|" in shown


def test_histogram_and_summary():
    rows = [_row(f"s{i}", "gold" if f >= 0.9 else "fail", "x", f) for i, f in enumerate([0.05, 0.55, 0.93, 0.97, 1.2])]
    h = gb.histogram([r.fraction for r in rows])
    lines = [ln for ln in h.splitlines() if " | " in ln]
    assert len(lines) == 21 and lines[19].startswith("0.95 - 1.00 |    1")
    assert lines[20].startswith("1.00 +      |    1")
    book = gb.build_gradebook(rows, "t", {})
    md = gb.summary_markdown(book)
    assert "| gold      |       3 |" in md and "0.90 - 0.95 |    1" in md


def test_progress_line_estimates_time_left():
    p = batch.Progress(total=10, already=2, slots=2, quiet=False, stream=io.StringIO())
    assert "estimating" in p.line(["alice"], left=8)
    p.durations = [10.0, 10.0]
    p.done = 2
    line = p.line(["alice", "bob"], left=4)
    assert line.startswith("grade batch: 4/10 (2 already graded); now: alice, bob") and "about 25 s left" in line


# --- Gradescope ------------------------------------------------------------------------------------------
def _verified(passed: bool) -> Verification:
    return Verification(rows=101, cols=97, passed=passed, total=9797,
                        message="correct" if passed else "wrong at (0, 1)")


@pytest.mark.parametrize(
    "verdict, stage, compiled, verification, score, statuses",
    [
        ("gold", "grade", True, [True], 10.0, ["passed", "passed", "passed"]),
        ("silver", "grade", True, [True], 8.0, ["passed", "passed", "passed"]),
        ("fail", "grade", True, [True], 5.0, ["passed", "passed", "failed"]),
        ("fail", "verify", True, [False], 1.0, ["passed", "failed", "failed"]),
        ("error", "compile", False, [], 0.0, ["failed", "failed", "failed"]),
        ("error", "run", True, [], 1.0, ["passed", "failed", "failed"]),
    ],
)
def test_gradescope_results(verdict, stage, compiled, verification, score, statuses):
    report = GradeReport(file="s.cu", verdict=verdict, stage=stage, reason="why", details="s.cu:3: error: x",
                         compile=CompileSummary(arch="sm_90", registers=20) if compiled else None,
                         verification=[_verified(v) for v in verification], fraction=0.95 if stage == "grade" else None)
    res = gradescope_results(report)
    assert res["score"] == score
    assert [t["status"] for t in res["tests"]] == statuses
    assert sum(t["max_score"] for t in res["tests"]) == 10.0
    assert all({"name", "score", "max_score", "status", "output"} <= set(t) for t in res["tests"])
    assert res["output"].startswith(f"Verdict: {verdict.upper()}")
    if not compiled:
        assert "s.cu:3: error: x" in res["tests"][0]["output"]


def test_gradescope_format_writes_results_json(tmp_path, no_gpu):
    out = tmp_path / "autograder" / "results"
    r = grade("batch", SUBS / "gold_float4.cu", "--format", "gradescope", "--out", out, "--quiet")
    assert r.returncode == 3
    res = json.loads((out / "results.json").read_text())
    assert res["output"].startswith("not graded: this autograder has no GPU") and res["score"] == 0.0
    assert [(t["status"], t["max_score"]) for t in res["tests"]] == [("passed", 0.0)]  # the static checks: no points



def test_gradescope_format_on_one_students_folder_ignores_a_cpp_beside_the_cu(tmp_path, no_gpu):
    cls = make_class(tmp_path, {"sub/kernel.cu": SUBS / "gold_float4.cu", "sub/main.cpp": "int main() {}\n",
                                "sub/utils.h": "\n"})
    out = tmp_path / "gs"
    assert grade("batch", cls / "sub", "--format", "gradescope", "--out", out, "--quiet").returncode == 3
    assert json.loads((out / "results.json").read_text())["output"].startswith("not graded: this autograder has no")
    (cls / "sub" / "kernel.cu").unlink()
    (cls / "sub" / "utils.h").unlink()
    grade("batch", cls / "sub", "--format", "gradescope", "--out", out, "--quiet")
    assert "main.cpp: not a .cu file; rename it main.cu" in json.loads((out / "results.json").read_text())["output"]

# --- the NVRTC sandbox -----------------------------------------------------------------------------------
def test_without_a_sandbox_the_batch_refuses_unless_unsandboxed(tmp_path, monkeypatch, capsys):
    from grader.compile import sandbox

    off = sandbox.SandboxState(False, 0, "this Linux kernel has no Landlock")
    monkeypatch.setattr(sandbox, "state", lambda: off)
    monkeypatch.setattr(pool, "WORKER_COMMAND", [sys.executable, str(FAKE_WORKER)])
    cls = make_class(tmp_path, {"a.cu": REFUSED_INCLUDE})
    out = tmp_path / "out"
    assert batch.main(["batch", str(cls), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "cannot be sandboxed here (this Linux kernel has no Landlock)" in err and "--unsandboxed" in err
    assert not (out / "results.jsonl").exists()
    batch.main(["batch", str(cls), "--out", str(out), "--quiet", "--unsandboxed"])
    assert "without the NVRTC sandbox" in capsys.readouterr().err
    book = gb.Gradebook.model_validate_json((out / "gradebook.json").read_text())
    assert book.settings["sandbox"] == "off: this Linux kernel has no Landlock"
    assert [r["id"] for r in jsonl(out / "results.jsonl")] == ["a"]


def test_a_worker_compiles_nothing_when_the_sandbox_it_needs_is_missing(tmp_path, monkeypatch):
    from grader.batch import worker
    from grader.compile import sandbox

    monkeypatch.setattr(sandbox, "state", lambda: sandbox.SandboxState(False, 0, "no Landlock (test)"))
    monkeypatch.setattr(sandbox, "_required", False)
    sent = []
    channel = type("C", (), {"send": lambda self, event: sent.append(event)})()
    src = tmp_path / "a.cu"
    src.write_bytes(b"__global__ void biasGeluFused() {}\n")
    job = Job(path=str(src), sha256=hashlib.sha256(src.read_bytes()).hexdigest(), name="a.cu", display="a.cu",
              settings=BatchSettings(arch=None, seed=None, sandbox=True))
    monkeypatch.chdir(tmp_path)
    worker.grade_job(job, channel)
    result = json.loads(event_line(sent[-1]))["report"]
    assert result["verdict"] == "error" and result["stage"] == "grader"
    assert "sandbox is not available: no Landlock (test)" in result["reason"] and "not compiled" in result["reason"]


def test_gradescope_results_carry_the_leaderboard_and_execution_time():
    from grader.output.gradescope import LEADERBOARD_NAME

    gold = GradeReport(file="s.cu", verdict="gold", stage="grade", reason="0.951", fraction=0.95123,
                       compile=CompileSummary(arch="sm_90", registers=20), verification=[_verified(True)])
    res = gradescope_results(gold, execution_time=2.3456)
    assert res["leaderboard"] == [{"name": LEADERBOARD_NAME, "value": 0.951, "order": "desc"}]
    assert res["execution_time"] == 2.35 and res["score"] == 10.0
    assert "execution_time" not in gradescope_results(gold)
    wrong = GradeReport(file="s.cu", verdict="fail", stage="verify", reason="wrong", verification=[_verified(False)],
                        compile=CompileSummary(arch="sm_90", registers=20))
    busy = GradeReport(file="s.cu", verdict="busy", stage="time", reason="busy", fraction=None)
    for report in (wrong, busy):  # not timed, or not graded: no place on the leaderboard
        assert "leaderboard" not in gradescope_results(report, execution_time=1.0)
    assert gradescope_results(busy, execution_time=1.0)["execution_time"] == 1.0


# --- what a fresh reviewer found: limits, paths, the output folder, a closed stderr ----------------------
@pytest.mark.parametrize("option", [["--compile-limit", "nan"], ["--run-limit", "inf"], ["--memory-limit", "nan"],
                                    ["--limit", "0"], ["--out", ""]])
def test_limits_that_would_switch_themselves_off_are_usage_errors(tmp_path, option, capsys):
    cls = make_class(tmp_path, {"a.cu": REFUSED_INCLUDE})
    with pytest.raises(SystemExit) as exit_:
        batch.main(["batch", str(cls), "--out", str(tmp_path / "out"), *option])
    assert exit_.value.code == EXIT_INPUT and "error:" in capsys.readouterr().err


def test_a_class_path_that_does_not_exist_grades_nothing(tmp_path, capsys):
    assert batch.main(["batch", str(tmp_path / "typo"), "--out", str(tmp_path / "out")]) == EXIT_INPUT
    assert "no such file or folder" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_the_output_folder_inside_the_class_folder_is_no_student(tmp_path):
    cls = make_class(tmp_path, {"a.cu": REFUSED_INCLUDE})
    for _ in range(2):  # the second run finds OUT inside the class folder
        assert batch.main(["batch", str(cls), "--out", str(cls / "results"), "--quiet"]) in (0, 3)
    assert list(by_id(cls / "results")) == ["a"]


def test_an_output_path_that_is_a_file_is_a_usage_error_for_batch_and_merge(tmp_path, capsys):
    cls = make_class(tmp_path, {"a.cu": REFUSED_INCLUDE})
    taken = tmp_path / "taken"
    taken.write_text("not a folder")
    assert batch.main(["batch", str(cls), "--out", str(taken)]) == EXIT_INPUT
    assert "is a file, not a folder" in capsys.readouterr().err
    assert batch.main(["batch", str(cls), "--out", str(tmp_path / "out"), "--quiet"]) in (0, 3)
    assert batch.main(["merge", str(taken / "sub"), str(tmp_path / "out")]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert err.startswith("grade merge:") and "is a file, not a folder" in err


def test_a_reader_that_goes_away_does_not_stop_the_batch(tmp_path):
    cls = make_class(tmp_path, {"a.cu": REFUSED_INCLUDE, "b.cu": REFUSED_INCLUDE + "// b\n",
                                "c.cu": REFUSED_INCLUDE + "// c\n"})
    out = tmp_path / "out"
    batch_ = subprocess.Popen([sys.executable, "-m", "grader.cli", "batch", str(cls), "--out", str(out)], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    batch_.stderr.readline()  # `2>&1 | head -1`: one line read, then the pipe closed
    batch_.stderr.close()
    assert batch_.wait(timeout=300) in (0, 3)
    assert sorted(by_id(out)) == ["a", "b", "c"]
