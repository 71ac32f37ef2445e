"""Wrong output named (issue 29): which of the exercise's known mistakes a wrong output matches, and how closely.

A kernel that fails verification gets its output compared, in float64, with what each known mistake computes
from the same inputs, so the report can say "your output matches GELU_tanh(x + bias) to 5.9e-08: the exercise
asks for the erf form" instead of only the first bad element. The mistakes (MISTAKES, in the order they are
tried; v = x + bias[col] unless said):

  tanh         0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3)))   llm.c's and GPT-2's GELU
  sigmoid      v / (1 + exp(-1.702 v))                            the sigmoid ("quick") GELU
  no_sqrt2     0.5 v (1 + erf(v))                                 erf without the 1/sqrt(2)
  no_half      v (1 + erf(v / sqrt 2))                            the 0.5 left out
  no_gelu      v                                                  x + bias, no GELU
  no_bias      GELU(x)                                            the bias left out
  bias_twice   GELU(x + 2 bias[col])                              the bias added twice
  bias_after   GELU(x) + bias[col]                                GELU of x, the bias added after it
  bias_row     GELU(x + bias[row])                                the bias indexed by the row
  bias_mod_rows  GELU(x + bias[i % rows])                         a flat index i = row * cols + col, % rows
  bias_flat    GELU(x + bias[i])                                  the flat index, no % at all

Where a mistake reads bias past its end (bias_row with more rows than columns, bias_mod_rows, bias_flat) those
elements are not compared: the kernel read memory the grader does not know (the guard region, whose pattern is
a NaN). Then the unwritten patterns, from the word the output is filled with before the launch (`fill`,
grader.check.verify's; compared by its bits, never as a value): whole rows, the last columns of every row, or a
tail of the flat output that still hold it, with the rest compared against the reference and the mistakes above.
An element still holding the fill is unwritten whatever its inputs (a NaN input's answer is NaN, not the fill).

A mistake matches when, over the elements that can be compared (got, the reference and the mistake finite, the
inputs not NaN, the mistake's bias index inside bias), at least MIN_TELLING of them tell the mistake from the
exact GELU (the two differ there by more than the exercise's tolerance, grader.exercises.bias_gelu.ATOL, RTOL), and at
least
MATCH_SHARE of the compared elements, and of the telling ones, are within that tolerance of the mistake. The
telling share is what counts where most inputs are far out on the tails: past |v| of about 12 the tanh and
sigmoid forms give what the exact GELU gives (v or 0), so a right output whose elements are 99% there must not
match the sigmoid GELU because it agrees with it everywhere but on the few elements that tell. The
closeness is the largest |got - mistake| / max(1, |mistake|) over the compared elements: absolute below 1,
relative above (the draws reach magnitudes of 65536, where float32 rounding alone is 0.004 absolute). Robust to
inputs of any magnitude (an overflow to inf is simply not compared), to +-0, subnormals and NaN. Pure numpy:
x float32 [rows, cols], bias float32 [cols], got float32 [rows, cols].
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from grader.check.mistakes import MATCH_SHARE, MAX_COMPARED, MIN_TELLING, Mistake  # noqa: F401 - the tests read them here
from grader.exercises import bias_gelu as exercise
from grader.exercises.bias_gelu.reference import gelu_erf, gelu_tanh


@dataclass(frozen=True)
class Inputs:
    """What a mistake's formula reads: x (float64, the compared rows), bias (float64 [cols]), each element's
    row and flat index (row * cols + col) in the whole problem, and the problem's rows."""

    x: np.ndarray
    bias: np.ndarray
    row: np.ndarray
    flat: np.ndarray
    rows: int

    @property
    def v(self) -> np.ndarray:
        """x + bias[col]: what the exact GELU is applied to."""
        return self.x + self.bias[None, :]

    def every(self) -> np.ndarray:
        return np.ones(self.x.shape, dtype=bool)

    def bias_at(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """bias[idx] for an integer array shaped like x, and where idx is inside bias (elsewhere: 0, not compared)."""
        ok = (idx >= 0) & (idx < self.bias.size)
        return self.bias[np.where(ok, idx, 0)], ok


Formula = Callable[[Inputs], tuple[np.ndarray, np.ndarray]]
"""Inputs -> (the mistake's output in float64, where it can be compared: its bias index inside bias)."""


def _indexed(index: Callable[[Inputs], np.ndarray]) -> Formula:
    """GELU(x + bias[index(inputs)]): a bias indexed wrongly."""
    def formula(i: Inputs) -> tuple[np.ndarray, np.ndarray]:
        b, ok = i.bias_at(index(i))
        return gelu_erf(i.x + b), ok
    return formula


MISTAKES: dict[str, tuple[str, str, Formula]] = {
    "tanh": ("GELU_tanh(x + bias)", "the exercise asks for the exact (erf) GELU, 0.5 v (1 + erf(v / sqrt 2)); "
             "the tanh form is a different function (up to 4.7e-4 apart), not a cheaper way to compute it",
             lambda i: (gelu_tanh(i.v), i.every())),
    "sigmoid": ("(x + bias) sigmoid(1.702 (x + bias))", "that is the sigmoid approximation of GELU; the exercise "
                "asks for the exact (erf) GELU, 0.5 v (1 + erf(v / sqrt 2))",
                lambda i: (i.v / (1.0 + np.exp(-1.702 * i.v)), i.every())),
    "no_sqrt2": ("0.5 v (1 + erf(v)), v = x + bias", "erf's argument is v / sqrt(2): multiply v by 0.70710678f",
                 lambda i: (gelu_erf(i.v * math.sqrt(2.0)) / math.sqrt(2.0), i.every())),
    "no_half": ("v (1 + erf(v / sqrt 2)), v = x + bias", "GELU has a factor 0.5 in front",
                lambda i: (2.0 * gelu_erf(i.v), i.every())),
    "no_gelu": ("x + bias", "the GELU is not applied", lambda i: (i.v, i.every())),
    "no_bias": ("GELU(x)", "the bias is left out: out = GELU(x + bias[col])", lambda i: (gelu_erf(i.x), i.every())),
    "bias_twice": ("GELU(x + 2 bias)", "the bias is added twice",
                   lambda i: (gelu_erf(i.x + 2.0 * i.bias[None, :]), i.every())),
    "bias_after": ("GELU(x) + bias", "the bias goes inside the GELU: out = GELU(x + bias[col])",
                   lambda i: (gelu_erf(i.x) + i.bias[None, :], i.every())),
    "bias_row": ("GELU(x + bias[row])", "the bias is indexed by the row; it has one entry per column: bias[col]",
                 _indexed(lambda i: i.row)),
    "bias_mod_rows": ("GELU(x + bias[i % rows]), i = row * cols + col", "the bias index uses rows; a flat index's "
                      "column is i % cols", _indexed(lambda i: i.flat % max(1, i.rows))),
    "bias_flat": ("GELU(x + bias[i]), i = row * cols + col", "the bias is indexed by the flat index; its column is "
                  "i % cols (or use the page's row grid: bias[col])", _indexed(lambda i: i.flat)),
}
"""name -> (formula, what the student should change, the formula as code). Module docstring."""


def _tolerance(ref: np.ndarray) -> np.ndarray:
    return exercise.ATOL + exercise.RTOL * np.abs(ref)


def _sample_rows(rows: int, cols: int) -> np.ndarray:
    """Row indices to compare: all of them, or evenly spaced ones up to MAX_COMPARED elements."""
    keep = max(1, min(rows, MAX_COMPARED // max(1, cols)))
    return np.unique(np.linspace(0, rows - 1, keep).astype(np.int64))


def match(x: np.ndarray, bias: np.ndarray, got: np.ndarray, fill: int | None = None) -> Mistake | None:
    """The known mistake `got` matches (module docstring), or None.

    x: float32 [rows, cols]; bias: float32 [cols]; got: float32 [rows, cols], the kernel's output for them.
    fill: the 32-bit word the output held before the launch (course.POISON_WORD): an element still
    holding exactly it was never written, whatever its inputs (a NaN computed from a NaN the kernel read past an
    input's end has other bits); None: a NaN counts as unwritten where the inputs are not NaN (where they are, NaN
    is the right answer: such an element fits either).
    Returns the best match (the largest share within tolerance, then the smallest max_diff): an unwritten part
    (rows, the last columns, a flat tail) first where there is one. Never raises for odd values (NaN, inf,
    huge magnitudes, subnormals); raises ValueError for shapes that do not fit together."""
    x, got = np.asarray(x), np.asarray(got)
    bias = np.asarray(bias).reshape(-1)
    if x.ndim != 2 or got.shape != x.shape or bias.size != x.shape[1]:
        raise ValueError(f"shapes x {x.shape}, bias {bias.shape}, got {got.shape} do not fit [rows, cols], [cols]")
    rows, cols = x.shape
    left, either = _left(x, bias, got, fill)
    unwritten = _unwritten(left, either)
    sel = _sample_rows(rows, cols)
    xs, gs, left = x[sel].astype(np.float64), got[sel].astype(np.float64), left[sel]
    b = bias.astype(np.float64)
    r_idx = np.broadcast_to(sel[:, None], xs.shape)
    inputs = Inputs(xs, b, r_idx, r_idx * cols + np.arange(cols)[None, :], rows)
    with np.errstate(all="ignore"):
        ref = gelu_erf(inputs.v)
        usable = np.isfinite(gs) & ~left & np.isfinite(ref) & ~np.isnan(xs) & ~np.isnan(b)[None, :]
        best, best_ok = None, None
        for name, (formula, fix, fn) in MISTAKES.items():
            cand, ok = fn(inputs)
            found = _score(name, formula, fix, gs, ref, cand, usable & ok & np.isfinite(cand))
            if found is not None and (best is None or (found.share, -found.max_diff) > (best.share, -best.max_diff)):
                best, best_ok = found, ok
    if fill is None and best is not None and not (left & best_ok).any():
        return best  # NaN only where the mistake reads past the end of bias (the guard's NaN pattern)
    if unwritten is not None:
        if best is not None:
            unwritten.text += f"; the rest matches {best.formula} to {best.max_diff:.1e}: {best.text.split(': ', 1)[1]}"
        return unwritten
    return best


def _score(name: str, formula: str, fix: str, got, ref, cand, usable) -> Mistake | None:
    """A Mistake when `got` matches `cand` over `usable` and over the telling elements (module docstring), else
    None."""
    telling = usable & (np.abs(cand - ref) > _tolerance(ref))
    if int(telling.sum()) < MIN_TELLING:
        return None
    within = np.abs(got - cand) <= _tolerance(cand)
    share = float(within[usable].mean())
    if min(share, float(within[telling].mean())) < MATCH_SHARE:
        return None
    diff = np.abs(got - cand)[usable]
    worst = float((diff / np.maximum(1.0, np.abs(cand[usable]))).max())  # absolute below 1, relative above
    return Mistake(name=name, formula=formula, max_diff=worst, share=share, compared=int(usable.sum()),
                   text=f"your output matches {formula} to {worst:.1e} ({share:.1%} of {int(usable.sum())} "
                        f"elements compared within tolerance): {fix}")


def _unwritten(left: np.ndarray, either: np.ndarray) -> Mistake | None:
    """Rows, the last columns of every row, or a flat tail never written: every element `left` (bool [rows, cols],
    _left's) inside one of these, each of them `left` or `either`; None when the left elements form none of these
    (or there are none)."""
    rows, cols = left.shape
    n_left = int(left.sum())
    if not n_left:
        return None
    fits = left | either
    full_rows = np.flatnonzero(fits.all(axis=1) & left.any(axis=1))
    full_cols = np.flatnonzero(fits.all(axis=0) & left.any(axis=0))
    flat = fits.reshape(-1)
    tail = flat.size - int(np.flatnonzero(~flat)[-1]) - 1 if (~flat).any() else flat.size
    if int(left[full_rows].sum()) == n_left:
        what = f"{full_rows.size} of {rows} rows were never written ({_span(full_rows, 'row')})"
        fix = "launch a block row per row (the row grid) or check the row bound against rows, not cols"
    elif int(left[:, full_cols].sum()) == n_left and full_cols[0] == cols - full_cols.size:
        what = f"the last {full_cols.size} of {cols} columns of every row were never written"
        fix = "the grid must cover every column: ceil(cols / (block x elements per thread)) blocks per row, and a " \
              "scalar path for the columns a vector access does not cover"
    elif int(left.reshape(-1)[flat.size - tail:].sum()) == n_left:
        what = f"the last {tail} of {flat.size} elements were never written"
        fix = "the grid must cover all rows x cols elements: ceil(n / (block x elements per thread)) blocks, and " \
              "a scalar path for the elements left after the last full vector"
    else:
        return None
    return Mistake(name="unwritten", formula="the fill before the launch", compared=n_left,
                   text=f"{what}: they still hold what the output was filled with before the launch; {fix}")


def _left(x: np.ndarray, bias: np.ndarray, got: np.ndarray, fill: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(left, either), bool [rows, cols]: where `got` was never written (still the 32-bit word `fill`, whatever the
    inputs; when fill is None, a NaN where x and bias are not NaN), and where that cannot be told (fill None: a NaN
    from a NaN input, which is also its right answer)."""
    if fill is not None:
        left = np.ascontiguousarray(got, dtype=np.float32).view(np.uint32) == np.uint32(fill)
        return left, np.zeros_like(left)
    nan = np.isnan(got)
    nan_in = np.isnan(x) | np.isnan(bias)[None, :]
    return nan & ~nan_in, nan & nan_in


def _span(idx: np.ndarray, word: str) -> str:
    """'rows 64 to 100' for a contiguous run of indices, else the first few."""
    if idx.size and idx[-1] - idx[0] + 1 == idx.size:
        return f"{word}s {idx[0]} to {idx[-1]}" if idx.size > 1 else f"{word} {idx[0]}"
    return f"{word}s " + ", ".join(str(i) for i in idx[:5]) + (", ..." if idx.size > 5 else "")
