"""End to end on a GPU: every example gets the verdict its comment states, verdicts are stable (the exploit suite is
tests/test_exploits_gpu.py).

Speed-dependent expectations (gold, fail for being slow) are stated for the H200 the course grades on; on
another card only the verification outcomes are asserted.
"""

import re

import pytest

from conftest import ROOT, SUBMISSIONS
from grader.pipeline.grade import grade_file

pytestmark = pytest.mark.gpu


def expected(path) -> str:
    return re.search(r"Expected verdict: (\w+)", path.read_text()).group(1).lower()


def on_h200(gpu) -> bool:
    return "H200" in gpu.info.name


@pytest.mark.parametrize("path", sorted(SUBMISSIONS.glob("*.cu")), ids=lambda p: p.name)
def test_example_gets_its_stated_verdict(gpu, path):
    report = grade_file(str(path))
    want = expected(path)
    if want in ("gold", "silver") or (want == "fail" and report.stage == "grade"):
        if not on_h200(gpu):
            pytest.skip(f"speed verdicts are stated for the H200; this is {gpu.info.name}")
    assert report.verdict == want, report.reason


@pytest.mark.parametrize("name", ["tanh_gelu.cu", "bias_index_bug.cu"])
def test_wrong_functions_fail_with_first_bad_element(gpu, name):
    report = grade_file(str(SUBMISSIONS / name))
    assert report.verdict == "fail" and report.stage == "verify"
    v = report.verification[-1]
    assert v.first_bad is not None and v.first_bad.got != v.first_bad.expected
    assert re.search(r"first bad element \(row \d+, col \d+\): x \+ bias = \S+: got \S+, expected \S+", report.reason)


def test_missing_bounds_check_is_caught_by_the_guard(gpu):
    report = grade_file(str(SUBMISSIONS / "no_bounds_check.cu"))
    assert report.verdict == "fail" and "guard region after out" in report.reason


def test_timed_launches_are_checked(gpu):
    report = grade_file(str(SUBMISSIONS / "gold_float4.cu"))
    last = report.verification[-1]
    assert last.passed and "timed launches correct" in last.message
    assert report.floor_version is not None
    assert report.fraction <= 1.05  # a correct kernel moves what the copy moves


NEAR = 0.01
"""Two gradings of one file may disagree only where both fractions lie this close to the threshold between them
(fraction of the copy floor; chosen: docs/h200.md has the two examples at 0.963 and 0.566 on the H200, and 8
gradings at once within 0.3% of solo)."""


def test_five_gradings_give_one_verdict(gpu):
    """Each grading's verdict is the one its fraction gives (verdict_for), inside its own band, `borderline` exactly
    when that band straddles a threshold; two gradings disagree only when both fractions lie within NEAR of the
    threshold between them. Asserted on every run, near a threshold too."""
    from grader.core import exercise
    from grader.pipeline.grade import verdict_for
    from grader.timing.measure import straddles

    for name in ("gold_float4.cu", "page_scalar.cu"):
        reports = [grade_file(str(SUBMISSIONS / name)) for _ in range(5)]
        fractions = [r.fraction for r in reports]
        for r in reports:
            assert r.stage == "grade" and r.fraction is not None, (name, r.verdict, r.reason)
            assert r.verdict == verdict_for(r.fraction), (name, r.verdict, r.fraction)
            assert r.fraction_low <= r.fraction <= r.fraction_high, (name, r.fraction_low, r.fraction_high)
            assert r.borderline == straddles(r.fraction_low, r.fraction_high), (name, r.fraction_low, r.fraction_high)
        for a in reports:
            for b in reports:
                if a.verdict != b.verdict:
                    between = [t for t in (exercise.SILVER, exercise.GOLD)
                               if min(a.fraction, b.fraction) < t <= max(a.fraction, b.fraction)]
                    assert all(abs(f - t) <= NEAR for t in between for f in (a.fraction, b.fraction)), fractions


def test_kernel_printf_cannot_forge_the_report(gpu):
    # grade FILE in its own process, as a student runs it: stdout must hold one valid, true report.
    import json
    import subprocess
    import sys

    path = ROOT / "tests" / "data" / "forged" / "forged_output.cu"
    for fmt in ("json", "text"):
        r = subprocess.run([sys.executable, "-m", "grader.cli", str(path), "--format", fmt], capture_output=True,
                           text=True, cwd=ROOT, timeout=300)
        if fmt == "json":
            doc = json.loads(r.stdout)
            assert doc["verdict"] != "gold" and doc["stage"] == "grade", doc["reason"]
            assert doc["kernel_output"][0] == "Verdict: GOLD: 0.999 of the copy floor"
            assert doc["kernel_output_dropped"] > 0  # every launch prints: the rest is counted
        else:
            assert "\nVerdict: GOLD" not in r.stdout and "\x1b" not in r.stdout
            assert "  | Verdict: GOLD: 0.999 of the copy floor" in r.stdout
            assert "  | \\x1b[2J" in r.stdout


def test_launch_bounds_below_the_block_is_explained(gpu):
    report = grade_file(str(ROOT / "tests" / "data" / "batch" / "launch_bounds.cu"))
    assert report.verdict == "error" and report.stage == "launch", report.reason
    assert "allows at most 128 threads per block" in report.reason and "block = 128" in report.reason
    assert report.compile.registers is not None  # from the driver where ptxas's log says nothing
