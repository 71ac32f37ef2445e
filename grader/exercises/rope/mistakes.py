"""Wrong RoPE named: which known mistake a wrong output of ropeInterleaved matches (the Mistake model and
the match rules are grader.check.mistakes', as for every exercise).

A kernel that fails verification gets its output compared, in float64, with what each known mistake computes from
the same inputs. The mistakes (MISTAKES, in the order they are tried; x0, x1 a pair, c, s its cos and sin, pos and
j as the exercise defines them):

  half_split       pairs (j, j + D/2) instead of (2j, 2j+1)          the page's Pitfall: Llama / Hugging Face pairing
  backward         out0 = x0 c + x1 s, out1 = -x0 s + x1 c            rotated by -angle (the sign of sin)
  cos_sin_swapped  out0 = x0 s - x1 c, out1 = x0 c + x1 s             cosTab read as sin and sinTab as cos
  outputs_swapped  out[2p] = x0 s + x1 c, out[2p+1] = x0 c - x1 s     the two results stored the other way round
  bhsd_position    pos = (p / halfDim) % seq                          the [B, H, S, D] layout's position
  no_seq_wrap      pos = p / (halfDim * heads), no % seq              from angles computed past the table
  base_500000      angles pos * 500000^(-2j/D)                        a long-context base, not 10000
  theta_j          angles pos * 10000^(-j/D)                          the exponent's 2 left out
  theta_2j         angles pos * 10000^(-4j/D)                         the element index 2j used for j
  no_rotation      out = in                                           a copy

A mistake matches when, over the elements that can be compared (got, the reference and the mistake finite, the
pair not NaN), at least MIN_TELLING of them tell the mistake from the right RoPE (the two differ by more than the
exercise's tolerance) and at least MATCH_SHARE of the compared elements, and of the telling ones, are within the
tolerance of the mistake (8 u (|a| + |b|) + 2^-147, (a, b) the pair the mistake rotates). Then two patterns that
no formula gives: every element of batch 0 right and (nearly) every element of the later batches wrong (a
position without `% seq`, reading the tables past their end: what is there is no angle), and elements never
written (still the fill word, compared by its bits): the tail of the output, the second (or first) element of
every pair, or some other set, with the rest compared against the mistakes above. Pure numpy: inputs as
Exercise.draw gives them, got float32 [rows, D].
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from grader.check.mistakes import MATCH_SHARE, MAX_COMPARED, MIN_TELLING, Mistake
from grader.core.exercise import Problem
from grader.exercises.rope.problem import pair_of
from grader.exercises.rope.reference import (
    DEFAULT_BASE,
    LONG_CONTEXT_BASE,
    ROPE_ATOL,
    UNIT_ROUNDOFF,
    rope_rows,
    rotate_pairs,
)

RTOL = 8.0 * UNIT_ROUNDOFF
"""The exercise's pair-relative tolerance (grader.exercises.rope.ROPE_RTOL)."""

NEARLY_ALL = 0.99
"""Share of the later batches' comparable elements that must be wrong for the no_seq_wrap pattern."""


