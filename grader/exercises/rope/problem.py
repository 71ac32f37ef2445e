"""The RoPE exercise's problem sizes, its benchmark size and its inputs.

A problem is a float32 tensor [B, S, H, D] (the course page's layout: batch, sequence, heads, head width), seen by
the harness as rows = B*S*H head vectors of cols = D floats; the kernel's work items are its pairs = B*S*H*D/2
(Problem.grid = (1, pairs): a flat grid of pairs, elems_per_thread pairs per thread). The cos and sin tables are
[S, D/2] float32, the float64 cos and sin of pos * 10000^(-2j/D) rounded once (reference.rope_tables), the same
at every draw: only `in` is random (grader.check.draws, IN_MIX).

Sources: the course page (day 96), its ropeInterleaved and its Check (3 x 17 x 5 x 64); the benchmark's S, H, D
are a Llama-7B-like layer (reference_kernels' timed RoPE tables use the same, 512 KiB tables).
"""

from __future__ import annotations

import math

import numpy as np

from grader.check.draws import DrawMix, draw
from grader.core import exercise as course
from grader.core.errors import GraderFault
from grader.core.exercise import Problem
from grader.exercises.rope.reference import rope_tables

PAGE_DIMS = (3, 17, 5, 64)
"""B, S, H, D of the page's check: ragged (17 positions, 5 heads) and every batch past the first needs pos % seq."""

VERIFY_DIMS = (
    PAGE_DIMS,
    (1, 1, 1, 2),       # a single pair: a grid of one block, one thread with work
    (2, 7, 3, 10),      # halfDim 5, odd: a head is 40 bytes, so heads (and pairs past the first of a head) are not
                        # 16-byte aligned, and 4 pairs of one thread straddle heads
    (2, 3, 2, 1000),    # halfDim 500: more pairs per head than a block has threads (j is not threadIdx.x)
    (5, 33, 4, 128),    # the benchmark's D, 42240 pairs: 166 blocks of 256, a ragged last one at 4 per thread
)
"""The problem sizes verified before timing, in order (Exercise.verify_dims). Every one with more than one
position has B > 1 (a position without `% seq` reads past the tables) and H > 1 (a [B, H, S, D] position
formula, pos = (p / halfDim) % seq, gives other positions)."""

BENCH_SEQ, BENCH_HEADS, BENCH_DIM = 2048, 32, 128
"""S, H, D of the benchmark: a Llama-7B-like layer. Its cos and sin tables are 2048 x 64 floats (512 KiB each):
L2-resident on any card the grader times on, so they are not traffic (the byte model)."""

BENCH_TABLE_COPIES = 4
"""Table-sized buffers of the benchmark: cosTab and sinTab the kernel reads, and the on-GPU check's private copies
(grader.exercises.rope.device)."""

IN_RANGE = 4.0
"""Half-width of the uniform part of `in`'s draws (a power of two: grader.check.draws.DrawMix): q and k
activations of a layer are of order 1."""

IN_MIX = DrawMix(half_range=IN_RANGE, nan=64, zero=256, subnormal=256, wide=4096, wide_exp0=2, wide_exps=14)
"""How `in`'s draws mix values, out of 65536 (the shares of bias_gelu's x): 1/1024 NaN (both outputs of the pair
are NaN), 1/256 exact +0 or -0, 1/256 subnormals (the tolerance's absolute part), 1/16 wide values of magnitude
4 to 65536 (activation outliers: Sun et al. 2024, arXiv:2402.17762; a kernel right only on small values, or one
that computes in half precision, fails), the rest uniform in [-4, 4). Every value is exact in float32; no result
overflows (|out| <= sqrt 2 x 65536)."""


