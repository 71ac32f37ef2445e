"""`grade selfcheck`: compile every reference kernel, gate them against float64, time them against the copy
floor and print the course page's report (byte counts, RoPE, chain and bf16 tables, staged/fused mismatch,
GELU gap, the four predictions).

  grade selfcheck [--no-timing] [--layout bshd|bhsd] [--base B] [--seed N] [--json] [--counters] [--arch sm_XY]
                  [--device N]

--json writes the SelfcheckResult as JSON on stdout instead of the text report; the report's sections then go
to stderr as they are ready, so a person still sees the progress (`grade selfcheck --json > selfcheck.json`).

Exit codes (grader.core.errors; `grade selfcheck -h` lists them): 0 every gate passed (the predictions are
observations, never a failure); 1 a gate failed, a source did not compile or a reference kernel failed on the
GPU; 2 usage error; 3 no GPU (everything compiled; the float64 GELU gap and the byte model are printed, gates
and timing need a CUDA GPU); 4 the install lacks its CUDA extra (one line names the pip command) or a CUDA call
of the grader's own failed; 130 interrupted (Ctrl-C).

The kernels, the gates, the tables and the predictions, for the reader: docs/reference-kernels.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from pydantic import BaseModel

from grader.compile.nvrtc import DEFAULT_ARCH, Compiled
from grader.compile.toolkit import arch_type, require_cuda
from grader.core.errors import (
    EXIT_FAIL,
    EXIT_GRADER,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_NO_GPU,
    EXIT_PASS,
    GraderFault,
    NoGpuError,
    SubmissionError,
    exit_codes_help,
)
from grader.core.options import HelpFormatter
from grader.core.text import printable
from grader.exercises.bias_gelu.reference import gelu_gap
from grader.gpu.device import Gpu, GpuInfo, open_gpu
from grader.timing.timer import CopyFloor, Table, TimerSettings, over_bound
from reference_kernels import expected as ref
from reference_kernels.counted import SuiteCounters, counters_text, suite_counters
from reference_kernels.gates import Gate, StagedFusedMismatch, all_gates, gelu_gap_float32
from reference_kernels.selfcheck_report import (
    Prediction,
    byte_counts,
    gap_text,
    gates_text,
    mismatch_text,
    predictions,
    predictions_text,
    table_text,
)
from reference_kernels.suite import compile_suite, load_suite
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
    refused: list[str] = []
    """A line for each timed table not shown: a row faster than physics allows (grader.timing.timer.over_bound)."""
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
        for table in (rope_table(gpu, loaded, floor, settings, layout, base, sizes.get("rope")),
                      chain_table(gpu, loaded, floor, settings, sizes.get("chain")),
                      bf16_table(gpu, loaded, floor, settings, sizes.get("bf16"))):
            # faster than physics allows: no number is shown (at the benchmark's sizes only: the smoke tests'
            # small `sizes` fit in the L2, where no DRAM bound holds)
            high = [] if sizes else over_bound(table, gpu.info.peak_gbs)
            if high:
                result.refused.append(f"{table.name}: not shown: {'; '.join(high)}")
                emit(result.refused[-1])
            else:
                result.tables.append(table)
                emit(table_text(table))
    emit(mismatch_text(result.mismatches))
    result.gap_float32 = gelu_gap_float32(gpu, loaded)
    emit(gap_text(result.gap_float64, result.gap_float32))
    result.predictions = predictions(result.table("chain"), result.table("RoPE"), result.gap_float64,
                                     result.gap_float32)
    emit(predictions_text(result.predictions))
    return result


def parser() -> argparse.ArgumentParser:
    """The argument parser of `grade selfcheck` (module docstring)."""
    p = argparse.ArgumentParser(
        prog="grade selfcheck", description=__doc__.split("\n\n")[0], formatter_class=HelpFormatter,
        epilog=exit_codes_help(
            (EXIT_PASS, "every gate passed (the predictions are observations, never a failure)"),
            (EXIT_FAIL, "a gate failed, a source did not compile, or a reference kernel failed on the GPU"),
            (EXIT_INPUT, "usage error (a bad option)"),
            (EXIT_NO_GPU, "no GPU: every kernel compiled; the byte model and the float64 GELU gap are printed, the "
                          "gates and timing need a CUDA GPU"),
            (EXIT_GRADER, "not run, not the kernels' fault: the install lacks its CUDA extra (one line names the pip "
                          "command), a CUDA call of the grader's own failed, or a timed table was not shown (a row "
                          "faster than physics allows: a timing not to be trusted)"),
            EXIT_INTERRUPTED))
    p.add_argument("--no-timing", action="store_true", help="run the gates and the GELU gap only (fast)")
    p.add_argument("--layout", choices=ref.LAYOUTS, default="bshd", help="RoPE layout timed (gates run both)")
    p.add_argument("--base", type=float, default=ref.DEFAULT_BASE,
                   help=f"RoPE base timed (default {ref.DEFAULT_BASE:g}; gates run {ref.DEFAULT_BASE:g} and "
                        f"{ref.LONG_CONTEXT_BASE:g})")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"seed of the gates' inputs (default {DEFAULT_SEED})")
    p.add_argument("--json", action="store_true",
                   help="write the result (every gate, table and prediction) as JSON on stdout instead of the text "
                        "report; the report's sections then go to stderr, as progress")
    p.add_argument("--counters", action="store_true",
                   help="also measure every kernel's DRAM bytes per element with Nsight Compute (ncu) and settle the "
                        "page's two cache assumptions (the bias row, the RoPE tables)")
    p.add_argument("--arch", type=arch_type, default=DEFAULT_ARCH,
                   help=f"compile target when no GPU is present (default {DEFAULT_ARCH})")
    p.add_argument("--device", type=int, default=0, help="CUDA device index (default 0)")
    return p


def command() -> tuple[argparse.ArgumentParser, Callable[[argparse.Namespace, argparse.ArgumentParser | None], int]]:
    """`grade selfcheck` as grader.cli adopts it (the `grade.commands` entry point in pyproject.toml): the
    parser and the function that runs it on the parsed arguments."""
    return parser(), run


def main(argv: list[str]) -> int:
    """`grade selfcheck ARGV` without the `grade` command; returns the exit code."""
    return run(parser().parse_args(argv))


def run(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> int:
    """`grade selfcheck` on arguments parsed by parser() or the `grade` command's copy of it (`parser`, unused:
    the same call as grader.batch.command.run_batch's); returns the exit code. An incomplete install (no CUDA extra)
    or a failed CUDA call of the grader's own is one line on stderr and exit 4, as for `grade FILE`."""
    try:
        return _run(args)
    except GraderFault as err:  # InstallError included
        print(f"grade selfcheck: {printable(str(err), None)}", file=sys.stderr)
        return EXIT_GRADER


