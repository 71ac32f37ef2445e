"""Stage 4a, draws: the grader's inputs, one generator on the GPU and its bit-exact twin in numpy.

Element i of a draw with seed s is a function of splitmix64(s + i) alone (grader/gpu/kernels/inputs.cu,
`drawValue`; splitmix64 is Steele, Lea and Flood's generator, "Fast splittable pseudorandom number generators",
OOPSLA 2014). So the on-GPU check of a timed launch regenerates the inputs from their seeds instead of reading
buffers the kernel could have changed, the host's verification shapes use the very same values, and a replay
with the same seed gives the same inputs.

A draw mixes kinds of value (DrawMix): mostly the page's range, where the tanh GELU is farthest from the exact
one, plus heavy tails (magnitudes up to 2^16, where erf saturates and where LLM activations' outliers reach:
Sun et al. 2024, "Massive activations in large language models", arXiv:2402.17762), exact +0 and -0,
subnormals and NaN (whose answer is NaN, as torch.nn.functional.gelu gives). Every value is exact in float32:
the uniform part is an integer times a power of two, the others are built from their bits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SHARE_ONE = 1 << 16
"""Shares are out of 65536: the 16 low bits of each element's random word pick its kind."""

_U64 = np.uint64


@dataclass(frozen=True)
class DrawMix:
    """How a draw mixes its values: shares out of SHARE_ONE of NaN, +-0, subnormals and wide values (the rest is
    uniform in [-half_range, half_range)); wide values are (1 + m) 2^e, e uniform in [wide_exp0, wide_exp0 +
    wide_exps). half_range is a power of two (so the uniform part is exact: (k - 2^23) * half_range / 2^23)."""

    half_range: float
    nan: int = 0
    zero: int = 0
    subnormal: int = 0
    wide: int = 0
    wide_exp0: int = 2
    wide_exps: int = 1

    def __post_init__(self) -> None:
        mant, exp = np.frexp(self.half_range)
        if mant != 0.5 or not -100 < exp < 100:
            raise ValueError(f"half_range must be a power of two, got {self.half_range}")
        if min(self.nan, self.zero, self.subnormal, self.wide) < 0 or self.cumulative()[-1] >= SHARE_ONE:
            raise ValueError("shares must be >= 0 and leave some of the draw uniform")
        if not (1 <= self.wide_exps <= 255 and 0 <= self.wide_exp0 and self.wide_exp0 + self.wide_exps <= 127):
            raise ValueError(f"wide exponents [{self.wide_exp0}, {self.wide_exp0 + self.wide_exps}) out of range")

    @property
    def step_exp(self) -> int:
        """The uniform part's step as a power of two: half_range = 2^23 * 2^step_exp."""
        return int(np.frexp(self.half_range)[1]) - 1 - 23

    def cumulative(self) -> tuple[int, int, int, int]:
        """The cumulative shares (nan, zero, subnormal, wide) the kernel compares against."""
        a = self.nan
        b = a + self.zero
        c = b + self.subnormal
        return a, b, c, c + self.wide

    def packed(self) -> tuple[int, int]:
        """(shares, shape): the two kernel parameters fillDraw and checkBiasGelu unpack (inputs.cu, unpackMix)."""
        shares = sum(s << (16 * k) for k, s in enumerate(self.cumulative()))
        shape = self.wide_exp0 | self.wide_exps << 8 | (self.step_exp & 0xFF) << 16
        return shares, shape


def unpack(shares: int, shape: int) -> DrawMix:
    """The DrawMix of fillDraw's two parameters (DrawMix.packed's inverse, as inputs.cu's unpackMix reads them)."""
    nan, zero, subnormal, wide = ((shares >> (16 * k)) & 0xFFFF for k in range(4))
    step_exp = ((shape >> 16) & 0xFF) - (256 if (shape >> 16) & 0x80 else 0)
    return DrawMix(half_range=2.0 ** (step_exp + 23), nan=nan, zero=zero - nan, subnormal=subnormal - zero,
                   wide=wide - subnormal, wide_exp0=shape & 0xFF, wide_exps=(shape >> 8) & 0xFF)


def splitmix64(z: np.ndarray) -> np.ndarray:
    """splitmix64 of each uint64 of `z` (wrapping arithmetic, as the CUDA code's unsigned long long)."""
    with np.errstate(over="ignore"):
        z = z + _U64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> _U64(27))) * _U64(0x94D049BB133111EB)
    return z ^ (z >> _U64(31))


def draw(seed: int, n: int, mix: DrawMix, start: int = 0) -> np.ndarray:
    """Elements start .. start + n - 1 of the draw with `seed` (0 <= seed < 2^64): float32 [n], the same bits as
    fillDraw gives on the GPU."""
    with np.errstate(over="ignore"):
        h = splitmix64(_U64(seed) + np.arange(start, start + n, dtype=_U64))
    share = (h & _U64(0xFFFF)).astype(np.int64)
    sign = ((h >> _U64(16)) & _U64(1)).astype(np.uint32) << np.uint32(31)
    mant = ((h >> _U64(17)) & _U64(0x7FFFFF)).astype(np.uint32)
    top = (h >> _U64(40)).astype(np.int64)
    uniform = (top - (1 << 23)).astype(np.float32) * np.float32(2.0 ** mix.step_exp)
    e = (mix.wide_exp0 + top % mix.wide_exps + 127).astype(np.uint32)
    wide = (sign | (e << np.uint32(23)) | mant).view(np.float32)
    nan, zero, subnormal, wide_end = mix.cumulative()
    bits = np.select([share < nan, share < zero, share < subnormal],
                     [np.full(n, 0x7FC00000, np.uint32), sign, sign | mant | np.uint32(1)],
                     np.zeros(n, np.uint32))
    out = np.where(share < wide_end, wide, uniform).astype(np.float32)
    special = share < subnormal
    out[special] = bits[special].view(np.float32)
    return out
