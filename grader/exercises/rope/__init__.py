"""The course page's RoPE kernel as an exercise: `grade --exercise rope submission.cu`.

The student writes the page's ropeInterleaved (reference_kernels/rope.cu holds the page's and fast versions):

    __global__ void ropeInterleaved(const float* in, const float* cosTab, const float* sinTab, float* out,
                                    size_t pairs, int halfDim, int heads, int seq)

For a float32 tensor [B, S, H, D] (the page's layout) and pair p = 0 .. pairs - 1 (pairs = B*S*H*D/2, in memory
order), j = p % halfDim and pos = (p / (halfDim * heads)) % seq:

    out[2p]     = in[2p] cos - in[2p+1] sin
    out[2p + 1] = in[2p] sin + in[2p+1] cos,    cos, sin = cosTab[pos * halfDim + j], sinTab[...]

with the tables float32 [seq, halfDim], the float64 cos and sin of pos * 10000^(-2j/D) rounded once. The launch
is the page's: a flat grid over the pairs, 256 threads per block, one pair per thread (`// grade:` may declare
more pairs per thread, a stride grid, another parameter order). Byte model: in read once and out written once,
2 floats per element, what a copy moves (the tables are L2 hits: the page's "every sequence and every head reads
the same table entry"), so it is timed against the same copy floor with the same thresholds.

Modules: reference (the float64 RoPE and the error bound; reference_kernels uses them too), problem (sizes,
inputs), mistakes (the known wrong RoPEs), device (the timed launches' inputs and on-GPU check, check.cu).
"""

from __future__ import annotations

import numpy as np

from grader.core.exercise import CounterTexts, Exercise, Pointer, Problem
from grader.exercises.rope import answers
from grader.exercises.rope import problem as sizes
from grader.exercises.rope.reference import ROPE_ATOL, UNIT_ROUNDOFF, positions, rope_rows

ROPE_RTOL = 8.0 * UNIT_ROUNDOFF
"""The tolerance's pair-relative part: 8 u of |x0| + |x1| (reference.rope_error_bound says why)."""

ROLES_BOUND = ("pairs", "n", "batch")
ROLES_HALF = ("halfDim", "dim")
"""A kernel needs one of ROLES_BOUND to know where the pairs end, one of ROLES_HALF for j, heads and seq for pos."""

SLOW_HINT = (
    "ropeInterleaved is correct but slower than the copy floor allows, and neither its machine code, its launch, "
    "the grading's copies nor the counters (where measured) name the cause. What a kernel at the copy floor does, "
    "by the page: it reads in once and writes out once, finds pos and j without a 64-bit division (32-bit unsigned "
    "when pairs < 2^31), and moves several pairs per thread or a pair as one float2 (8 bytes), every load issued "
    "before the first store.")

DIVISION_HINT_LEAD = "look at your index arithmetic first"
DIVISION_HINT_TAIL = (
    "The page's pitfall for RoPE: pos = (p / (halfDim * heads)) % seq and j = p % halfDim are integer divisions "
    "of every pair by values known only at run time; in size_t each is a call of CUDA's 64-bit division routine "
    "(dozens of instructions), which a kernel near the copy floor has nothing to hide behind. Compute them in "
    "32-bit unsigned integers when pairs < 2^31 (about 20 instructions each), and reuse one quotient: "
    "r = p / halfDim, j = p - r * halfDim, pos = (r / heads) % seq.")
WIDTH_HINT_TAIL = (
    "Load and store 8 or 16 bytes per access: a pair (in[2p], in[2p+1]) is one float2, always 8-byte aligned, "
    "and two pairs are one float4 when p is even; or give each thread several pairs one block apart.")


