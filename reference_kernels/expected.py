"""float64 numpy references for the reference kernels, the RoPE tables, and bf16 bit conversion.

Formulas:
- RoPE: grader.exercises.rope.reference (the angles, tables, float64 reference and error bound live there, with
  the RoPE exercise; imported here so the reference kernels' gates and the exercise use one copy).
- GELU: grader.exercises.bias_gelu.reference.gelu_erf and gelu_tanh (PyTorch's approximate='none' and 'tanh').
- bf16: the high 16 bits of an IEEE float32; narrowing rounds to nearest, ties to even.
"""

from __future__ import annotations

import numpy as np

from grader.exercises.bias_gelu.reference import gelu_erf, gelu_tanh
from grader.exercises.rope.reference import (
    DEFAULT_BASE,
    LAYOUTS,
    LONG_CONTEXT_BASE,
    PAIRINGS,
    rope_angles,
    rope_error_bound,
    rope_reference,
    rope_tables,
)


# --- The chain -----------------------------------------------------------------------------------------
def add_bias(x: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """x [rows, cols] + bias [cols] in float64."""
    return x.astype(np.float64) + bias.astype(np.float64)[None, :]


def chain_reference(x: np.ndarray, bias: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The whole chain in float64: GELU_erf(x + bias[col]) + r. x, r: [rows, cols]; bias: [cols]."""
    return gelu_erf(add_bias(x, bias)) + r.astype(np.float64)


# --- bf16 ----------------------------------------------------------------------------------------------
def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    """bf16 bit patterns (uint16, any shape) to float32, exactly (the bits become the float's high half)."""
    bits = np.asarray(bits, dtype=np.uint16)
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def f32_to_bf16(x: np.ndarray) -> np.ndarray:
    """float32 (any shape) to bf16 bit patterns (uint16), rounding to nearest with ties to even; finite values
    beyond the bf16 range round to inf; NaN stays NaN (made quiet). The kernel's floatToBf16, in numpy."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32)
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    rounded = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    quiet = (u >> np.uint32(16)) | np.uint32(0x0040)
    return np.where(nan, quiet, rounded).astype(np.uint16)


def f64_to_bf16(x: np.ndarray) -> np.ndarray:
    """float64 (any shape) to bf16 bit patterns (uint16), rounded once to nearest with ties to even (no
    double rounding through float32: the float32 step is made to round toward zero and keep a sticky bit)."""
    x = np.asarray(x, dtype=np.float64)
    f = x.astype(np.float32)
    # float32 rounding moved the value; step back toward zero so the float32 never lands on a bf16 tie that
    # x itself was not on, then mark the lost bits in the lowest bit (sticky) so ties stay exact ties only.
    inexact = f.astype(np.float64) != x
    toward_zero = np.abs(f.astype(np.float64)) > np.abs(x)
    u = f.view(np.uint32).copy()
    u = np.where(inexact & toward_zero, u - np.uint32(1), u)
    u = np.where(inexact, u | np.uint32(1), u)
    return f32_to_bf16(np.where(np.isfinite(x), u.view(np.float32), f))


BF16_REL = 2.0**-8
"""Unit roundoff of bf16 (8 significant bits): rounding to nearest moves a value by at most 2^-8 of it."""

BF16_F32_SLACK = 2.0**-20
"""Allowance for the float32 arithmetic before the final rounding, relative to |ref| + |x|: see
gelu_bf16_tolerance."""


BF16_MAX_ROUNDING_MISMATCH = 0.05
"""Largest share of elements whose bf16 output may differ from the float64 reference rounded to bf16. A
correct kernel differs only where float32 error moves a value across a rounding boundary (0.6% of x uniform
in [-4, 4] in a numpy float32 emulation, mostly at x < -2 where 1 + tanh cancels); truncation differs at 60%."""


def gelu_bf16_tolerance(x: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Largest |bf16 kernel - float64 reference| allowed per element of the bf16 tanh GELU, float64.

    tol = 2^-8 |ref| + 2^-20 (|ref| + |x|), x the (exactly representable) bf16 inputs and ref = GELU_tanh(x)
    in float64. Why:
    - The kernel computes r32 in float32 and rounds it once to bf16: |bf16(r32) - r32| <= 2^-8 |r32|.
    - |r32 - ref| is float32 rounding: a few ulp (2^-24 each) of |ref|, tanhf's 2 ulp, and the cancellation in
      1 + tanh(..) for x << 0, which costs up to about 2^-24 * 0.5 |x| absolute. 2^-20 (|ref| + |x|) is 16x
      more than 2^-24 (|ref| + |x|), above the sum of those terms.
    The bound is loose enough that the erf/tanh swap (4.7e-4 at |x| = 2.7, where the bound is 1.05e-2) hides
    inside bf16 rounding; the float32 chain gates catch that swap. A truncating store (instead of rounding)
    breaks the bound on about a third of uniform inputs, and BF16_MAX_ROUNDING_MISMATCH catches it as well.
    """
    x = np.abs(np.asarray(x, dtype=np.float64))
    ref = np.abs(np.asarray(ref, dtype=np.float64))
    return BF16_REL * ref + BF16_F32_SLACK * (ref + x)


def gelu_tanh_bf16_reference(bits: np.ndarray) -> np.ndarray:
    """float64 GELU_tanh of bf16 inputs given as uint16 bits (any shape)."""
    return gelu_tanh(bf16_to_f32(bits).astype(np.float64))


__all__ = [
    "LAYOUTS", "PAIRINGS", "DEFAULT_BASE", "LONG_CONTEXT_BASE", "rope_angles", "rope_tables", "rope_reference",
    "rope_error_bound", "add_bias", "chain_reference", "bf16_to_f32", "f32_to_bf16", "gelu_bf16_tolerance",
    "gelu_tanh_bf16_reference", "gelu_erf", "gelu_tanh", "BF16_REL", "BF16_F32_SLACK",
    "BF16_MAX_ROUNDING_MISMATCH", "f64_to_bf16",
]
