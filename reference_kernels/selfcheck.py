"""`grade selfcheck`: compile every reference kernel, gate them against float64, time them against the copy
floor and print the course page's report (byte counts, RoPE, chain and bf16 tables, staged/fused mismatch,
GELU gap, the four predictions).

  grade selfcheck [--no-timing] [--layout bshd|bhsd] [--base B] [--seed N] [--json PATH] [--arch sm_XY]
                  [--device N]

Exit codes (grader.errors): 0 every gate passed (the predictions are observations, never a failure); 1 a gate
failed or a source did not compile; 2 usage error; 3 no GPU (everything compiled; the float64 GELU gap and the
byte model are printed, gates and timing need a CUDA GPU).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from pydantic import BaseModel

from grader.compile import DEFAULT_ARCH, Compiled
from grader.device import Gpu, GpuInfo, open_gpu
from grader.errors import EXIT_FAIL, EXIT_NO_GPU, EXIT_PASS, NoGpuError, SubmissionError
from grader.reference import gelu_gap
from grader.timing import CopyFloor
from reference_kernels import expected as ref
from reference_kernels.counted import SuiteCounters, counters_text, suite_counters
from reference_kernels.gates import Gate, StagedFusedMismatch, all_gates, gelu_gap_float32
from reference_kernels.selfcheck_report import (
    Prediction, byte_counts, gap_text, gates_text, mismatch_text, predictions, predictions_text, table_text,
)
from reference_kernels.suite import compile_suite, load_suite
from grader.timing import Table, TimerSettings
from reference_kernels.timed import bf16_table, chain_table, rope_table

DEFAULT_SEED = 96
"""Seed of the gates' inputs (a fixed default, so two runs check the same numbers; --seed changes it)."""


class SelfcheckResult(BaseModel):
    """Everything a self-check measured (written by --json): the device, the compile target, the gates,
    the staged/fused mismatches, the timed tables, both GELU gaps (value, |x|) and the predictions."""

    gpu: GpuInfo | None = None
    arch: str
    seed: int
    gates: list[Gate] = []
    mismatches: list[StagedFusedMismatch] = []
    tables: list[Table] = []
    gap_float64: tuple[float, float]
    gap_float32: tuple[float, float] | None = None
    predictions: list[Prediction] = []
    counters: SuiteCounters | None = None

    @property
    def passed(self) -> bool:
        """True when every gate passed."""
        return all(g.passed for g in self.gates)

    def table(self, name: str) -> Table | None:
        """The timed table called `name` ('RoPE', 'chain', 'bf16 GELU'), or None if it was not timed."""
        return next((t for t in self.tables if t.name == name), None)


def run_selfcheck(gpu: Gpu, compiled: dict[str, Compiled], *, timing: bool = True,
                  settings: TimerSettings = TimerSettings(), layout: str = "bshd", base: float = ref.DEFAULT_BASE,
                  seed: int = DEFAULT_SEED, emit: Callable[[str], None] = lambda text: None,
                  sizes: dict[str, object] | None = None) -> SelfcheckResult:
    """Gates, then (if `timing` and every gate passed) the timed tables, then the GELU gaps and predictions.

    `emit` receives each section's text as soon as it is ready, in the page's order (the byte counts are the
    caller's, before this). `sizes` overrides the timed sizes (keys 'rope' and 'bf16': elements, 'chain':
    (rows, cols)) for smoke tests. Raises SubmissionError if a kernel faults (the CUDA context is then unusable).
    """
    loaded = load_suite(gpu, compiled)
    sizes = sizes or {}
    result = SelfcheckResult(gpu=gpu.info, arch=gpu.info.arch, seed=seed, gap_float64=gelu_gap())
    result.gates, result.mismatches = all_gates(gpu, loaded, seed)
    emit(gates_text(result.gates))
    if not result.passed:
        emit("A gate failed: nothing is timed.")
        return result
    if timing:
        floor = CopyFloor(gpu)
        result.tables.append(rope_table(gpu, loaded, floor, settings, layout, base, sizes.get("rope")))
        emit(table_text(result.tables[-1]))
        result.tables.append(chain_table(gpu, loaded, floor, settings, sizes.get("chain")))
        emit(table_text(result.tables[-1]))
        result.tables.append(bf16_table(gpu, loaded, floor, settings, sizes.get("bf16")))
        emit(table_text(result.tables[-1]))
    emit(mismatch_text(result.mismatches))
    result.gap_float32 = gelu_gap_float32(gpu, loaded)
    emit(gap_text(result.gap_float64, result.gap_float32))
    result.predictions = predictions(result.table("chain"), result.table("RoPE"), result.gap_float64,
                                     result.gap_float32)
    emit(predictions_text(result.predictions))
    return result


