"""biasGeluFused's own hint from the machine code: the tanh GELU (or a sigmoid GELU) where the exercise asks for the
exact one, GELU_erf; and HINT_TEXTS, the page's words for the division and 4-byte-load hints (Exercise.hint_texts).

The harness reads the signs of a tanh in the kernel's code (grader.feedback.hints: tanhf's inline expansion, the
tanh GELU's 0.044715, MUFU.TANH, 1 / (1 + exp) in the machine code) and hands them over as a CodeSigns
(Exercise.code_hints); this module says what they mean for this exercise, with the size of the gap between the two
functions (TANH_GAP_MAX at TANH_GAP_AT, grader/exercises/bias_gelu/__init__.py; reference.gelu_gap computes it).
Hints never change the verdict.
"""

from __future__ import annotations

from grader.exercises import bias_gelu as exercise
from grader.feedback.hint import Hint, HintKind
from grader.feedback.hints import CodeSigns

HINT_TEXTS = {
    "division_lead": "look at your bias index first",
    "division_tail": ("The page's pitfall: a flat index with i % cols costs an integer division on every element, "
                      "which a kernel near the copy floor has nothing to hide behind. Use the page's row grid "
                      "(blockIdx.y = row, the column from blockIdx.x and threadIdx.x), so bias[col] needs no "
                      "division."),
    "width_tail": ("Load and store 16 bytes per thread (float4: rows are 16-byte aligned when cols % 4 == 0), with a "
                   "scalar path for other shapes."),
}
"""The page's Pitfalls in the division hint (its bias index, its row grid) and the 4-byte-load hint's advice (its
rows, 16-byte aligned when cols % 4 == 0), for grader.feedback.hints.code_hints' `texts`."""


def tanh_hints(signs: CodeSigns) -> list[Hint]:
    """The tanh GELU hint (kind tanh) where `signs` found a tanh in the kernel's code; [] where they found none."""
    if not signs.tanh:
        return []
    return [Hint(kind=HintKind.TANH, text=tanh_text(signs.kernel, signs.source, signs.tanh, signs.sigmoid_only))]


def tanh_text(kernel: str, source: str, signs: tuple[str, ...], sigmoid_too: bool = False) -> str:
    """The hint's text: `kernel` looks like the tanh GELU (or a sigmoid GELU, `sigmoid_too`), read from `source`
    (the machine code or the PTX) by `signs`, and how far that is from GELU_erf."""
    return (
        f"{kernel} looks like the tanh GELU{' or a sigmoid GELU' if sigmoid_too else ''} ({source}; found: "
        f"{'; '.join(signs)}). The tanh GELU, "
        "0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))), is a different function from the exact GELU "
        "0.5 v (1 + erf(v / sqrt(2))) the exercise asks for, not a cheaper way to compute it: they differ "
        f"by up to {exercise.TANH_GAP_MAX:.2e} at |v| = {exercise.TANH_GAP_AT:.3f}, in double precision too"
        + ("; a sigmoid GELU such as v sigmoid(1.702 v) differs by more" if sigmoid_too else "")
        + ". Use erff."
    )
