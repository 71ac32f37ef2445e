"""Triage of a class for the class page (grader.batch.classpage): what each row means for the instructor, and what the
class got wrong, from the gradebook's rows alone (no file is read).

- group: the row's outcome (grader.output.report.outcome: gold, silver, correct but slow, wrong output, an error in the
  submission, an error of the grader, busy, no GPU), the page's verdict split;
- points: the score out of 10 that scores.csv gives the row (grader.output.gradescope.gradescope_score; None when it
  is not graded), and their mean and median;
- the rows to look at (grader.batch.gradebook.to_look_at) and the order of the page's table: those first, then by
  group (the grader's errors, busy, the students' errors, wrong output, slow, silver, gold), then by id;
- what went wrong: the stages where fails and errors stopped, the kinds of the hints the students received (each
  student counted once per kind), the notes and flags on their part-3 rows and sentences (notes counted only where the
  output is right, as the student's report shows them), each with the facet key the page filters by;
- each row's first hint (grader.output.report.first_step), with a short label for its kind and what fixing it is
  estimated to be worth.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass

from grader.batch.gradebook import BatchResult, to_look_at
from grader.feedback.hint import Hint, HintKind
from grader.output.gradescope import gradescope_score
from grader.output.report import OUTCOMES, first_step, outcome
from grader.source.claims import NOTE_KINDS

GROUPS = ("gold", "silver", "slow", "wrong", "error", "grader", "busy", "no-gpu")
"""The page's verdict split (grader.output.report.OUTCOMES), best first: the tiles' order."""
GLYPHS = {"gold": "\u2605", "silver": "\u25c6", "slow": "\u25bc", "wrong": "\u2717", "error": "\u25b2",
          "grader": "\u25a0", "busy": "\u25d0", "no-gpu": "\u25cb"}
"""A shape per group (star, diamond, down triangle, cross, up triangle, square, half circle, ring), shown before its
words, so a verdict never rests on colour alone."""
TRIAGE_ORDER = ("grader", "busy", "error", "wrong", "slow", "silver", "gold", "no-gpu")
"""The table's order after the rows to look at: the rows that need the instructor or a student's fix first."""
HINT_LABELS = {HintKind.WIDTH: "4-byte loads", HintKind.DIVISION: "division in the index", HintKind.TANH: "tanh GELU",
               HintKind.LOCAL: "local memory", HintKind.REGISTERS: "many registers",
               HintKind.SCATTERED: "scattered accesses", HintKind.WORK: "extra instructions",
               HintKind.OCCUPANCY: "few warps resident", HintKind.UNEXPLAINED: "slow, cause not found",
               HintKind.SLOW: "correct but slow"}
"""Short names of the hint kinds (grader.feedback.hint.HintKind; a kind not here is shown as it is named)."""
STAGE_LABELS = {"verify": "wrong output", "input": "file not readable", "source": "refused code",
                "compile": "compile error", "contract": "name or parameters", "launch": "launch refused",
                "run": "fault or time limit", "grader": "the grader failed", "install": "the grader's install",
                "setup": "worker did not start", "time": "busy GPU"}
"""Short names of the stages where a fail or an error stopped (grader.core.errors.Stage)."""
NOTE_LABELS = {"row-missing": "no part-3 row", "claim-missing": "no sentence"}
AT_MOST = "\u2264"


def group(row: BatchResult) -> str:
    """The row's key in GROUPS."""
    return outcome(row.verdict, row.stage)


def points(row: BatchResult) -> float | None:
    """The score out of 10 that scores.csv gives the row; None when it is not graded."""
    return gradescope_score(row.report) if row.report is not None else None


@dataclass(frozen=True)
class Points:
    """The points of the graded rows: how many (`graded`), their mean and median (None when none is graded), and
    the count of rows per score (`counts`, {score: rows})."""

    graded: int
    mean: float | None
    median: float | None
    counts: dict[float, int]


def points_summary(rows: list[BatchResult]) -> Points:
    """Points over the rows that scores.csv scores."""
    scores = [p for r in rows if (p := points(r)) is not None]
    return Points(graded=len(scores), mean=statistics.fmean(scores) if scores else None,
                  median=statistics.median(scores) if scores else None, counts=dict(sorted(Counter(scores).items())))


