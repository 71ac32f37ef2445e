"""RoPE in float64: the angles, the kernels' cos and sin tables, the reference and the float32 error bound.

The exercise (grader.exercises.rope) grades the course page's ropeInterleaved against these; the reference
kernels' self-check (reference_kernels.gates, through reference_kernels.expected) checks its RoPE versions with
them too. One copy: reference_kernels imports them from here, never the reverse.

Formula: RoFormer (Su et al., arXiv:2104.09864), eq. 15 and its block-diagonal rotation: pair j of a head of
width D at position pos is rotated by the angle pos * base^(-2j/D): out0 = x0 cos - x1 sin, out1 = x0 sin + x1 cos.
"interleaved" pairs dimensions (2j, 2j+1) (the paper, GPT-NeoX, the course page's ropeInterleaved); "half" pairs
(j, j + D/2) (Llama, Hugging Face). The course page (day 96) and the second document (`001_...`) give both.
Pure numpy; needs no GPU.
"""

from __future__ import annotations

import numpy as np

LAYOUTS = ("bshd", "bhsd")
"""Tensor layouts: [B, S, H, D] (the course page's indexing) and [B, H, S, D] (the second document's)."""

PAIRINGS = ("interleaved", "half")

DEFAULT_BASE = 10000.0
LONG_CONTEXT_BASE = 500000.0