@dataclass(frozen=True)
class Rows:
    """What a mistake's formula reads: x float64 [k, D] (the compared rows of in), each row's index in the whole
    tensor, and the problem's B, S, H."""

    x: np.ndarray
    row: np.ndarray
    batch: int
    seq: int
    heads: int

    @property
    def pos(self) -> np.ndarray:
        """The right position of each row: (row / heads) % seq."""
        return (self.row // self.heads) % self.seq

    def angles(self, pos: np.ndarray | None = None, base: float = DEFAULT_BASE, exponent: float = 2.0):
        """(cos, sin), float64 [k, D/2], of pos * base^(-exponent j / D) (pos: the right one by default)."""
        dim = self.x.shape[1]
        theta = base ** (-exponent * np.arange(dim // 2, dtype=np.float64) / dim)
        a = (self.pos if pos is None else pos).astype(np.float64)[:, None] * theta[None, :]
        return np.cos(a), np.sin(a)


Formula = Callable[[Rows], tuple[np.ndarray, np.ndarray]]
"""Rows -> (the mistake's output, float64 [k, D]; the size |a| + |b| of the pair each element comes from)."""


def _turned(pick: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]) -> Formula:
    """The right pairs and angles, with (c, s) replaced by pick(c, s)."""
    def formula(r: Rows) -> tuple[np.ndarray, np.ndarray]:
        c, s = r.angles()
        return rotate_pairs(r.x, *pick(c, s))
    return formula


def _outputs_swapped(r: Rows) -> tuple[np.ndarray, np.ndarray]:
    out, size = rope_rows(r.x, r.pos)
    return out.reshape(out.shape[0], -1, 2)[:, :, ::-1].reshape(out.shape), size


def _angles(pos: Callable[[Rows], np.ndarray] | None = None, base: float = DEFAULT_BASE,
            exponent: float = 2.0) -> Formula:
    """Interleaved pairs rotated by the angles of another position, base or exponent."""
    def formula(r: Rows) -> tuple[np.ndarray, np.ndarray]:
        return rotate_pairs(r.x, *r.angles(None if pos is None else pos(r), base, exponent))
    return formula


_READ_TABLES = "read cos and sin from cosTab and sinTab (the grader computes them with base 10000)"
MISTAKES: dict[str, tuple[str, str, Formula]] = {
    "half_split": ("RoPE with half-split pairs (j, j + D/2)", "the exercise pairs adjacent elements (2j, 2j+1): "
                   "x0 = in[2p], x1 = in[2p + 1]. The page's Pitfall: if element 0 matches while element 1 does "
                   "not, you are rotating adjacent pairs where the weights expect halves, or the reverse",
                   lambda r: rope_rows(r.x, r.pos, pairing="half")),
    "backward": ("a rotation by -angle (out0 = x0 cos + x1 sin, out1 = -x0 sin + x1 cos)", "the sign of sin is "
                 "flipped: out0 = x0 cos - x1 sin, out1 = x0 sin + x1 cos", _turned(lambda c, s: (c, -s))),
    "cos_sin_swapped": ("RoPE with cos and sin swapped (out0 = x0 sin - x1 cos, out1 = x0 cos + x1 sin)",
                        "cos comes from cosTab and sin from sinTab: out0 = x0 cos - x1 sin, out1 = x0 sin + x1 cos",
                        _turned(lambda c, s: (s, c))),
    "outputs_swapped": ("RoPE with the pair's two results stored the other way round", "out[2p] = x0 cos - x1 sin "
                        "and out[2p + 1] = x0 sin + x1 cos", _outputs_swapped),
    "bhsd_position": ("RoPE at pos = (p / halfDim) % seq, the [B, H, S, D] layout's position", "the exercise's "
                      "tensor is [B, S, H, D]: the heads of one position are adjacent, so pos = (p / (halfDim * "
                      "heads)) % seq", _angles(lambda r: r.row % r.seq)),
    "no_seq_wrap": ("RoPE at pos = p / (halfDim * heads), without % seq", "every batch starts again at position 0: "
                    "pos = (p / (halfDim * heads)) % seq", _angles(lambda r: r.row // r.heads)),
    "base_500000": ("RoPE with base 500000 (pos * 500000^(-2j/D))", _READ_TABLES,
                    _angles(base=LONG_CONTEXT_BASE)),
    "theta_j": ("RoPE with angles pos * 10000^(-j/D)", "theta_j = 10000^(-2j/D), j counting pairs; or "
                + _READ_TABLES, _angles(exponent=1.0)),
    "theta_2j": ("RoPE with angles pos * 10000^(-4j/D)", "theta_j = 10000^(-2j/D) with j the pair (p % halfDim), "
                 "not the element index 2j; or " + _READ_TABLES, _angles(exponent=4.0)),
    "no_rotation": ("out = in (no rotation)", "each pair must be rotated: out0 = x0 cos - x1 sin, out1 = x0 sin "
                    "+ x1 cos", _turned(lambda c, s: (np.ones_like(c), np.zeros_like(s)))),
}
"""name -> (what the output matches, what the student should change, the formula). Module docstring."""


def _sample_rows(rows: int, cols: int) -> np.ndarray:
    """Row indices to compare: all of them, or evenly spaced ones up to MAX_COMPARED elements."""
    keep = max(1, min(rows, MAX_COMPARED // max(1, cols)))
    return np.unique(np.linspace(0, rows - 1, keep).astype(np.int64))


def match(inputs: dict[str, np.ndarray], got: np.ndarray, problem: Problem, fill: int | None = None
          ) -> Mistake | None:
    """The known mistake `got` matches (module docstring), or None.

    inputs: {"in": float32 [rows, D], ...} as Exercise.draw gives them (the tables are recomputed in float64);
    got: float32 [rows, D], the kernel's output; fill: the 32-bit word the output held before the launch (an
    element still holding exactly it was never written), None to skip that pattern. Returns the best match (the
    largest share within tolerance, then the smallest max_diff); unwritten elements first where there are some.
    Never raises for odd values (NaN, huge, subnormal); raises ValueError for shapes that do not fit the problem."""
    x, got = np.asarray(inputs["in"]), np.asarray(got)
    if x.shape != (problem.rows, problem.cols) or got.shape != x.shape:
        raise ValueError(f"in {x.shape} and got {got.shape} must both be [rows, D] = {(problem.rows, problem.cols)}")
    batch, seq, heads, _ = problem.dims
    left = (np.ascontiguousarray(got, dtype=np.float32).view(np.uint32) == np.uint32(fill) if fill is not None
            else np.zeros(got.shape, dtype=bool))
    sel = _sample_rows(problem.rows, problem.cols)
    r = Rows(x[sel].astype(np.float64), sel, batch, seq, heads)
    gs = got[sel].astype(np.float64)
    with np.errstate(all="ignore"):
        ref, ref_size = rope_rows(r.x, r.pos)
        usable = np.isfinite(gs) & ~left[sel] & np.isfinite(ref)
        best = None
        for name, (formula, fix, fn) in MISTAKES.items():
            cand, size = fn(r)
            found = _score(name, formula, fix, gs, (ref, ref_size), (cand, size), usable & np.isfinite(cand))
            if found is not None and (best is None or (found.share, -found.max_diff) > (best.share, -best.max_diff)):
                best = found
        if best is None and not left.any():
            best = _no_wrap(gs, ref, ref_size, r)
    unwritten = _unwritten(left, problem)
    if unwritten is None:
        return best
    if best is not None:
        unwritten.text += f"; the rest matches {best.formula} to {best.max_diff:.1e}: {best.text.split(': ', 1)[1]}"
    return unwritten


def _tolerance(size: np.ndarray) -> np.ndarray:
    return RTOL * size + ROPE_ATOL


def _score(name: str, formula: str, fix: str, got: np.ndarray, ref: tuple[np.ndarray, np.ndarray],
           cand: tuple[np.ndarray, np.ndarray], usable: np.ndarray) -> Mistake | None:
    """A Mistake when `got` matches the candidate (value, pair size) over `usable` and over the telling elements
    (those where it is farther than the tolerance from ref = (value, pair size)), else None."""
    telling = usable & (np.abs(cand[0] - ref[0]) > _tolerance(ref[1]))
    if int(telling.sum()) < MIN_TELLING:
        return None
    within = np.abs(got - cand[0]) <= _tolerance(cand[1])
    share = float(within[usable].mean())
    if min(share, float(within[telling].mean())) < MATCH_SHARE:
        return None
    diff = np.abs(got - cand[0])[usable]
    worst = float((diff / np.maximum(1.0, np.abs(cand[0][usable]))).max())  # absolute below 1, relative above
    n = int(usable.sum())
    return Mistake(name=name, formula=formula, max_diff=worst, share=share, compared=n,
                   text=f"your output matches {formula} to {worst:.1e} ({share:.1%} of {n} elements compared "
                        f"within tolerance): {fix}")


def _no_wrap(got: np.ndarray, ref: np.ndarray, ref_size: np.ndarray, r: Rows) -> Mistake | None:
    """The no_seq_wrap pattern of a kernel that reads the tables past their end: batch 0 right, NEARLY_ALL of the
    later batches' elements wrong (NaN included), at least MIN_TELLING of them; None otherwise."""
    first = r.row < r.seq * r.heads
    comparable = ~np.isnan(ref)
    wrong = comparable & ~(np.abs(got - np.where(comparable, ref, 0.0)) <= _tolerance(ref_size))
    later = comparable & ~first[:, None]
    if (wrong & first[:, None]).any() or int(wrong.sum()) < MIN_TELLING or wrong.sum() < NEARLY_ALL * later.sum():
        return None
    formula, fix, _ = MISTAKES["no_seq_wrap"]
    return Mistake(name="no_seq_wrap", formula=formula, share=float(wrong.sum() / max(1, later.sum())),
                   compared=int(comparable.sum()),
                   text=f"every element of batch 0 is right and {int(wrong.sum())} of {int(later.sum())} of the later "
                        f"batches' are wrong: the position runs past seq and the tables past their end; {fix}")


def _unwritten(left: np.ndarray, problem: Problem) -> Mistake | None:
    """Elements never written (`left`, bool [rows, D]): the tail of the output, the second or the first element of
    every pair, or another set (named by its count and first element); None when there are none."""
    flat = left.reshape(-1)
    n_left, n = int(flat.sum()), flat.size
    if not n_left:
        return None
    first = int(np.flatnonzero(flat)[0])
    pairs = "ceil(pairs / (block x pairs per thread)) blocks"
    if n_left == n:
        what = "no element of the output was written"
        fix = "is the kernel named and launched as declared, and does every thread with p < pairs store its pair?"
    elif first == n - n_left:
        what = f"the last {n_left} of {n} elements (the last {(n_left + 1) // 2} pairs) were never written"
        fix = f"the grid must cover every pair: {pairs}, each thread's pairs inside `if (p < pairs)`"
    elif flat[1::2].all() and not flat[0::2].any():
        what = "the second element of every pair (out[2p + 1]) was never written"
        fix = "store both results of each pair: out[2p] and out[2p + 1]"
    elif flat[0::2].all() and not flat[1::2].any():
        what = "the first element of every pair (out[2p]) was never written"
        fix = "store both results of each pair: out[2p] and out[2p + 1]"
    else:
        what = (f"{n_left} of {n} elements were never written, the first in {pair_of(first, problem)}")
        fix = (f"every pair p < pairs needs its two stores; with more pairs per thread the grid has {pairs}, so "
               "each thread must handle exactly that many pairs (`// grade: elems_per_thread`)")
    return Mistake(name="unwritten", formula="the fill before the launch", compared=n_left,
                   text=f"{what}: they still hold what the output was filled with before the launch; {fix}")

