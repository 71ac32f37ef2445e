"""biasGeluFused, the course page's exercise: its constants (shapes, byte model, tolerance, draws) in one place,
and, in exercise.py, EXERCISE: the grader.core.exercise.Exercise the harness takes (grader.exercises.get).

Source: the course page "LLM kernels 2: RoPE, GELU and elementwise fusion" (day 96), its "Exercise",
"Solution" and "Pitfalls" sections. Facts of the grading machine used here are the project's own notes,
docs/h200.md. Every other module reads these names; none repeats a number given here. The course's constants shared by
every
exercise (block, thresholds, poison, guards, benchmark sizing) are grader.core.exercise's.
"""

from __future__ import annotations

# --- The kernel a student writes -------------------------------------------------------------------
KERNEL_NAME = "biasGeluFused"
"""out[r, c] = GELU_erf(x[r, c] + bias[c]), float32, row-major [rows, cols]."""

DEFAULT_PARAMS = ("x", "bias", "out", "cols")
"""The page's signature: biasGeluFused(const float* x, const float* bias, float* out, size_t cols)."""

DEFAULT_GRID = "row"
"""The page's grid: (ceil(cols / 256), rows), blockIdx.y = row."""

DEFAULT_ELEMS_PER_THREAD = 1

# --- Shapes ----------------------------------------------------------------------------------------
VERIFY_SHAPE = (101, 97)
"""rows x cols of the correctness run: the page's ragged shape, which no launch configuration covers
and whose rows are not 16-byte aligned (97 floats = 388 bytes)."""

EXTRA_SHAPES = ((1, 1), (3, 4099), (65535, 5))
"""More ragged shapes verified after VERIFY_SHAPE, so that code keyed to 101 x 97 fails: a single element,
rows longer than any block, and the most rows a row grid can launch."""

# --- Byte model ------------------------------------------------------------------------------------
FLOATS_PER_ELEMENT = 2
"""x read once and out written once. The bias is a cols-float vector read by every row: it stays in
cache and is not counted (the page's Solution and Pitfalls: counting it inflates GB/s by a quarter)."""

# --- Verification ----------------------------------------------------------------------------------
TANH_GAP_MAX = 4.7323552e-4
TANH_GAP_AT = 2.6989414
"""max |GELU_erf(v) - GELU_tanh(v)| over v in float64 and where it occurs (computed by
`grader.exercises.bias_gelu.reference.gelu_gap`; the page prints 4.735273e-04 at 2.701655 from a float32 sweep)."""

ATOL = 1.0e-5
RTOL = 1.0e-5
"""An element passes when |got - ref| <= ATOL + RTOL * |ref| (ref in float64).

Why these numbers:
- At the tanh form's worst point (|v| = 2.699, |ref| = 2.69) the bound is 3.7e-5, 12.8x tighter than the
  4.73e-4 gap, so the tanh GELU fails wherever |x + bias| is between about 0.6 and 4.5.
- A correct float32 kernel differs from float64 by float32 rounding: erff is documented at 2 ulp (CUDA
  Programming Guide, mathematical functions appendix) and the add, multiplies and the final rounding add
  a few more half-ulps. At |ref| <= 4.5 one ulp is at most 4.8e-7, so the error stays below about 2e-6,
  while the bound there is at least 1e-5 (near 0) to 5.5e-5 (at 4.5): 10x looser or more.
"""

INPUT_X_RANGE = (-4.0, 4.0)
INPUT_BIAS_RANGE = (-0.5, 0.5)
"""The uniform part of every draw (symmetric, half-widths powers of two: grader.check.draws), so about 65% of
x + bias falls at 1 <= |v| <= 4, where the tanh GELU is farthest from the exact one."""

X_DRAW_SHARES = dict(nan=64, zero=256, subnormal=256, wide=4096, wide_exp0=2, wide_exps=14)
"""How x's draws mix values, out of 65536 (grader.check.draws.DrawMix): 1/1024 NaN (the answer is NaN, as
torch.nn.functional.gelu gives), 1/256 exact +0 or -0, 1/256 subnormals, 1/16 wide values of magnitude 4 to 65536
(erf saturates past |v| = 4; LLM activations carry outliers in the hundreds and thousands: Sun et al. 2024,
arXiv:2402.17762), the rest uniform in INPUT_X_RANGE. A GELU right only on the page's range (a clamp, an erf
polynomial fitted there) fails; every timed launch draws from the same mix, so a kernel cannot be right only on
the timing's distribution."""

BIAS_DRAW_SHARES = dict(zero=1024, subnormal=512, wide=1024, wide_exp0=0, wide_exps=8)
"""How bias draws mix values: 1/64 exact +0 or -0 (with x's subnormals and zeros they make subnormal and signed-zero
sums), 1/128 subnormals, 1/64 wide values of magnitude 1 to 256, the rest uniform in INPUT_BIAS_RANGE. No NaN: a
NaN bias would make a whole column NaN."""

