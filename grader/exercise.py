"""The exercise's constants, in one place: shapes, byte model, tolerance and grade thresholds.

Source: the course page "LLM kernels 2: RoPE, GELU and elementwise fusion" (day 96), its "Exercise",
"Solution" and "Pitfalls" sections. Facts of the grading machine used here are the project's own notes,
docs/h200.md. Every other module reads these names; none repeats a number given here.
"""

from __future__ import annotations

# --- The kernel a student writes -------------------------------------------------------------------
KERNEL_NAME = "biasGeluFused"
"""out[r, c] = GELU_erf(x[r, c] + bias[c]), float32, row-major [rows, cols]."""

DEFAULT_PARAMS = ("x", "bias", "out", "cols")
"""The page's signature: biasGeluFused(const float* x, const float* bias, float* out, size_t cols)."""

DEFAULT_GRID = "row"
"""The page's grid: (ceil(cols / 256), rows), blockIdx.y = row."""

BLOCK = 256
"""Threads per block: the page's launch, the default of a submission's `// grade: block`, and the block of
every launch of the grader's own kernels and the reference kernels. The only place the number is written."""

DEFAULT_ELEMS_PER_THREAD = 1

# --- Shapes ----------------------------------------------------------------------------------------
VERIFY_SHAPE = (101, 97)
"""rows x cols of the correctness run: the page's ragged shape, which no launch configuration covers
and whose rows are not 16-byte aligned (97 floats = 388 bytes)."""

EXTRA_SHAPES = ((1, 1), (3, 4099), (65535, 5))
"""More ragged shapes verified after VERIFY_SHAPE, so that code keyed to 101 x 97 fails: a single element,
rows longer than any block, and the most rows a row grid can launch."""

MAX_GRID_Y = 65535
"""gridDim.y limit (CUDA Programming Guide, "Compute capabilities" table; a row grid of 131072 rows
fails to launch on the H200 with CUDA_ERROR_INVALID_VALUE, docs/h200.md)."""

BENCH_L2_MULTIPLE = 16
"""Each benchmark buffer is at least this many times the L2 size, so the timed traffic is DRAM traffic
(the H200's L2 is 60 MiB; a 64 MiB buffer is mostly cache, docs/h200.md)."""

BENCH_COL_MULTIPLE = 1024
"""Benchmark cols are a multiple of this (so a multiple of 4: every row is 16-byte aligned)."""

BENCH_FREE_MEMORY_SHARE = 0.6
"""The benchmark's buffers (x, the submission's out, the copies' out) take at most this share of the
device's free memory."""

BENCH_BUFFERS = 3
"""Benchmark-sized float32 buffers the grade allocates: x, the submission's out, the copies' out."""

# --- Byte model ------------------------------------------------------------------------------------
BYTES_PER_FLOAT = 4
FLOATS_PER_ELEMENT = 2
"""x read once and out written once. The bias is a cols-float vector read by every row: it stays in
cache and is not counted (the page's Solution and Pitfalls: counting it inflates GB/s by a quarter)."""

COPY_FLOATS_PER_ELEMENT = 2
"""A copy reads one float and writes one float per element: the same traffic as the exercise. The copy
floor's GB/s is computed with this (grader.timing.timer.CopyFloor)."""

# --- Verification ----------------------------------------------------------------------------------
TANH_GAP_MAX = 4.7323552e-4
TANH_GAP_AT = 2.6989414
"""max |GELU_erf(v) - GELU_tanh(v)| over v in float64 and where it occurs (computed by
`grader.check.reference.gelu_gap`; the page prints 4.735273e-04 at 2.701655 from a float32 sweep)."""

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

POISON_WORD = 0xF149F2CA
"""The output's contents before a checked launch: float32 -1.0e30, a value GELU never takes (its minimum is about
-0.17), so an element the kernel never wrote fails whatever its input (a NaN input's answer is NaN, so a NaN poison
would pass there)."""

REPEAT_EVERY = 4
"""Every REPEAT_EVERY-th timed round keeps the previous round's inputs (the output is still poisoned first): a
kernel that skips work when its inputs look unchanged (a fingerprint memo) leaves the poison and fails."""

GUARD_BYTES = 64 * 1024
"""Guard region before and after every device buffer of the correctness run (a multiple of 256, so the
buffer itself stays 256-byte aligned). A row grid without a bounds check writes up to block - 1 floats
past the end of the last row; the guards catch that."""

GUARD_WORD = 0x7FBADBAD
"""Pattern the guards are filled with (a quiet NaN payload no kernel computes by accident)."""

# --- Grading ---------------------------------------------------------------------------------------
GOLD = 0.90
SILVER = 0.75
"""Fraction of the copy floor (the page's Check: 90% or more is gold, 75 to 90 silver, below fails)."""

PHYSICAL_BOUND = 1.03
"""The most of the copy floor a measurement may show and still be a verdict: a correct kernel reads x and writes out,
which is what the copy moves, so it cannot beat the copy by more than the timing's noise (the floor is the fastest
of three copies; on the H200 the gold answer measures 0.96, docs/h200.md). A fraction above this is never graded:
either the kernel moved fewer bytes than the job needs or the floor was measured wrong (grader.timing.measure)."""

THRESHOLDS_TEXT = f"gold >= {GOLD:.2f}, silver >= {SILVER:.2f}"
"""The thresholds as the reports and the gradebook print them."""

PAGE_FLOOR_GBS = 244.7
"""The copy ceiling the page quotes for its Tesla T4 (day 49); shown for context, never graded against."""
