"""The timed tables: RoPE, the chain and the bf16 GELU, each against the copy floor on the same buffers.

Timing is the grader's own (grader.timing.timer.TableTimer): launches alternate in rounds and the floor is the
fastest of grader.timing.timer.CopyFloor's three copies, measured in the same timer; rows are
grader.timing.timer.TimedRow. Buffers are sized like the grader's benchmark (grader.timing.timer.bench_shape: each
float32 buffer at least 16x the L2 size, rows <= 65535), so the traffic is DRAM traffic. Units: ms (CUDA event
intervals, median), GB/s = 1e9 bytes/s of bytes read plus bytes written, from each kernel's byte model (its LaunchSpec:
grader.timing.timer.Timed reads it); x copy = GB/s over the floor's GB/s (for a kernel that moves what a copy moves, the
floor's time over the kernel's).
"""

from __future__ import annotations

from collections.abc import Callable

from grader.exercises import bias_gelu as exercise
from grader.exercises.bias_gelu.page_kernels import (
    FUSED,
    STAGED,
    WIDTHS,
    Version,
    chain_versions,
    launch_kernel,
    make_launch,
)
from grader.gpu.device import Gpu
from grader.timing.timer import CopyFloor, InputFiller, Table, TableTimer, Timed, TimerSettings, bench_shape
from reference_kernels import expected as ref
from reference_kernels.suite import BF16_VERSIONS, TO_BF16, rope_versions

ROPE_BENCH = (2048, 32, 128)
"""S, H, D of the timed RoPE tensors (a Llama-7B-like layer, the page's 512 KiB tables); B makes each tensor
about the size of a benchmark buffer."""


QUICK = TimerSettings(warmup_ms=5.0, min_reps=3, target_rse=1.0, cap_s=0.5)
"""A smoke test of the timing path (GPU tests): numbers are not meaningful."""


def _timed(versions: list[Version], launches: dict[str, Callable[[], None]]) -> list[Timed]:
    """The versions as grader.timing.timer.Timed entries: label, launch, the kernels' LaunchSpecs (the byte model)
    and work per thread."""
    return [Timed(v.label, launches[v.label], v.specs, per_thread=v.per_thread) for v in versions]


def _time_table(gpu: Gpu, floor: CopyFloor, name: str, shape: str, n: int, versions: list[Version],
                launches: dict[str, Callable[[], None]], copy_src, copy_dst, copy_floats: int,
                settings: TimerSettings, matrix: tuple[int, int] | None = None) -> Table:
    """Time `launches` (one per version, n output elements each) beside the copy floor copying copy_floats
    floats from copy_src to copy_dst (grader.timing.timer.TableTimer, the grader's own)."""
    timer = TableTimer(gpu, floor, _timed(versions, launches), n, copy_src, copy_dst, copy_floats)
    timer.run(settings)
    return timer.table(name, shape, matrix)


def _bench_elements(gpu: Gpu, buffers: int) -> tuple[int, int]:
    """The benchmark's (rows, cols) when `buffers` float32 buffers must fit in free memory now."""
    return bench_shape(gpu.info, buffers, free_bytes=gpu.free_bytes())


