"""The known mistake a wrong output matches (issue 29): the model every exercise's matcher returns
(grader/exercises/NAME/mistakes.py: bias_gelu's tanh GELU and bias indices, rope's pairings and angles)."""

from __future__ import annotations

from grader.core.model import ReportModel

MATCH_SHARE = 0.99
"""Share of the compared elements, and of the telling ones, that must be within tolerance of a mistake for the
output to match it (a float32 kernel is within 1e-6 relative of its own float64 formula almost everywhere; 1%
leaves room for the few elements near a branch of a hand-written approximation)."""

MIN_TELLING = 8
"""Compared elements on which a mistake and the right answer differ by more than the tolerance: fewer, and the
inputs cannot tell the mistake apart (a 1 x 1 shape, a bias of zeros)."""

MAX_COMPARED = 1 << 16
"""Elements compared at most (whole rows, evenly spaced, from a larger output): enough to tell every mistake
apart, and a 65535 x 5 output is not run through a float64 formula ten times."""


class Mistake(ReportModel):
    """The known mistake a wrong output matches: its `name` (a key of the exercise's mistakes, or "unwritten"), the
    formula it computes, `max_diff` (the largest |got - formula| / max(1, |formula|) over the `compared` elements),
    `share` of them within tolerance, and `text`, the sentence the report shows."""

    name: str
    formula: str
    max_diff: float = 0.0
    share: float = 1.0
    compared: int = 0
    text: str = ""