# --- RoPE, in float64 ---------------------------------------------------------------------------------
def rope_angles(seq: int, dim: int, base: float = DEFAULT_BASE) -> np.ndarray:
    """Angles pos * base^(-2j/D) in radians, float64 [seq, dim/2] (pos = row, j = column).

    Raises ValueError if dim is odd or not positive.
    """
    if dim <= 0 or dim % 2:
        raise ValueError(f"head width must be even and positive, got {dim}")
    j = np.arange(dim // 2, dtype=np.float64)
    theta = base ** (-2.0 * j / dim)
    return np.arange(seq, dtype=np.float64)[:, None] * theta[None, :]


def rope_tables(seq: int, dim: int, base: float = DEFAULT_BASE) -> tuple[np.ndarray, np.ndarray]:
    """The kernels' cos and sin tables: float64 cos and sin of rope_angles, rounded once to float32.
    Returns (cos, sin), each float32 [seq, dim/2], C-contiguous."""
    a = rope_angles(seq, dim, base)
    return np.cos(a).astype(np.float32), np.sin(a).astype(np.float32)


def rope_reference(x: np.ndarray, layout: str, pairing: str, base: float = DEFAULT_BASE) -> np.ndarray:
    """RoPE of `x` in float64 with float64 cos and sin (no table rounding).

    x: [B, S, H, D] for layout 'bshd' or [B, H, S, D] for 'bhsd', any float dtype, D even.
    pairing: 'interleaved' (2j, 2j+1) or 'half' (j, j + D/2). Returns float64, the shape of x.
    Raises ValueError for an unknown layout or pairing.
    """
    if layout not in LAYOUTS or pairing not in PAIRINGS:
        raise ValueError(f"layout must be one of {LAYOUTS} and pairing one of {PAIRINGS}")
    x = np.asarray(x, dtype=np.float64)
    seq, dim = (x.shape[1] if layout == "bshd" else x.shape[2]), x.shape[3]
    a = rope_angles(seq, dim, base)
    c, s = np.cos(a), np.sin(a)
    shape = (1, seq, 1, dim // 2) if layout == "bshd" else (1, 1, seq, dim // 2)
    c, s = c.reshape(shape), s.reshape(shape)
    if pairing == "interleaved":
        first, second = np.s_[..., 0::2], np.s_[..., 1::2]
    else:
        first, second = np.s_[..., : dim // 2], np.s_[..., dim // 2 :]
    out = np.empty_like(x)
    x0, x1 = x[first], x[second]
    out[first] = x0 * c - x1 * s
    out[second] = x0 * s + x1 * c
    return out


def rope_error_bound(x: np.ndarray, pairing: str) -> np.ndarray:
    """Largest |float32 kernel - float64 reference| allowed per element: 8 u (|x0| + |x1|), u = 2^-24,
    float64, the shape of x.

    Why: with c, s rounded once to float32 (relative error <= u each), x0 c and x1 s rounded (<= u each, or
    exact inside an FMA) and the sum rounded (<= u), the error of out0 = x0 c - x1 s is at most
    3u (|x0| |c| + |x1| |s|) + O(u^2) <= 3u (|x0| + |x1|); likewise out1. 8u leaves a factor 2.6 of margin
    and is still 2^-21 of the pair's size, so a wrong pairing, angle or position (errors of order |x|) fails.
    """
    x = np.abs(np.asarray(x, dtype=np.float64))
    dim = x.shape[-1]
    if pairing == "interleaved":
        size = x[..., 0::2] + x[..., 1::2]
        pair_size = np.repeat(size, 2, axis=-1)
    else:
        size = x[..., : dim // 2] + x[..., dim // 2 :]
        pair_size = np.concatenate([size, size], axis=-1)
    return 8.0 * 2.0**-24 * pair_size


# --- The exercise's tensor: [B, S, H, D] as rows x D -----------------------------------------------------
UNIT_ROUNDOFF = 2.0**-24
"""u of float32 (round to nearest): a rounding moves a value by at most u of it (for normal results)."""

ROPE_ATOL = 2.0**-147
"""The absolute part of the exercise's tolerance: 4 x 2^-149, four of the smallest subnormal float32.

Why: rope_error_bound's 8 u (|x0| + |x1|) is relative, and u-relative rounding holds only for normal results. A
result below 2^-126 (subnormal inputs, or a product of a small input and a small cos or sin) is rounded to a
multiple of 2^-149, an absolute error of up to 2^-150 per rounding; a correct kernel rounds at most three times
per element (x0 c, x1 s, their sum; an FMA saves one), so 1.5 x 2^-149 at most. 2^-147 is 2.7 x that, and
about 1e-44: every wrong RoPE is wrong by an amount of order |x| (the draws' subnormals are at least 2^-149,
their other values at least 2^-20 in magnitude), far above it."""


def positions(batch: int, seq: int, heads: int) -> np.ndarray:
    """The position of each head vector (row) of a [B, S, H, D] tensor seen as B*S*H rows of D: row r is
    (b, s, h) with r = (b S + s) H + h, at position s = (r / H) % S (the page's pos = (p / (halfDim * heads)) %
    seq for pair p = r * halfDim + j). int64 [B*S*H]."""
    return (np.arange(batch * seq * heads, dtype=np.int64) // heads) % seq


def rotate_pairs(x: np.ndarray, c: np.ndarray, s: np.ndarray, pairing: str = "interleaved"
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Rotate each pair of each row of x by the angle whose cos and sin are c and s, in float64.

    x: [rows, D] (any float dtype, D even); c, s: [rows, D/2] float64 (pair j of row r gets c[r, j], s[r, j]).
    pairing: 'interleaved' pairs (2j, 2j+1), 'half' pairs (j, j + D/2). Returns (out float64 [rows, D], size
    float64 [rows, D]: |a| + |b| of the pair (a, b) each element belongs to, what rope_error_bound scales by).
    Raises ValueError for an unknown pairing."""
    if pairing not in PAIRINGS:
        raise ValueError(f"pairing must be one of {PAIRINGS}")
    x = np.asarray(x, dtype=np.float64)
    half = x.shape[1] // 2
    first, second = (np.s_[:, 0::2], np.s_[:, 1::2]) if pairing == "interleaved" else (np.s_[:, :half],
                                                                                         np.s_[:, half:])
    a, b = x[first], x[second]
    out, size = np.empty_like(x), np.empty_like(x)
    with np.errstate(invalid="ignore", over="ignore"):
        out[first] = a * c - b * s
        out[second] = a * s + b * c
        size[first] = size[second] = np.abs(a) + np.abs(b)
    return out, size


def rope_rows(x: np.ndarray, pos: np.ndarray, base: float = DEFAULT_BASE, pairing: str = "interleaved",
              exponent: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    """RoPE of each row of x at position pos[row], in float64 with float64 cos and sin (no table rounding):
    pair j is rotated by pos * base^(-exponent j / D) (exponent 2 is RoPE's; others are the mistakes').

    x: [rows, D] any float dtype, D even; pos: [rows] (any integers, not limited to a table). Returns
    rotate_pairs's (out, size), float64 [rows, D] each."""
    x = np.asarray(x, dtype=np.float64)
    dim = x.shape[1]
    theta = base ** (-exponent * np.arange(dim // 2, dtype=np.float64) / dim)
    angle = np.asarray(pos, dtype=np.float64)[:, None] * theta[None, :]
    return rotate_pairs(x, np.cos(angle), np.sin(angle), pairing)
