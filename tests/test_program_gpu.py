"""Whole programs on a GPU (issue 11): the page-style program gets the same verdict as its kernel alone, with
the fraction within 2%; every program of the corpus that is not refused is verified correct and timed; the
refused ones stop at the source stage."""

import re

import pytest

from conftest import ROOT
from grader.pipeline.grade import grade_file

pytestmark = pytest.mark.gpu
PROGRAMS = ROOT / "tests" / "data" / "programs"


def test_a_whole_program_is_graded_like_its_kernel_alone(gpu):
    alone = grade_file(str(PROGRAMS / "elementwise_kernel_only.cu"))
    program = grade_file(str(PROGRAMS / "elementwise.cu"))
    assert program.program is not None and "kept kInvSqrt2, geluErf" in program.program.summary
    assert alone.program is None
    assert program.verdict == alone.verdict and program.stage == alone.stage == "grade", (program.reason, alone.reason)
    assert program.fraction == pytest.approx(alone.fraction, rel=0.02)


@pytest.mark.parametrize("path", sorted(PROGRAMS.glob("*.cu")), ids=lambda p: p.name)
def test_every_program_of_the_corpus(gpu, path):
    report = grade_file(str(path))
    first = path.read_text().splitlines()[0]
    if "refused" in first:
        assert report.verdict == "error" and report.stage == "source", report.reason
        quoted = re.search(r'"(.+)"', first)
        assert quoted is None or quoted.group(1).split("`")[1] in report.reason, report.reason
    else:
        assert report.stage == "grade" and report.verdict in ("gold", "silver", "fail"), report.reason
        assert all(v.passed for v in report.verification)
