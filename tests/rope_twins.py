"""float32 numpy twins of RoPE kernels, right and wrong, for the RoPE exercise's CPU tests (tests/test_rope_exercise.py)
and a stand-in GPU that also runs the exercise's check kernel (checkRope) as numpy code.

The twins compute what a CUDA kernel computes in float32 from the float32 tables: each product rounded, or one
product inside an FMA (rounded once with the other's rounded product added), then the sum rounded. Never a claim
about a GPU: they stand for the arithmetic of the kernels in submissions/rope/ and of the page's.
"""

from __future__ import annotations

import numpy as np

from fake_gpu import FakeGpu
from grader.check import draws
from grader.exercises.rope.reference import positions

F32 = np.float32


def fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """float32 fma(a, b, c): a b exact in float64 (24 x 24 bits), plus c, rounded to float32 (the sum's float64
    rounding first, 2^-53 relative: far below any tolerance here)."""
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(F32)


def rope32(inputs: dict, dims: tuple[int, int, int, int], *, pairing: str = "interleaved", sin_sign: int = 1,
           swap_tables: bool = False, pos: np.ndarray | None = None, fma: bool = False) -> np.ndarray:
    """A float32 RoPE kernel's output [rows, D] on `inputs` (Exercise.draw's dict) at dims (B, S, H, D): the page's
    ropeInterleaved by default; pairing 'half' (the half-split example), sin_sign -1 (rotated backward),
    swap_tables (cos and sin swapped), pos (another position per row: the [B, H, S, D] example's row % S)."""
    batch, seq, heads, dim = dims
    x = inputs["in"]
    at = positions(batch, seq, heads) if pos is None else pos
    c, s = inputs["cosTab"][at], inputs["sinTab"][at] * F32(sin_sign)
    if swap_tables:
        c, s = s, c
    half = dim // 2
    first, second = (np.s_[:, 0::2], np.s_[:, 1::2]) if pairing == "interleaved" else (np.s_[:, :half],
                                                                                         np.s_[:, half:])
    a, b = x[first], x[second]
    with np.errstate(all="ignore"):
        if fma:
            out0, out1 = fma32(a, c, -(b * s)), fma32(a, s, b * c)
        else:
            out0, out1 = a * c - b * s, a * s + b * c
    out = np.empty_like(x)
    out[first], out[second] = out0, out1
    return out


def judge(got: np.ndarray, ref: np.ndarray, tol: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ok, share): whether each element passes (NaN where ref is NaN, else finite and within tol), and its error
    as a share of its tolerance (0 where ref is NaN or got is not finite)."""
    nan = np.isnan(ref)
    g = got.astype(np.float64)
    err = np.abs(np.where(np.isfinite(g), g, 0.0) - np.where(nan, 0.0, ref))
    ok = np.where(nan, np.isnan(g), np.isfinite(g) & (err <= tol))
    return ok, np.where(nan | ~np.isfinite(g), 0.0, err / tol)


class RopeFakeGpu(FakeGpu):
    """tests/fake_gpu.py's stand-in GPU, which also runs checkRope (grader/exercises/rope/check.cu) as numpy code,
    so RopeDevice's wiring (argument widths against the compiled kernel's, the counters, the messages) runs on a
    CPU."""

    def _k_checkRope(self, k, grid, block, inp, cos, sin, out, pcos, psin, pairs, half, heads, seq, seed, shares,
                     shape, rtol, atol, counts):
        n, table = 2 * pairs, seq * half
        x = draws.draw(seed, n, draws.unpack(shares, shape))
        p = np.arange(pairs, dtype=np.int64)
        t = ((p // half) // heads % seq) * half + p % half
        c = self.arr(pcos, table, np.float32).astype(np.float64)[t]
        s = self.arr(psin, table, np.float32).astype(np.float64)[t]
        a, b = x[0::2].astype(np.float64), x[1::2].astype(np.float64)
        ref = np.empty(n)
        ref[0::2], ref[1::2] = a * c - b * s, a * s + b * c
        tol = np.repeat(rtol * (np.abs(a) + np.abs(b)) + atol, 2)
        got = self.arr(out, n, np.float32).astype(np.float64)
        with np.errstate(invalid="ignore"):
            bad = ~np.where(np.isnan(ref), np.isnan(got), np.abs(got - ref) <= tol)
        found = self.arr(counts, 8, np.uint64)
        for slot, wrong in ((0, bad), (2, self.arr(inp, n, np.uint32) != x.view(np.uint32)),
                            (4, self.arr(cos, table, np.uint32) != self.arr(pcos, table, np.uint32)),
                            (6, self.arr(sin, table, np.uint32) != self.arr(psin, table, np.uint32))):
            if wrong.any():
                found[slot] += np.uint64(wrong.sum())
                found[slot + 1] = min(int(found[slot + 1]), int(np.argmax(wrong)))