def parser() -> argparse.ArgumentParser:
    """The argument parser of `grade selfcheck` (module docstring)."""
    p = argparse.ArgumentParser(prog="grade selfcheck", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--no-timing", action="store_true", help="run the gates and the GELU gap only (fast)")
    p.add_argument("--layout", choices=ref.LAYOUTS, default="bshd", help="RoPE layout timed (gates run both)")
    p.add_argument("--base", type=float, default=ref.DEFAULT_BASE,
                   help=f"RoPE base timed (default {ref.DEFAULT_BASE:g}; gates run {ref.DEFAULT_BASE:g} and "
                        f"{ref.LONG_CONTEXT_BASE:g})")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"seed of the gates' inputs (default {DEFAULT_SEED})")
    p.add_argument("--json", metavar="PATH", help="also write every result as JSON to PATH")
    p.add_argument("--counters", action="store_true",
                   help="also measure every kernel's DRAM bytes per element with Nsight Compute (ncu) and settle the "
                        "page's two cache assumptions (the bias row, the RoPE tables)")
    p.add_argument("--arch", default=DEFAULT_ARCH,
                   help=f"compile target when no GPU is present (default {DEFAULT_ARCH})")
    p.add_argument("--device", type=int, default=0, help="CUDA device index (default 0)")
    return p


def main(argv: list[str]) -> int:
    """Entry point of `grade selfcheck`; returns the exit code."""
    args = parser().parse_args(argv)
    gpu, no_gpu = None, ""
    try:
        gpu = open_gpu(args.device)
    except NoGpuError as err:
        no_gpu = str(err)
    arch = gpu.info.arch if gpu else args.arch
    try:
        compiled = compile_suite(arch)
    except SubmissionError as err:
        print(f"grade selfcheck: {err}\n{err.details}".rstrip(), file=sys.stderr)
        return EXIT_FAIL
    count = sum(len(c.kernels) for c in compiled.values())
    where = f"{gpu.info.name} ({arch}, driver CUDA {gpu.info.driver_cuda})" if gpu else f"no GPU, target {arch}"
    print(f"Reference kernels: {count} kernels from {len(compiled)} sources compiled with NVRTC; {where}\n")
    print(byte_counts() + "\n")
    if gpu is None:
        print(gap_text(gelu_gap(), None))
        print(f"grade selfcheck: no GPU ({no_gpu}); all {count} reference kernels compiled for {arch}; the gates "
              "and timing need a CUDA GPU", file=sys.stderr)
        return EXIT_NO_GPU
    try:
        result = run_selfcheck(gpu, compiled, timing=not args.no_timing, layout=args.layout, base=args.base,
                               seed=args.seed, emit=lambda text: print(text + "\n", flush=True))
    except SubmissionError as err:
        print(f"grade selfcheck: a reference kernel failed on the GPU: {err}", file=sys.stderr)
        return EXIT_FAIL
    if args.counters and result.passed:
        result.counters = suite_counters(device=args.device)
        print(counters_text(result.counters) + "\n", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            f.write(result.model_dump_json(indent=2))
    if not result.passed:
        print(f"grade selfcheck: {sum(not g.passed for g in result.gates)} gate(s) failed", file=sys.stderr)
        return EXIT_FAIL
    return EXIT_PASS