class Rope(Exercise):
    """The page's interleaved RoPE (module docstring). Every method's docstring in grader.core.exercise says what
    the harness passes; here, what RoPE answers. hint_texts gives the machine code's hints in RoPE's words
    (grader.feedback.hints): the division hint's lead and pitfall sentence, the 4-byte-loads hint's advice."""

    name = "rope"
    kernel_name = "ropeInterleaved"
    title = ("out = the interleaved RoPE of in [B, S, H, D]: each pair (in[2p], in[2p+1]) rotated by "
             "pos * 10000^(-2j/D)")
    pointers = (
        Pointer("in", "const float*", about="the input [B, S, H, D]"),
        Pointer("cosTab", "const float*", about="the cos table [seq, halfDim]", cached=True),
        Pointer("sinTab", "const float*", about="the sin table [seq, halfDim]", cached=True),
        Pointer("out", "float*", output=True, about="the output [B, S, H, D]"),
    )
    integer_roles = ("pairs", "halfDim", "heads", "seq", "batch", "dim", "n")
    default_params = ("in", "cosTab", "sinTab", "out", "pairs", "halfDim", "heads", "seq")
    default_grid = "flat"
    default_elems_per_thread = 1
    verify_dims = sizes.VERIFY_DIMS
    floats_per_element = 2
    atol = ROPE_ATOL
    rtol = ROPE_RTOL
    """RoPE's rtol scales |x0| + |x1| of the element's pair, not |ref| as the base class's tolerance() does: the
    harness reads the tolerance from tolerance(), never from atol and rtol."""
    tolerance_text = ("|got - ref| <= 8 x 2^-24 (|x0| + |x1|) + 2^-147, (x0, x1) the element's pair of in, NaN "
                      "where ref is NaN")
    slow_hint = SLOW_HINT
    bounds_test = "`if (p < pairs)`"
    wrong_output_kinds = ()
    division_hint_bits = 64
    """The page's pitfall is the size_t division; 32-bit pos and j are the page's fix and the model answer's."""
    bytes_text = "in read once and out written once: 2 floats per element, what a copy moves"
    cached_text = ("the cos and sin tables (seq x D/2 floats each) are read by every batch and every head: they "
                   "stay in L2 and are not DRAM traffic, so counting them (2 more floats per pair) inflates GB/s")
    counter_texts = CounterTexts(
        reread="in is read more than once, or loads use only part of each 32-byte sector they fetch (strided or "
               "misaligned access), or the cos and sin tables are fetched from DRAM per pair (a table index that "
               "defeats the cache)",
        loads="in and half its pair's cos and sin need 0.250",
        fp64="the kernel computes in double. in, the tables and out are float, and each output is two float "
             "multiply-adds; double math runs on the FP64 pipe, at a fraction of the float rate, with a conversion "
             "each way.",
        xu="a math function (sinf, cosf, powf, expf: the tables already hold cos and sin), conversions, or an "
           "integer division by a run-time value (the page's pos = (p / (halfDim * heads)) % seq, j = p % halfDim).",
        scatter_fix="Give consecutive threads consecutive pairs (p = blockIdx.x * blockDim.x + threadIdx.x, the "
                    "page's flat grid), so that a warp reads and writes one contiguous piece of the tensor.")
    reference_names = answers.NAMES

    def check_params(self, params: tuple[str, ...], grid: str) -> str:
        """Why a declared parameter list (or grid) cannot launch ropeInterleaved, '' when it can: all four pointers,
        one of pairs, n, batch (where the pairs end), one of halfDim, dim (j), heads and seq (pos); a flat or
        stride grid (there is no row of a RoPE problem for a row grid to follow)."""
        missing = super().check_params(params, grid)
        if missing:
            return missing
        needs = [(ROLES_BOUND, "to know where the pairs end"), (ROLES_HALF, "to find j = p % halfDim"),
                 (("heads",), "to find pos = (p / (halfDim * heads)) % seq"), (("seq",), "to find pos (% seq)")]
        for roles, why in needs:
            if not set(roles) & set(params):
                return f"params must include {' or '.join(roles)} {why}"
        if grid == "row":
            return "ropeInterleaved takes a flat grid over its pairs (the page's) or a stride grid, not a row grid"
        return ""

    def hint_texts(self) -> dict[str, str]:
        """The division and 4-byte-load hints in RoPE's words (the index arithmetic, a float2 per pair)."""
        return {"division_lead": DIVISION_HINT_LEAD, "division_tail": DIVISION_HINT_TAIL, "width_tail": WIDTH_HINT_TAIL}

    def references(self, gpu, problem: Problem, buffers: dict[str, object]) -> dict[str, object]:
        """The model answer ropeInterleavedVec2<4> and the page's answer ropeInterleaved<1> of rope.cu
        (answers.references)."""
        return answers.references(gpu, problem, buffers)

    def problem(self, dims: tuple[int, ...]) -> Problem:
        """problem.problem: (B, S, H, D) -> rows B*S*H, cols D, grid (1, pairs). Raises ValueError for bad dims."""
        return sizes.problem(dims)

    def bench_problem(self, free_bytes: int, l2_bytes: int) -> Problem:
        """problem.bench_problem (S, H, D = 2048, 32, 128; B from the L2 and the free memory). Raises GraderFault
        when not one batch fits."""
        return sizes.bench_problem(free_bytes, l2_bytes)

    def bench_dims(self, rows: int, cols: int) -> tuple[int, ...]:
        """(B, S, H, D) of the benchmark whose output is rows x cols: S, H = problem.BENCH_SEQ, BENCH_HEADS, D =
        cols, B = rows / (S H). Raises ValueError when rows is not a whole number of batches."""
        per_batch = sizes.BENCH_SEQ * sizes.BENCH_HEADS
        if rows < 1 or rows % per_batch:
            raise ValueError(f"{rows} rows is not a whole number of RoPE benchmark batches ({sizes.BENCH_SEQ} x "
                             f"{sizes.BENCH_HEADS} rows each)")
        return (rows // per_batch, sizes.BENCH_SEQ, sizes.BENCH_HEADS, cols)

    def seeds_from(self, rng: np.random.Generator) -> tuple[int, ...]:
        """One seed: `in`'s (the tables are not random)."""
        return (int(rng.integers(2**63)),)

    def draw(self, seeds: tuple[int, ...], problem: Problem) -> dict[str, np.ndarray]:
        """{"in": float32 [rows, D] (problem.IN_MIX, seeds[0]), "cosTab", "sinTab": float32 [S, D/2]}."""
        return sizes.draw_inputs(seeds[0], problem)

    def reference(self, inputs: dict[str, np.ndarray], problem: Problem) -> np.ndarray:
        """RoPE of inputs["in"] in float64 with float64 cos and sin (reference.rope_reference's, not the float32
        tables: their rounding is part of a correct kernel's error): float64 [rows, D]."""
        batch, seq, heads, _ = problem.dims
        return rope_rows(inputs["in"], positions(batch, seq, heads))[0]

    def tolerance(self, inputs: dict[str, np.ndarray], ref: np.ndarray, problem: Problem) -> np.ndarray:
        """8 u (|x0| + |x1|) + 2^-147 per element, float64 [rows, D] (reference.rope_error_bound and ROPE_ATOL
        say why); the harness needs NaN where ref is NaN (a NaN in the pair)."""
        x = np.abs(np.asarray(inputs["in"], dtype=np.float64))
        size = np.repeat(x[:, 0::2] + x[:, 1::2], 2, axis=1)
        return ROPE_RTOL * np.where(np.isnan(size), 0.0, size) + ROPE_ATOL

    def given(self, inputs: dict[str, np.ndarray], problem: Problem, row: int, col: int) -> dict[str, float]:
        """The pair of element (row, col) and its table entry: {"x0", "x1", "cos", "sin"} (float32 values)."""
        heads, seq = problem.integers["heads"], problem.integers["seq"]
        j = col // 2
        pos = (row // heads) % seq
        x = inputs["in"]
        return {"x0": float(x[row, 2 * j]), "x1": float(x[row, 2 * j + 1]),
                "cos": float(inputs["cosTab"][pos, j]), "sin": float(inputs["sinTab"][pos, j])}

    def given_text(self, given: dict[str, float]) -> str:
        """'x0 = 1.5, x1 = -2, cos = 0.540302277, sin = 0.841470957'."""
        return ", ".join(f"{k} = {v:.9g}" for k, v in given.items())

    def where(self, role: str, index: int, problem: Problem) -> str:
        """Float `index` of pointer `role`: 'pair 7 (batch 0, pos 0, head 1, j 2), its second element' for in
        and out, 'pos 3, j 5' for a table."""
        return sizes.where(role, index, problem)

    def mistake(self, inputs: dict[str, np.ndarray], got: np.ndarray, problem: Problem):
        """The known wrong RoPE `got` (float32 [rows, D]) matches: grader.exercises.rope.mistakes.match."""
        from grader.exercises.rope.mistakes import match

        return match(inputs, got, problem, self.poison_word)

    def device(self, gpu, problem: Problem):
        """grader.exercises.rope.device.RopeDevice: in, cosTab, sinTab, out at `problem` on `gpu`, `in` drawn on
        the GPU, the check kernel of check.cu."""
        from grader.exercises.rope.device import RopeDevice

        return RopeDevice(self, gpu, problem)


EXERCISE = Rope()
