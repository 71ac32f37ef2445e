"""Stage 7, report: the result model (`GradeReport`, printed by `--json`) and its text rendering.

Text order follows the course page: the byte model first, before any time; then the part-3 table
(version, kernels, floats/elem, ms, GB/s, x copy) with the copy-floor rows; then the verdict and what to
look at. `grade --json-schema` prints the JSON schema of GradeReport.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel
from tabulate import tabulate

from grader import exercise
from grader.contract import Contract
from grader.device import GpuInfo
from grader.jsonfloat import FloatsAsWritten, JsonFloat
from grader.verify import Verification

Verdict = Literal["gold", "silver", "fail", "error", "no-gpu"]
SCHEMA_VERSION = 1


class CompileSummary(BaseModel):
    """What ptxas reported for the kernel: arch, registers, spills and stack frame (bytes), warnings about
    the submission's file, and the compile log itself (ptxas -v, capped)."""

    arch: str
    registers: int | None = None
    spill_stores: int | None = None
    spill_loads: int | None = None
    stack_frame: int | None = None
    warnings: list[str] = []
    log: str = ""


class ByteModel(BaseModel):
    """Bytes the grade counts per element, and what is not counted and why."""

    floats_per_elem: int = exercise.FLOATS_PER_ELEMENT
    bytes_per_elem: int = exercise.FLOATS_PER_ELEMENT * exercise.BYTES_PER_FLOAT
    counted: str = "x read once, out written once"
    not_counted: str = "bias: one cols-float vector read by every row from cache"


class TableRow(BaseModel):
    """One row of the part-3 table: median ms, GB/s (1e9 bytes/s), x copy = GB/s over the floor's GB/s,
    spread = interquartile range over the median, reps = timed launches."""

    version: str
    kernels: int
    floats_per_elem: int
    ms: JsonFloat
    gbs: JsonFloat
    x_copy: JsonFloat
    spread: JsonFloat
    reps: int
    rse: JsonFloat


class Flag(BaseModel):
    """A problem with the student's own numbers: what it is, the student's number and the grader's."""

    kind: str
    message: str
    student: str
    grader: str


class GradeReport(BaseModel):
    """Everything one grading produced. `verdict` is gold, silver, fail, error (could not be run: `stage`
    says where it stopped) or no-gpu (static checks only). `fraction` is the submission's GB/s over the
    copy floor's; `fraction_of_scalar_copy` over the one-float-per-thread copy's. `borderline` is true when
    the fraction's uncertainty band still straddles a threshold after extra measurement."""

    schema_version: int = SCHEMA_VERSION
    file: str
    sha256: str = ""
    kernel: str = exercise.KERNEL_NAME
    verdict: Verdict
    reason: str
    details: str = ""
    stage: str | None = None
    seed: int | None = None
    versions: dict[str, str] = {}
    gpu: GpuInfo | None = None
    contract: Contract | None = None
    compile: CompileSummary | None = None
    byte_model: ByteModel = ByteModel()
    verification: list[Verification] = []
    bench_rows: int | None = None
    bench_cols: int | None = None
    table: list[TableRow] = []
    floor_version: str | None = None
    floor_gbs: JsonFloat | None = None
    fraction: JsonFloat | None = None
    fraction_low: JsonFloat | None = None
    fraction_high: JsonFloat | None = None
    fraction_of_scalar_copy: JsonFloat | None = None
    borderline: bool = False
    flags: list[Flag] = []
    hints: list[str] = []

    @classmethod
    def model_json_schema(cls, *args, schema_generator=FloatsAsWritten, **kwargs):
        """The JSON schema of what `--json` writes: every float admits "NaN", "Infinity" and "-Infinity"."""
        return super().model_json_schema(*args, schema_generator=schema_generator, **kwargs)


def render_text(r: GradeReport) -> str:
    """The human report: header, byte model, compile, verification, table, verdict, hints and flags."""
    out = [f"{r.file}: {r.kernel}"]
    if r.gpu:
        g = r.gpu
        out.append(
            f"GPU: {g.name}, compute capability {g.compute_capability}, {g.multiprocessors} SMs, "
            f"L2 {g.l2_bytes / 2**20:.0f} MiB, driver CUDA {g.driver_cuda}"
        )
    if r.versions:
        out.append("Versions: " + ", ".join(f"{name} {v}" for name, v in r.versions.items()))
    bm = r.byte_model
    bias_note = bm.not_counted
    if r.bench_cols:
        bias_note += f" ({r.bench_cols * exercise.BYTES_PER_FLOAT / 1024:.0f} KiB at the benchmark shape)"
    out.append(f"Byte model: {bm.floats_per_elem} floats per element = {bm.bytes_per_elem} bytes ({bm.counted}); "
               f"not counted: {bias_note}.")
    if r.bench_rows:
        n = r.bench_rows * r.bench_cols
        out.append(f"Benchmark shape: {r.bench_rows} x {r.bench_cols} = {n:,} elements, "
                   f"{n * bm.bytes_per_elem / 1e9:.3f} GB moved per launch.")
    if r.compile:
        c = r.compile
        out.append(f"Compiled for {c.arch}: {c.registers} registers, {c.stack_frame} bytes stack, "
                   f"{c.spill_stores} bytes spill stores, {c.spill_loads} bytes spill loads.")
    for v in r.verification:
        out.append(("Verified: " if v.passed else "FAILED verification: ") + v.message)
    if r.seed is not None and r.verification:  # inputs were drawn: the seed replays them
        out.append(f"Seed: {r.seed} (replay with --seed {r.seed})")
    if r.table:
        rows = [[t.version, t.kernels, t.floats_per_elem, f"{t.ms:.4f}", f"{t.gbs:.1f}", f"{t.x_copy:.2f}",
                 f"{100 * t.spread:.1f}%", t.reps] for t in r.table]
        out.append("")
        out.append(tabulate(rows, headers=["version", "kernels", "floats/elem", "ms", "GB/s", "x copy",
                                           "spread (IQR)", "reps"], tablefmt="simple"))
        out.append("")
    verdict = r.verdict.upper() + (" (borderline)" if r.borderline else "")
    out.append(f"Verdict: {verdict}: {r.reason}")
    if r.details:
        out.extend("  " + line for line in r.details.splitlines())
    for f in r.flags:
        out.append(f"Flag ({f.kind}): {f.message} [yours: {f.student}; measured: {f.grader}]")
    for h in r.hints:
        out.append(f"Hint: {h}")
    return "\n".join(out)
