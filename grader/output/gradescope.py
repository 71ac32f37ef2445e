"""Gradescope's results.json for one submission (`grade FILE --format gradescope`, `grade batch --format
gradescope`) and the score out of 10 a report earns (the batch's scores CSV uses it).

Format: Gradescope's autograder specification ("Output format": score, execution_time in seconds, output, tests
with name, score, max_score, status, output, visibility; and "Leaderboards": a top-level `leaderboard` list of
{name, value, order}). The leaderboard holds the fraction of the copy floor of a correct, timed kernel (higher
ranks higher); execution_time is the grading's wall time where the caller measured it. A report that grades
nothing (no GPU, a busy GPU, the grader's own failure) is "not graded" with no points, never a zero presented as
the student's.

Gradescope's routes, for the instructor: docs/batch.md.
"""

from __future__ import annotations

import math

from grader.core import exercise
from grader.core.errors import NOT_GRADED, Stage
from grader.output.report import GradeReport

POINTS_COMPILE = 1.0
POINTS_CORRECT = 4.0
POINTS_SPEED = {"gold": 5.0, "silver": 3.0}
"""Gradescope score out of 10: compiles and matches the launch (1), correct at every verified shape (4),
speed: gold 5, silver 3, a correct but slow kernel 0."""


NOT_GRADED_NO_GPU = "not graded: this autograder has no GPU"
LEADERBOARD_NAME = "Fraction of the copy floor"


def is_graded(report: GradeReport) -> bool:
    """False for a report that grades nothing: no GPU (static checks only), a busy GPU (the verdict was
    withheld), or the grader's own failure."""
    return report.verdict not in ("no-gpu", "busy") and not (report.verdict == "error" and report.stage in NOT_GRADED)


def gradescope_score(report: GradeReport) -> float | None:
    """The score out of 10 that gradescope_results gives `report`; None when it is not graded (is_graded)."""
    return _results(report)["score"] if is_graded(report) else None


def gradescope_results(report: GradeReport, execution_time: float | None = None) -> dict:
    """Gradescope's results.json for one submission: {"score", "output", "tests": [...]}, each test {"name",
    "score", "max_score", "status": "passed"|"failed", "output"}, plus "execution_time" (seconds, 2 decimals)
    when `execution_time` is given, and "leaderboard" ([{"name": LEADERBOARD_NAME, "value": the fraction to 3
    decimals, "order": "desc"}]) for a correct kernel that was timed. Scores are out of 10 (see POINTS_*).
    Outputs hold the grader's own messages only. A report that grades nothing (no GPU, the grader's own
    failure) gives gradescope_not_graded's results: "not graded", and no points (and no leaderboard)."""
    results = _results(report)
    if execution_time is not None and math.isfinite(execution_time):
        results["execution_time"] = round(max(0.0, execution_time), 2)
    if is_graded(report) and report.stage == Stage.GRADE and report.fraction is not None \
            and math.isfinite(report.fraction):
        results["leaderboard"] = [{"name": LEADERBOARD_NAME, "value": round(report.fraction, 3), "order": "desc"}]
    return results


def _results(report: GradeReport) -> dict:
    """gradescope_results without execution_time and leaderboard."""
    if report.verdict == "no-gpu":
        return gradescope_not_graded(
            f"{NOT_GRADED_NO_GPU}: correctness and speed need one, so no score is given here. What did run: "
            f"{report.reason}", static_checks=_reason_and_details(report))
    if report.verdict == "busy":
        return gradescope_not_graded(report.reason)
    if not is_graded(report):
        return gradescope_not_graded(f"not graded: the grader failed here, not your submission: {report.reason}")
    compiled = report.compile is not None and report.stage not in (Stage.SOURCE, Stage.COMPILE, Stage.CONTRACT,
                                                                   Stage.INPUT)
    ran = report.verification
    correct = compiled and bool(ran) and all(v.passed for v in ran) and report.verdict in ("gold", "silver", "fail") \
        and report.stage == Stage.GRADE
    tests = []
    if compiled:
        compile_out = f"compiled for {report.compile.arch}: {report.compile.registers} registers"
    else:
        compile_out = _reason_and_details(report)
    tests.append(_gs_test("Compiles, with the launch's parameter list", POINTS_COMPILE if compiled else 0.0,
                          POINTS_COMPILE, compiled, compile_out))
    if correct:
        correct_out = "\n".join(v.message for v in ran)
    elif report.verdict == "no-gpu":
        correct_out = "not run: the grading machine has no GPU (" + report.reason + ")"
    elif not compiled:
        correct_out = "not run: the kernel did not compile or does not match the launch"
    else:
        correct_out = _reason_and_details(report)
    tests.append(_gs_test("Correct output (ragged shapes, guard regions, every timed launch)",
                          POINTS_CORRECT if correct else 0.0, POINTS_CORRECT, correct, correct_out))
    speed = POINTS_SPEED.get(report.verdict, 0.0) if correct else 0.0
    if correct:
        speed_out = f"{report.verdict.upper()}: {report.reason}"
        if report.borderline:
            speed_out += " (borderline: the measurement's band straddles a threshold)"
    else:
        speed_out = "not timed: the kernel must be correct first"
    tests.append(_gs_test(f"Bandwidth: {exercise.THRESHOLDS_TEXT} of the copy floor", speed,
                          max(POINTS_SPEED.values()), speed > 0, speed_out))
    flags = "".join(f"\nFlag ({f.kind}): {f.message}" for f in report.flags)
    hints = "".join(f"\nHint: {h}" for h in report.hints)
    return {
        "score": sum(t["score"] for t in tests),
        "output": f"Verdict: {report.verdict.upper()}: {report.reason}{flags}{hints}",
        "tests": tests,
    }


def _reason_and_details(report: GradeReport) -> str:
    return report.reason + ("\n" + report.details if report.details else "")


def gradescope_not_graded(message: str, static_checks: str = "") -> dict:
    """Gradescope's results.json for a submission the grader could not grade here (no GPU, an incomplete
    install, its own CUDA call failing): the output says "not graded" with `message`, and no test is worth a
    point (max_score 0; Gradescope needs a number, so the score is 0 out of 0). `static_checks`, when given,
    becomes a test saying what did pass. `extra_data.graded` is false."""
    tests = [_gs_test("Static checks (compiles, parameter list)", 0.0, 0.0, True, static_checks)] if static_checks \
        else []
    return {"score": 0.0, "output": message, "tests": tests, "extra_data": {"graded": False}}


def gradescope_refusal(message: str) -> dict:
    """Gradescope's results.json for a submission that could not be graded at all (no file, several files):
    score 0 and the message."""
    return {"score": 0.0, "output": message,
            "tests": [_gs_test("A single .cu submission", 0.0, POINTS_COMPILE, False, message)]}


def _gs_test(name: str, score: float, max_score: float, passed: bool, output: str) -> dict:
    return {"name": name, "score": score, "max_score": max_score, "status": "passed" if passed else "failed",
            "output": output, "visibility": "visible"}