def problem(dims: tuple[int, ...]) -> Problem:
    """The Problem of a [B, S, H, D] tensor: rows = B*S*H, cols = D, grid (1, pairs), the integer roles (pairs,
    halfDim, heads, seq, batch, dim, n = floats of in) and each pointer's floats (in, out: n; cosTab, sinTab:
    S*D/2).

    Raises ValueError unless dims is four positive integers with D even."""
    if len(dims) != 4 or min(dims) < 1 or dims[3] % 2:
        raise ValueError(f"RoPE dims are (B, S, H, D), positive, D even; got {dims}")
    batch, seq, heads, dim = (int(d) for d in dims)
    rows = batch * seq * heads
    n, pairs, table = rows * dim, rows * dim // 2, seq * dim // 2
    return Problem(dims=(batch, seq, heads, dim), label=f"B x S x H x D = {batch} x {seq} x {heads} x {dim}",
                   rows=rows, cols=dim, grid=(1, pairs),
                   integers=dict(pairs=pairs, halfDim=dim // 2, heads=heads, seq=seq, batch=batch, dim=dim, n=n),
                   floats={"in": n, "cosTab": table, "sinTab": table, "out": n})


def bench_problem(free_bytes: int, l2_bytes: int) -> Problem:
    """The benchmark's Problem on a card with `free_bytes` free (bytes) and an L2 of `l2_bytes`: S, H, D =
    BENCH_SEQ, BENCH_HEADS, BENCH_DIM and the smallest batch that makes in (and out) at least
    course.BENCH_L2_MULTIPLE x the L2, so the timed traffic is DRAM traffic; fewer batches where the
    course.BENCH_BUFFERS tensor-sized buffers (in, the submission's out, the copies' out) and the
    BENCH_TABLE_COPIES tables would not fit in course.BENCH_FREE_MEMORY_SHARE of the free memory, and never
    more floats than course.INT32_LIMIT. (grader.timing.timer.bench_shape sizes bias_gelu the same way.) On the H200
    (60 MiB L2, about 140 GB free): B = 30, 960 MiB per tensor.

    Raises GraderFault (exit 4: the machine's, not the submission's) when not one batch fits."""
    per_batch = BENCH_SEQ * BENCH_HEADS * BENCH_DIM * course.BYTES_PER_FLOAT
    tables = BENCH_TABLE_COPIES * BENCH_SEQ * BENCH_DIM // 2 * course.BYTES_PER_FLOAT
    room = free_bytes * course.BENCH_FREE_MEMORY_SHARE - tables
    fits = int(room // (course.BENCH_BUFFERS * per_batch)) if room > 0 else 0
    wanted = math.ceil(course.BENCH_L2_MULTIPLE * l2_bytes / per_batch)
    batch = min(max(1, wanted), fits, course.INT32_LIMIT // (per_batch // course.BYTES_PER_FLOAT))
    if batch < 1:
        raise GraderFault(
            f"the GPU has only {free_bytes / 2**20:.0f} MiB free: too little for {course.BENCH_BUFFERS} RoPE "
            f"benchmark tensors of one batch ({BENCH_SEQ} x {BENCH_HEADS} x {BENCH_DIM} floats, "
            f"{per_batch / 2**20:.0f} MiB each) in {course.BENCH_FREE_MEMORY_SHARE:.0%} of it; free GPU memory "
            "(other processes) or use a larger card")
    return problem((batch, BENCH_SEQ, BENCH_HEADS, BENCH_DIM))


def tables(problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    """The cos and sin tables of `problem`: float32 [S, D/2] each, C-contiguous (reference.rope_tables, base
    10000)."""
    _, seq, _, dim = problem.dims
    return rope_tables(seq, dim)


def draw_inputs(seed: int, problem: Problem) -> dict[str, np.ndarray]:
    """The host inputs of `problem` from `seed` (0 <= seed < 2^64): {"in": float32 [rows, D], elements 0 .. n - 1
    of the draw with IN_MIX (the bits fillDraw gives on the GPU), "cosTab", "sinTab": float32 [S, D/2]}."""
    cos, sin = tables(problem)
    x = draw(seed, problem.n, IN_MIX).reshape(problem.rows, problem.cols)
    return {"in": x, "cosTab": cos, "sinTab": sin}


def pair_of(index: int, problem: Problem) -> str:
    """'pair 7 (batch 0, pos 1, head 2, j 3)': the pair float `index` of in or out belongs to, and where it is."""
    half, heads, seq = (problem.integers[k] for k in ("halfDim", "heads", "seq"))
    p = index // 2
    row = p // half
    return f"pair {p} (batch {row // (heads * seq)}, pos {(row // heads) % seq}, head {row % heads}, j {p % half})"


def where(role: str, index: int, problem: Problem) -> str:
    """Float `index` of pointer `role` as a message names it: 'pair 7 (batch 0, pos 1, head 2, j 3), its second
    element' for in and out, 'pos 3, j 5' for cosTab and sinTab."""
    if role in ("cosTab", "sinTab"):
        half = problem.integers["halfDim"]
        return f"pos {index // half}, j {index % half}"
    return f"{pair_of(index, problem)}, its {'first' if index % 2 == 0 else 'second'} element"