def rope_table(gpu: Gpu, loaded: dict, floor: CopyFloor, settings: TimerSettings = TimerSettings(),
               layout: str = "bshd", base: float = ref.DEFAULT_BASE, elements: int | None = None,
               shd: tuple[int, int, int] = ROPE_BENCH, name: str = "RoPE") -> Table:
    """Time the four RoPE kernels at both widths on one layout. `elements` (per tensor) defaults to the
    benchmark size; B is chosen to reach it at S, H, D = `shd` (S shrinks if one batch is too many)."""
    s, h, d = shd
    if elements is None:
        rows, cols = _bench_elements(gpu, 4)
        elements = rows * cols
    if elements < s * h * d:
        s = max(1, elements // (h * d))
    b = max(1, round(elements / (s * h * d)))
    n = b * s * h * d
    cos, sin = ref.rope_tables(s, d, base)
    big = {key: gpu.alloc(n * 4) for key in ("q", "k", "qOut", "kOut")}
    tabs = {"cos": gpu.alloc(cos.nbytes), "sin": gpu.alloc(sin.nbytes)}
    try:
        gpu.upload(tabs["cos"], cos)
        gpu.upload(tabs["sin"], sin)
        fill = InputFiller(gpu)
        fill(big["q"], n, 1, -4.0, 4.0)
        fill(big["k"], n, 2, -4.0, 4.0)
        scalars = {"pairs": n // 2, "halfDim": d // 2, "heads": h if layout == "bshd" else 1, "seq": s}
        versions = [v for w in WIDTHS for v in rope_versions(w).values()]
        launches = {v.label: make_launch(gpu, loaded, v, {**big, **tabs}, scalars, 1, n) for v in versions}
        dims = f"B={b} S={s} H={h} D={d}" if layout == "bshd" else f"B={b} H={h} S={s} D={d}"
        return _time_table(gpu, floor, name, f"{layout.upper()} {dims}, base {base:g}, {n * 4 / 2**30:.2f} GiB "
                           "per tensor", n, versions, launches, big["q"], big["qOut"], n, settings)
    finally:
        for buf in (*big.values(), *tabs.values()):
            buf.close()


def chain_table(gpu: Gpu, loaded: dict, floor: CopyFloor, settings: TimerSettings = TimerSettings(),
                shape: tuple[int, int] | None = None) -> Table:
    """Time every chain version at both widths at `shape` (rows, cols; default: the benchmark shape)."""
    rows, cols = shape or _bench_elements(gpu, 5)
    n = rows * cols
    big = {key: gpu.alloc(n * 4) for key in ("x", "r", "t1", "t2", "out")}
    bias = gpu.alloc(cols * 4)
    try:
        fill = InputFiller(gpu)
        fill(big["x"], n, 3, *exercise.INPUT_X_RANGE)
        fill(bias, cols, 4, *exercise.INPUT_BIAS_RANGE)
        fill(big["r"], n, 5, -1.0, 1.0)
        versions = [v for w in WIDTHS for v in chain_versions(w).values()]
        launches = {v.label: make_launch(gpu, loaded, v, {**big, "bias": bias}, {"cols": cols, "n": n}, rows, cols)
                    for v in versions}
        return _time_table(gpu, floor, "chain", f"{rows} x {cols}, {n * 4 / 2**30:.2f} GiB per buffer", n,
                           versions, launches, big["x"], big["out"], n, settings, matrix=(rows, cols))
    finally:
        for buf in (*big.values(), bias):
            buf.close()


def bf16_table(gpu: Gpu, loaded: dict, floor: CopyFloor, settings: TimerSettings = TimerSettings(),
               elements: int | None = None) -> Table:
    """Time both bf16 GELUs (llm.c's tanhf form and the sigmoid form) on `elements` bf16 values (default: as
    many bytes as a benchmark float32 buffer, rounded down to a multiple of 8) against a copy of the same
    bytes."""
    if elements is None:
        rows, cols = _bench_elements(gpu, 4)
        elements = 2 * rows * cols
    n = max(8, elements // 8 * 8)
    src, out = gpu.alloc(n * 2), gpu.alloc(n * 2)
    try:
        tmp = gpu.alloc(n * 4)
        try:
            InputFiller(gpu)(tmp, n, 6, -4.0, 4.0)
            launch_kernel(gpu, loaded, TO_BF16, n, **{"in": tmp, "out": src, "n": n})
            gpu.sync()
        finally:
            tmp.close()
        launches = {v.label: make_launch(gpu, loaded, v, {"in": src, "out": out}, {"n": n}, 1, n)
                    for v in BF16_VERSIONS}
        return _time_table(gpu, floor, "bf16 GELU", f"{n} bf16 values, {n * 2 / 2**30:.2f} GiB per buffer", n,
                           list(BF16_VERSIONS), launches, src, out, n // 2, settings)
    finally:
        src.close()
        out.close()


def staged_over_fused(chain: Table, width: int) -> float:
    """Median time of the staged chain over the fused chain at `width`."""
    return chain.row(f"{STAGED}<{width}>").ms / chain.row(f"{FUSED}<{width}>").ms

