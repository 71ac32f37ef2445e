"""A newcomer's first minutes (issue 9, part 6): --version and `python -m grader`, two files pointed to `grade
batch`, a .cpp or .c file refused, "Seed:" only when inputs were drawn, versions in the text report, the stage
line on a terminal only, no POSIX-only import on the single-file path, the declared dependencies, the
histogram's bins, a spreadsheet-safe CSV, the Python API, and an sdist that holds what its tests need."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tarfile

import pytest

import grader
import grader.pipeline.grade
from conftest import ROOT, SUBMISSIONS
from grader.batch import gradebook as gb
from grader.check.verify import Verification
from grader.cli import main
from grader.core.errors import EXIT_INPUT, EXIT_NO_GPU, NoGpuError
from grader.output.report import GradeReport, render_text
from grader.output.terminal import StageLine

GOLD = str(SUBMISSIONS / "gold_float4.cu")


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT)


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.strip() == f"grade {grader.__version__}"


def test_python_dash_m_grader_is_the_grade_command():
    r = run("-m", "grader", "--version")
    assert r.returncode == 0 and r.stdout.strip() == f"grade {grader.__version__}"
    r = run("-m", "grader", "does/not/exist.cu")
    assert r.returncode == EXIT_INPUT and "no such file" in r.stderr


def test_two_files_point_to_grade_batch(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["a.cu", "b.cu"])
    err = capsys.readouterr().err
    assert exit_.value.code == EXIT_INPUT and "grade batch a.cu b.cu --out results" in err


@pytest.mark.parametrize("name, kind", [("k.cpp", "a C++ file (.cpp)"), ("k.c", "a C file (.c)"),
                                        ("k.cuh", "a C++ file (.cuh)"), ("kernel", "no extension")])
def test_a_file_that_is_not_cu_is_refused(tmp_path, capsys, name, kind):
    p = tmp_path / name
    p.write_text((SUBMISSIONS / "gold_float4.cu").read_text())
    assert main([str(p)]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert kind in err and "give the .cu file" in err


def test_seed_only_when_inputs_were_drawn():
    report = GradeReport(file="s.cu", verdict="no-gpu", reason="no GPU", seed=42)
    assert "Seed:" not in render_text(report)
    report.verification.append(Verification(rows=101, cols=97, passed=False, total=9797, message="wrong"))
    assert "Seed: 42 (replay with --seed 42)" in render_text(report)


def test_versions_in_the_text_report(monkeypatch, capsys):
    monkeypatch.setattr(grader.pipeline.grade, "open_gpu",
                        lambda device_id=0: (_ for _ in ()).throw(NoGpuError("test")))
    assert main([GOLD]) == EXIT_NO_GPU
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("Versions:"))
    assert f"grader {grader.__version__}" in line and "cuda-core" in line and "nvrtc" in line
    assert "Seed:" not in out


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_stage_line_on_a_terminal_only(capsys):
    tty = Tty()
    with StageLine("s.cu", tty) as line:
        line("compile")
        assert "grade: compiling s.cu ..." in tty.getvalue()
        line("time")
    assert tty.getvalue().endswith("\r\x1b[K") and "timing" in tty.getvalue()
    pipe = io.StringIO()
    with StageLine("s.cu", pipe) as line:
        line("compile")
    assert pipe.getvalue() == ""
    assert main([str(SUBMISSIONS / "compile_error.cu")]) == 1
    assert "\r" not in capsys.readouterr().err  # stderr is not a terminal here


def test_the_single_file_path_needs_no_posix_only_module():
    code = ("import sys; sys.modules['fcntl'] = None; sys.modules['resource'] = None\n"
            "from grader.cli import main; sys.exit(main(sys.argv[1:]))")
    r = run("-c", code, GOLD, "--format", "gradescope")
    assert r.returncode in (0, EXIT_NO_GPU) and "Traceback" not in r.stderr, r.stderr


def test_cuda_bindings_is_a_declared_dependency():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(dep.startswith("cuda-bindings") for dep in project["dependencies"])


def test_histogram_bins_are_equal_and_split_at_the_grade_thresholds():
    lines = gb.histogram([0.7499, 0.75, 0.8999, 0.9, 0.1, 1.2]).splitlines()
    bins = [ln for ln in lines if " | " in ln]
    assert len(bins) == 21 and bins[0].startswith("0.00 - 0.05 |    0") and bins[-1].startswith("1.00 +")
    widths = {round(float(ln.split()[2]) - float(ln.split()[0]), 9) for ln in bins[:-1]}
    assert widths == {gb.BIN_WIDTH}
    assert lines.index("------------ silver from 0.75 ------------") == lines.index(
        next(ln for ln in lines if ln.startswith("0.75 - 0.80 |    1"))) - 1
    assert lines.index("------------ gold from 0.90 ------------") == lines.index(
        next(ln for ln in lines if ln.startswith("0.90 - 0.95 |    1"))) - 1
    assert any(ln.startswith("0.70 - 0.75 |    1") for ln in lines)
    assert any(ln.startswith("0.85 - 0.90 |    1") for ln in lines)
    assert bins[-1].startswith("1.00 +      |    1")


def test_gradebook_csv_opens_in_a_spreadsheet_with_non_ascii_names(tmp_path):
    report = GradeReport(file="z.cu", verdict="gold", reason="fine", fraction=0.95)
    rows = [gb.make_result(id="Zoë Çelik 李雷", path="z.cu", key="k", sha256=None, report=report,
                           grader_version="t")]
    paths = gb.write_outputs(gb.build_gradebook(rows, "t", {}), tmp_path)
    raw = paths["csv"].read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and "Zoë Çelik 李雷".encode() in raw


def test_python_api_for_notebooks():
    code = ("import sys, grader; assert 'grader.pipeline.grade' not in sys.modules and 'numpy' not in sys.modules\n"
            "from grader import grade_file, render_text, GradeReport\n"
            f"r = grade_file({GOLD!r}); assert isinstance(r, GradeReport)\n"
            "print(r.verdict); print(render_text(r).splitlines()[0])")
    r = run("-c", code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] in ("gold", "silver", "fail", "no-gpu")
    assert "gold_float4.cu: biasGeluFused" in r.stdout
    assert set(grader.__all__) >= {"grade_file", "render_text", "GradeReport"}
    with pytest.raises(AttributeError):
        grader.not_a_name  # noqa: B018


def test_sdist_holds_what_its_tests_need(tmp_path):
    pytest.importorskip("setuptools")
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".venv*", ".git", "__pycache__", "*.egg-info", "build",
                                                             "dist", "results", ".pytest_cache"))
    code = "from setuptools import build_meta; print(build_meta.build_sdist('dist'))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=src, timeout=300)
    if r.returncode != 0 and "No module named" in r.stderr:
        pytest.skip(f"setuptools cannot build here: {r.stderr.strip().splitlines()[-1]}")
    assert r.returncode == 0, r.stderr
    with tarfile.open(src / "dist" / r.stdout.strip().splitlines()[-1]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    needed = {"tests/conftest.py", "tests/fake_gpu.py", "tests/fake_worker.py", "benchmarks/reference_perf.py",
              "benchmarks/batch_throughput.py", "grader/gpu/kernels/inputs.cu", "grader/exercises/rope/rope.cu",
              "reference_kernels/gelu_bf16.cu"}
    needed |= {str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py")}
    needed |= {str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "data").rglob("*.cu")}
    needed |= {str(p.relative_to(ROOT)) for p in SUBMISSIONS.glob("*.cu")}
    assert needed - names == set()


# --- the supported Pythons, the tests' clocks and the repository's own notes -----------------------------
def supported_pythons() -> tuple[int, int]:
    """(oldest, newest) minor version of Python 3 that pyproject.toml admits (requires-python >=3.A,<3.B)."""
    import re

    spec = re.search(r'^requires-python = "(.*)"$', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    low, below = re.fullmatch(r">=3\.(\d+),<3\.(\d+)", spec).groups()
    return int(low), int(below) - 1


def test_the_python_running_the_tests_is_one_the_package_admits_and_the_readme_names():
    oldest, newest = supported_pythons()
    assert oldest <= sys.version_info[1] <= newest and sys.version_info[0] == 3
    readme = (ROOT / "README.md").read_text()
    assert f"Python 3.{oldest} to 3.{newest}" in readme
    classifiers = (ROOT / "pyproject.toml").read_text()
    assert all(f'"Programming Language :: Python :: 3.{m}"' in classifiers for m in range(oldest, newest + 1))
    ci = (ROOT / ".ci" / "run").read_text()
    assert "requires-python" in ci and "OLDEST" in ci and "NEWEST" in ci  # both ends, read from pyproject.toml


def test_no_test_reads_a_clock():
    """Speed goals live in benchmarks/: a test never compares a wall-clock time (one that did failed on a
    loaded 2-core machine). Waits go through conftest.wait_until (a hang guard), linear time through
    conftest.assert_linear (a ratio of CPU times)."""
    import ast

    clocks = {"time", "monotonic", "perf_counter", "process_time", "time_ns", "monotonic_ns", "perf_counter_ns"}
    found = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in clocks and getattr(node.value, "id", "") == "time":
                found.append(f"{path.name}:{node.lineno}: time.{node.attr}")
            if isinstance(node, ast.ImportFrom) and node.module == "time":
                found.append(f"{path.name}:{node.lineno}: from time import ...")
    assert not found, "\n".join(found)


def test_nothing_in_the_repository_points_outside_it():
    """No path outside the repository (a clone has nothing beside it): facts the code relies on are the
    project's own notes (docs/h200.md)."""
    tracked = subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=ROOT)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout (an sdist): the files to check are the repository's")
    needles = ("../" + "shared", "/" + "work/")  # split, so that this file does not name them
    outside = [name for name in tracked.stdout.splitlines() if (ROOT / name).is_file()
               and any(n in (ROOT / name).read_bytes().decode("utf-8", "replace") for n in needles)]
    assert outside == [], outside
