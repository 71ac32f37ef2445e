"""The student's text report leads with what to do (grader.output.report.render_text, first_step; issue 31): the verdict
on the line after the file's, then the first thing to do (the top-ranked hint, or a "Next:" sentence), then the
evidence; notes and flags on the part-3 row and sentence only once the output is right. Reports of the H200 class
(tests/h200_class.py) and of hand-made cases."""

from __future__ import annotations

import pytest

from grader.feedback.worth import Hint
from grader.output.report import GradeReport, first_step, outcome, output_right, render_text
from grader.source.claims import NOTE_KINDS, Flag
from h200_class import h200_class


@pytest.fixture(scope="module")
def reports() -> dict[str, GradeReport]:
    """One report of each outcome of the H200 class (the first row of each), keyed by outcome."""
    out: dict[str, GradeReport] = {}
    for row in h200_class():
        out.setdefault(outcome(row.verdict, row.stage), row.report)
    return out


def test_the_class_has_every_outcome_a_student_can_get(reports):
    assert set(reports) == {"gold", "silver", "slow", "wrong", "error", "grader", "busy"}


@pytest.mark.parametrize("kind", ["gold", "silver", "slow", "wrong", "error", "grader", "busy"])
def test_the_verdict_is_the_second_line_and_the_first_thing_to_do_the_third(reports, kind):
    r = reports[kind]
    lines = render_text(r).splitlines()
    assert lines[0].endswith(": biasGeluFused")
    assert lines[1].startswith(f"Verdict: {r.verdict.upper()}")
    step, hint = first_step(r)
    assert lines[2] == (f"Next: {step}." if step else f"Hint: {hint}")
    evidence = lines.index("", 2)  # the lead: what to do, the verdict's details; a blank line; the evidence
    assert all(ln.startswith(("Next: ", "Hint: ", "  ")) for ln in lines[2:evidence])
    assert not any(ln.startswith("Verdict:") for ln in lines[evidence:])


def test_a_fail_says_whether_the_output_was_wrong_or_slow(reports):
    assert render_text(reports["wrong"]).splitlines()[1].startswith("Verdict: FAIL (wrong output): wrong output at")
    assert render_text(reports["slow"]).splitlines()[1].startswith("Verdict: FAIL (correct but slow): 0.")


def test_a_slow_kernel_leads_with_its_top_ranked_hint_shown_once(reports):
    r = reports["slow"]
    assert r.hints and first_step(r) == ("", r.hints[0])
    text = render_text(r)
    assert text.splitlines()[2] == f"Hint: {r.hints[0]}"
    assert text.count(str(r.hints[0])) == 1
    assert all(f"Hint: {h}" in text for h in r.hints)


def test_wrong_output_says_to_make_it_right_first_and_holds_back_the_part3_notes(reports):
    r = reports["wrong"]
    assert {f.kind for f in r.flags} >= set(NOTE_KINDS) and not output_right(r)
    text = render_text(r)
    bad = next(v for v in r.verification if not v.passed)
    assert text.splitlines()[2].startswith(f"Next: make the output right first ({bad.message}; --seed {r.seed}")
    assert "no table row found" not in text and "no sentence found" not in text and "Flag (" not in text
    assert "Note: your part-3 row and sentence are checked once the output is right." in text


def test_a_correct_kernel_shows_its_part3_notes(reports):
    r = next(row.report for row in h200_class() if row.verdict == "gold" and row.notes)
    assert output_right(r)
    text = render_text(r)
    assert "Note: no table row found" in text and "Note: no sentence found" in text
    assert "checked once the output is right" not in text


def test_the_tanh_gelu_leads_with_its_hint_after_the_next_line():
    row = next(row for row in h200_class() if any(h.kind == "tanh" for h in row.report.hints))
    lines = render_text(row.report).splitlines()
    assert lines[2].startswith("Next: make the output right first") and lines[3].startswith("Hint: biasGeluFused looks "
                                                                                            "like the tanh GELU")


def test_an_error_of_the_student_and_of_the_grader_say_what_to_do(reports):
    assert render_text(reports["error"]).splitlines()[2].startswith("Next: ")
    assert "nothing to fix in your file" in render_text(reports["grader"]).splitlines()[2]
    assert "run again when the GPU is free" in render_text(reports["busy"]).splitlines()[2]


def test_a_compile_error_keeps_its_diagnostics_right_under_the_lead():
    r = GradeReport(file="s.cu", verdict="error", stage="compile", reason="s.cu: compile error",
                    details="s.cu:6: error: expected a \";\"\n  1 error")
    assert render_text(r).splitlines()[1:5] == ["Verdict: ERROR: s.cu: compile error",
                                                "Next: fix the first compile error (below), then grade again.",
                                                "  s.cu:6: error: expected a \";\"", "    1 error"]


def test_gold_with_nothing_to_fix_says_so_and_a_flag_comes_first_when_there_is_no_hint():
    r = GradeReport(file="s.cu", verdict="gold", stage="grade", reason="0.96")
    assert render_text(r).splitlines()[2] == "Next: nothing to fix: gold is the top verdict."
    flag = Flag(kind="impossible-fraction", message="a fraction of 1.2 of the copy floor is impossible",
                student="1.2", grader="0.960")
    r.flags = [flag]
    assert render_text(r).splitlines()[2] == f"Next: correct your part-3 row or sentence: {flag.message}."
    r.hints = [Hint(text="a hint", kind="division")]
    assert render_text(r).splitlines()[2] == "Hint: a hint"


def test_without_a_gpu_the_tanh_hint_still_comes_first():
    tanh = Hint(text="biasGeluFused looks like the tanh GELU", kind="tanh")
    r = GradeReport(file="s.cu", verdict="no-gpu", reason="no GPU", hints=[Hint(text="w", kind="width"), tanh])
    assert render_text(r).splitlines()[2:4] == [f"Next: {first_step(r)[0]}.", f"Hint: {tanh}"]
    assert render_text(r).count(str(tanh)) == 1 and "Hint: w" in render_text(r)