def _run(args: argparse.Namespace) -> int:
    report = sys.stderr if args.json else sys.stdout  # --json: stdout holds the JSON alone

    def show(text: str) -> None:
        print(text + "\n", file=report, flush=True)

    require_cuda()  # before any compile: else NVRTC's missing library is a traceback from the first one
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
    show(f"Reference kernels: {count} kernels from {len(compiled)} sources compiled with NVRTC; {where}")
    show(byte_counts())
    if gpu is None:
        gap = gelu_gap()
        print(gap_text(gap, None), file=report)
        if args.json:
            print(SelfcheckResult(arch=arch, seed=args.seed, gap_float64=gap).model_dump_json(indent=2))
        print(f"grade selfcheck: no GPU ({no_gpu}); all {count} reference kernels compiled for {arch}; the gates "
              "and timing need a CUDA GPU", file=sys.stderr)
        return EXIT_NO_GPU
    try:
        result = run_selfcheck(gpu, compiled, timing=not args.no_timing, layout=args.layout, base=args.base,
                               seed=args.seed, emit=show)
    except SubmissionError as err:
        print(f"grade selfcheck: a reference kernel failed on the GPU: {err}", file=sys.stderr)
        return EXIT_FAIL
    if args.counters and result.passed:
        result.counters = suite_counters(device=args.device)
        show(counters_text(result.counters))
    if args.json:
        print(result.model_dump_json(indent=2), flush=True)
    if not result.passed:
        print(f"grade selfcheck: {sum(not g.passed for g in result.gates)} gate(s) failed", file=sys.stderr)
        return EXIT_FAIL
    if result.refused:
        print(f"grade selfcheck: {len(result.refused)} timed table(s) not shown, their timing is not to be trusted "
              "(a row faster than physics allows); run again, and report it if it persists", file=sys.stderr)
        return EXIT_GRADER
    return EXIT_PASS
