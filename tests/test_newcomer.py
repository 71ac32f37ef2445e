"""A newcomer's first minutes (issue 9, part 6): no POSIX-only import on the single-file path, the
histogram's bins, a spreadsheet-safe CSV."""

from __future__ import annotations

import subprocess
import sys

from grader import gradebook as gb
from grader.errors import EXIT_NO_GPU
from grader.report import GradeReport

from conftest import ROOT, SUBMISSIONS


GOLD = str(SUBMISSIONS / "gold_float4.cu")


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT)


def test_the_single_file_path_needs_no_posix_only_module():
    code = ("import sys; sys.modules['fcntl'] = None; sys.modules['resource'] = None\n"
            "from grader.cli import main; sys.exit(main(sys.argv[1:]))")
    r = run("-c", code, GOLD, "--format", "gradescope")
    assert r.returncode in (0, EXIT_NO_GPU) and "Traceback" not in r.stderr, r.stderr


def test_histogram_bins_split_at_the_grade_thresholds():
    assert {0.75, 0.9} <= set(gb.HISTOGRAM_BINS)
    lines = gb.histogram([0.7499, 0.75, 0.8999, 0.9]).splitlines()
    assert any(ln.startswith("0.70 - 0.75 |    1") for ln in lines)
    assert any(ln.startswith("0.75 - 0.80 |    1") for ln in lines)
    assert any(ln.startswith("0.80 - 0.90 |    1") for ln in lines)
    assert any(ln.startswith("0.90 - 1.00 |    1") for ln in lines)


def test_gradebook_csv_opens_in_a_spreadsheet_with_non_ascii_names(tmp_path):
    report = GradeReport(file="z.cu", verdict="gold", reason="fine", fraction=0.95)
    rows = [gb.make_result(id="Zoë Çelik 李雷", path="z.cu", key="k", sha256=None, report=report,
                           grader_version="t")]
    paths = gb.write_outputs(gb.build_gradebook(rows, "t", {}), tmp_path)
    raw = paths["csv"].read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and "Zoë Çelik 李雷".encode() in raw