def look_reasons(rows: list[BatchResult]) -> dict[str, str]:
    """{id: why} of the rows to look at (grader.batch.gradebook.to_look_at)."""
    return {r.id: why for r, why in to_look_at(rows)}


def triage_order(rows: list[BatchResult]) -> list[BatchResult]:
    """`rows` in the table's order: the rows to look at first, then TRIAGE_ORDER, then by id; the same for the
    same rows in any order (a batch's and a merge's)."""
    look = look_reasons(rows)
    rank = {g: i for i, g in enumerate(TRIAGE_ORDER)}
    return sorted(rows, key=lambda r: (r.id not in look, rank.get(group(r), len(rank)), r.id))


def output_right(row: BatchResult) -> bool:
    """True where the output was verified right (grader.output.report.output_right): gold, silver, slow, busy."""
    return group(row) in ("gold", "silver", "slow", "busy")


def hint_kinds(row: BatchResult) -> list[str]:
    """The kinds of the row's hints, each once, in rank order."""
    hints = row.report.hints if row.report else []
    return list(dict.fromkeys(h.kind or "other" for h in hints))


def facets(row: BatchResult, look: dict[str, str]) -> list[str]:
    """The facet keys the page's filters match the row by: "group:G", "stage:S" (wrong output or an error),
    "hint:K",
    "note:K" (only where the output is right), "flag:K", and "look"."""
    out = [f"group:{group(row)}"]
    if row.stage and (row.verdict == "error" or group(row) == "wrong"):
        out.append(f"stage:{row.stage}")
    out += [f"hint:{k}" for k in hint_kinds(row)]
    if output_right(row):
        out += [f"note:{k}" for k in row.notes if k in NOTE_KINDS]
    out += [f"flag:{k}" for k in row.flags]
    if row.id in look:
        out.append("look")
    return out


@dataclass(frozen=True)
class Wrong:
    """What the class got wrong, each as (facet key, label, students), most students first: `stages` where fails and
    errors stopped, `hints` (the kinds received), `claims` (flags and notes on the part-3 rows and sentences)."""

    stages: list[tuple[str, str, int]]
    hints: list[tuple[str, str, int]]
    claims: list[tuple[str, str, int]]


def what_went_wrong(rows: list[BatchResult]) -> Wrong:
    """The counts behind the page's panel, from each row's facets."""
    look = look_reasons(rows)
    c = Counter(f for r in rows for f in facets(r, look))

    def picked(prefix: str, labels: dict[str, str]) -> list[tuple[str, str, int]]:
        keys = [k for k in c if k.startswith(prefix)]
        keys.sort(key=lambda k: (-c[k], k))
        return [(k, labels.get(k[len(prefix):], k[len(prefix):]), c[k]) for k in keys]

    return Wrong(stages=picked("stage:", STAGE_LABELS), hints=picked("hint:", HINT_LABELS),
                 claims=picked("note:", NOTE_LABELS) + picked("flag:", {}))


def first_hint(row: BatchResult) -> tuple[str, str, str]:
    """The row's first hint as the student's report shows it first (grader.output.report.first_step): (kind, label
    with what fixing it is estimated to be worth, its full text); ("", "", "") when it has none."""
    if row.report is None:
        return "", "", ""
    _, hint = first_step(row.report)
    if hint is None:
        return "", "", ""
    return hint.kind, HINT_LABELS.get(hint.kind, hint.kind or "hint") + worth(hint), str(hint)


def worth(hint: Hint) -> str:
    """' (+0.35)': the fraction of the copy floor fixing `hint` is estimated to gain ('<=' for a bound); '' when not
    estimated or under 0.01."""
    if hint.fraction_after is None or hint.fraction_now is None or hint.fraction_after - hint.fraction_now < 0.01:
        return ""
    return f" ({AT_MOST if hint.bound else ''}+{hint.fraction_after - hint.fraction_now:.2f})"


def group_label(key: str) -> str:
    """The words of a group (OUTCOMES)."""
    return OUTCOMES.get(key, key)
