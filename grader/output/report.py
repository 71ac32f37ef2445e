"""Stage 7, report: the result model (`GradeReport`, printed by `--json`) and its text rendering.

The text leads with what the student must know first: the verdict (for a fail, whether the output was wrong or
correct but slow) and the first thing to do (first_step: the top-ranked hint, or what the verdict asks), then the
evidence in the course page's order: the byte model before any time, the part-3 table (version, kernels,
floats/elem, ms, GB/s, x copy) with the copy-floor rows, clocks, chain and counters; then the flags and notes on the
student's part-3 row and sentence (only once the output is right: until then they measure nothing) and the other
hints. `grade --json-schema` prints the JSON schema of GradeReport.
"""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator
from tabulate import tabulate

from grader.check.verify import Verification
from grader.core import exercise
from grader.core.errors import Stage
from grader.core.model import ReportModel
from grader.core.text import printable, printable_lines
from grader.feedback.counters import Counters
from grader.feedback.hint import Hint, HintKind, Site
from grader.gpu.clocks import Clocks
from grader.gpu.device import GpuInfo
from grader.source.claims import NOTE_KINDS, Flag
from grader.source.contract import Contract
from grader.timing.timer import Table, TimedRow

Verdict = Literal["gold", "silver", "fail", "error", "no-gpu", "busy"]
SCHEMA_VERSION = 3
"""2: table rows are grader.timing.timer.TimedRow (values_per_elem and value_bytes instead of floats_per_elem);
stage is one of grader.core.errors.Stage. 3: hints are grader.feedback.hint.Hint objects (text, kind, and what fixing
each is estimated to be worth), ranked; a hint read from an older report (a string) becomes a Hint with its text
alone."""


class CompileSummary(ReportModel):
    """What ptxas reported for the kernel: arch, registers, spills and stack frame (bytes), warnings about
    the submission's file (capped; `warnings_dropped` counts those left out), and the compile log itself
    (ptxas -v, capped). Where the log said nothing, the loaded kernel's registers and local memory per
    thread (`local_bytes`, stack plus spills) come from the driver."""

    arch: str
    registers: int | None = None
    spill_stores: int | None = None
    spill_loads: int | None = None
    stack_frame: int | None = None
    local_bytes: int | None = None
    warnings: list[str] = []
    warnings_dropped: int = 0
    log: str = ""


class ByteModel(ReportModel):
    """Bytes the grade counts per element, and what is not counted and why (the exercise's: Exercise.bytes_text,
    cached_text); `cached_bytes`: the size of what is not counted at the benchmark shape (None: not timed)."""

    floats_per_elem: int = exercise.COPY_FLOATS_PER_ELEMENT
    bytes_per_elem: int = exercise.COPY_FLOATS_PER_ELEMENT * exercise.BYTES_PER_FLOAT
    counted: str = ""
    not_counted: str = ""
    cached_bytes: int | None = None


class ProgramSummary(ReportModel):
    """A whole program handed in (grader.source.program): what was graded and what was left out. `summary` is the
    report's line; `kept` the device code compiled with the kernel, `ignored` the names left out (host code,
    other kernels)."""

    summary: str
    kept: list[str] = []
    ignored: list[str] = []


class GradeReport(ReportModel):
    """Everything one grading produced. `verdict` is gold, silver, fail, error (could not be run: `stage`
    says where it stopped), no-gpu (static checks only) or busy (correct, but the GPU was shared while it
    was timed, so no speed verdict is given: grader.timing.contention). `fraction` is the submission's GB/s over the
    copy floor's; `fraction_of_scalar_copy` over the one-float-per-thread copy's. `borderline` is true when
    the fraction's uncertainty band still straddles a threshold after extra measurement. `chain` is the
    exercise's chain with the student's kernel in it (grader.exercises.bias_gelu.chain: the student's part-3 rows beside
    the page's
    staged and fused chains; never graded), `chain_note` why it is absent when it was not timed. `counters` holds
    what Nsight Compute measured (grade --counters, or unasked for a slow correct kernel; grader.feedback.counters;
    never part of the verdict). `hints` are ranked by the time each explains, with its estimate
    (grader.feedback.worth); `sites` are the kernel's global loads and stores as its machine code shows them (buffer,
    line, width: what the hints made after the counters name). `kernel_output`
    holds the first lines the submission's kernels printed (escaped; grader.gpu.capture), `kernel_output_dropped`
    the count of lines not kept. `sandbox` says how NVRTC was confined (grader.compile.sandbox). `program` says what
    was graded of a whole program (grader.source.program), None for a file that holds the kernel alone. `clocks` holds
    the SM and memory clocks the submission was timed at, from NVML (grader.gpu.clocks; None when it was not timed),
    with the reason a verdict was withheld for them or the note that a setting held them."""

    schema_version: int = SCHEMA_VERSION
    file: str
    sha256: str = ""
    exercise: str = ""
    kernel: str = ""
    verdict: Verdict
    reason: str
    details: str = ""
    stage: Stage | None = None
    seed: int | None = None
    versions: dict[str, str] = {}
    gpu: GpuInfo | None = None
    contract: Contract | None = None
    program: ProgramSummary | None = None
    compile: CompileSummary | None = None
    byte_model: ByteModel = ByteModel()
    verification: list[Verification] = []
    bench_rows: int | None = None
    bench_cols: int | None = None
    table: list[TimedRow] = []
    floor_version: str | None = None
    floor_gbs: float | None = None
    fraction: float | None = None
    fraction_low: float | None = None
    fraction_high: float | None = None
    fraction_of_scalar_copy: float | None = None
    borderline: bool = False
    flags: list[Flag] = []
    hints: list[Hint] = []
    sites: list[Site] = []
    chain: Table | None = None
    chain_note: str = ""
    counters: Counters | None = None
    kernel_output: list[str] = []
    kernel_output_dropped: int = 0
    sandbox: str = ""
    clocks: Clocks | None = None

    @field_validator("hints", mode="before")
    @classmethod
    def _hint_objects(cls, hints):
        """A hint given as a string (a report of schema 2, or a caller's plain text) is a Hint with that text."""
        return [{"text": h} if isinstance(h, str) else h for h in hints] if isinstance(hints, list) else hints

    @field_validator("file")
    @classmethod
    def _one_line(cls, file: str) -> str:
        """The file as one printable line (grader.core.text.printable): a name the student chose may hold a newline
        that would forge a line wherever the name is printed."""
        return printable(file, None)


def counters_text(c: Counters) -> list[str]:
    """The counters' lines of the text report: why they were measured unasked (if they were), a table of the
    profiled launches (bytes per element, time, sectors per request, warp instructions per element, issue
    slots busy; "-" where ncu gave nothing), then the findings."""
    why = f" ({c.why})" if c.why else ""
    took = f", {c.seconds:.1f} s" if c.seconds is not None else ""
    if c.unavailable:
        return [f"Counters{why}: not measured: {c.unavailable}", ""]

    def cell(v: float | None, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    rows = [[k.label, cell(k.duration_ns and k.duration_ns / 1e6, ".3f"), cell(k.per_elem(k.dram_read), ".3f"),
             cell(k.per_elem(k.dram_write), ".3f"), cell(k.dram_per_elem, ".3f"), cell(k.per_elem(k.l2_bytes), ".3f"),
             cell(k.sectors_per_request("ld"), ".1f"), cell(k.sectors_per_request("st"), ".1f"),
             cell(k.instructions_per_elem, ".2f"), cell(k.issue_pct, ".0f")]
            for k in c.kernels if k.dram_per_elem is not None]
    out = [f"Counters{why} ({c.tool}{took}, one launch each at the benchmark shape, caches flushed; bytes, sectors and "
           f"warp instructions per element; the model counts {c.model_bytes_per_elem:g} bytes):",
           tabulate(rows, headers=["launch", "ms", "DRAM read", "DRAM written", "DRAM total", "L2", "ld sectors/req",
                                   "st sectors/req", "warp inst/elem", "issue %"], tablefmt="simple",
                    disable_numparse=True)]
    out += [f"Counters: {f}" for f in c.findings]
    return out + [""]


def error_report(file: str, stage: Stage, reason: str, details: str = "", **fields) -> GradeReport:
    """The report of a grading that stopped with verdict "error" at `stage` (every place that stops one, the
    batch's parent and workers included, builds it here). fields: any other GradeReport field (sha256,
    versions, ...)."""
    return GradeReport(file=file, verdict="error", stage=stage, reason=reason, details=details, **fields)


def timed_rows_text(rows: list[TimedRow]) -> str:
    """A timed table's rows as text: the page's part-3 columns (version, kernels, floats/elem, ms, GB/s, x copy)
    and how well each median is known (spread: IQR over the median; reps: timed rounds)."""
    cells = [[t.version, t.kernels, f"{t.floats_per_elem:g}", f"{t.ms:.4f}", f"{t.gbs:.1f}", f"{t.x_copy:.2f}",
              f"{100 * t.spread:.1f}%", t.reps] for t in rows]
    return tabulate(cells, headers=["version", "kernels", "floats/elem", "ms", "GB/s", "x copy", "spread (IQR)",
                                    "reps"], tablefmt="simple")


OUTCOMES = {"gold": "gold", "silver": "silver", "slow": "correct but slow", "wrong": "wrong output",
            "error": "error of the student", "grader": "error of the grader", "busy": "busy: not graded",
            "no-gpu": "no GPU: not graded"}
"""What a verdict means for whoever acts on it (outcome): a fail is wrong output (1 point of 10 in Gradescope's score)
or correct but slow (5 points); an error is the submission's (its file, code or launch) or the grader's own (no
score: grader.output.gradescope.is_graded; a batch worker that did not start, stage setup, too)."""
GRADER_STAGES = (Stage.GRADER, Stage.INSTALL, Stage.SETUP)
"""Error stages that are the grader's doing, not the submission's."""
NEXT_BY_STAGE = {
    Stage.INPUT: "hand in the kernel as one UTF-8 .cu file (the verdict says what was wrong with this one), then "
                 "grade again",
    Stage.SOURCE: "take out what the verdict names (the grader refuses it before compiling), then grade again",
    Stage.COMPILE: "fix the first compile error (below), then grade again",
    Stage.CONTRACT: "make the kernel's name and parameter list match the launch (below), or declare your launch in a "
                    "// grade: block",
    Stage.LAUNCH: "make the launch fit your kernel as the verdict says, then grade again",
    Stage.RUN: "find the fault: check every index against rows and cols (the shapes below include 1 x 1 and "
               "ragged ones); no kernel may read or write outside its buffers",
}
"""The first thing to do after an error in the submission, by the stage that stopped it."""


def outcome(verdict: str, stage: str | None) -> str:
    """The key in OUTCOMES of a verdict stopped at `stage` (a GradeReport's or a batch row's): "slow" or "wrong" for a
    fail (timed, stage grade, or stopped at verification), "grader" or "error" for an error (GRADER_STAGES or not),
    else the verdict itself (gold, silver, busy, no-gpu)."""
    if verdict == "fail":
        return "slow" if stage == Stage.GRADE else "wrong"
    if verdict == "error":
        return "grader" if stage in GRADER_STAGES else "error"
    return verdict


def output_right(r: GradeReport) -> bool:
    """True when the kernel's output was verified right (gold, silver, a correct but slow fail, or busy: correct but
    not timed on a quiet GPU): only then do its part-3 row and sentence have a measurement to be checked against."""
    return outcome(r.verdict, r.stage) in ("gold", "silver", "slow", "busy")


def first_step(r: GradeReport) -> tuple[str, Hint | None]:
    """What the student should do first: (a sentence for the report's "Next:" line, or "" when the hint says it;
    the hint to show first, or None). A correct kernel's top-ranked hint (grader.feedback.worth ranks them by the time
    each explains); wrong output: make it right (the first failed check, the seed that replays it), with the tanh
    hint when the machine code shows the tanh GELU; an error: NEXT_BY_STAGE, or "nothing to fix" when it is the
    grader's; busy and no-gpu: run again where the GPU is free or present (no-gpu with the tanh hint: the output will
    be wrong); gold with nothing to fix: says so (or the first flag on the student's row or sentence)."""
    kind = outcome(r.verdict, r.stage)
    tanh = next((h for h in r.hints if h.kind == HintKind.TANH), None)
    if kind in ("gold", "silver", "slow"):
        if r.hints:
            return "", r.hints[0]
        claims = [f for f in r.flags if f.kind not in NOTE_KINDS]
        if claims:
            return f"correct your part-3 row or sentence: {claims[0].message}", None
        return ("nothing to fix: gold is the top verdict" if kind == "gold" else "", None)
    if kind == "wrong":
        bad = next((v for v in r.verification if not v.passed), None)
        seed = f"; --seed {r.seed} replays these inputs" if r.seed is not None else ""
        return (f"make the output right first ({bad.message if bad else r.reason}{seed}); speed is graded once it "
                "is correct", tanh)
    if kind == "error":
        return NEXT_BY_STAGE.get(r.stage, "fix what the verdict says, then grade again"), None
    return {"grader": "nothing to fix in your file: the grader failed here; run again, and report it if it persists",
            "busy": "run again when the GPU is free: your kernel is correct, but the GPU was shared while it was timed",
            "no-gpu": "run it where there is an NVIDIA GPU: verification and timing need one (the checks that need "
                      "none passed)"}.get(kind, ""), tanh if kind == "no-gpu" else None


def _lead_lines(r: GradeReport) -> tuple[list[str], Hint | None]:
    """The report's first lines: the verdict (with its outcome for a fail), the first thing to do, the verdict's
    details (compile diagnostics, both parameter lists); and the hint shown there (None if none)."""
    verdict = r.verdict.upper() + (" (borderline)" if r.borderline else "")
    if r.verdict == "fail":
        verdict += f" ({OUTCOMES[outcome(r.verdict, r.stage)]})"
    out = [f"Verdict: {verdict}: {r.reason}"]
    step, hint = first_step(r)
    if step:
        out.append(f"Next: {step}.")
    if hint is not None:
        out.append(f"Hint: {hint}")
    out.extend("  " + line for line in r.details.splitlines())
    return out, hint


def _evidence_lines(r: GradeReport) -> list[str]:
    """The evidence, in the course page's order: card and versions, the byte model, the compile facts, the
    verifications and seed, the timed table, clocks, the chain, counters and the kernel's own output."""
    out = []
    if r.gpu:
        g = r.gpu
        out.append(
            f"GPU: {g.name}, compute capability {g.compute_capability}, {g.multiprocessors} SMs, "
            f"L2 {g.l2_bytes / 2**20:.0f} MiB, driver CUDA {g.driver_cuda}"
        )
    if r.versions:
        out.append("Versions: " + ", ".join(f"{name} {v}" for name, v in r.versions.items()))
    if r.program:
        out.append(f"Program: {r.program.summary}.")
    bm = r.byte_model
    bias_note = bm.not_counted
    if bm.cached_bytes:
        bias_note += f" ({bm.cached_bytes / 1024:.0f} KiB at the benchmark shape)"
    out.append(f"Byte model: {bm.floats_per_elem} floats per element = {bm.bytes_per_elem} bytes ({bm.counted}); "
               f"not counted: {bias_note}.")
    if r.bench_rows:
        n = r.bench_rows * r.bench_cols
        out.append(f"Benchmark shape: {r.bench_rows} x {r.bench_cols} = {n:,} elements, "
                   f"{n * bm.bytes_per_elem / 1e9:.3f} GB moved per launch.")
    if r.compile:
        out.append(_compile_line(r.compile))
    for v in r.verification:
        out.append(("Verified: " if v.passed else "FAILED verification: ") + v.message)
    if r.seed is not None and r.verification:  # inputs were drawn: the seed replays them
        out.append(f"Seed: {r.seed} (replay with --seed {r.seed})")
    if r.table:
        out.extend(["", timed_rows_text(r.table), ""])
    if r.clocks is not None:
        out.append(f"Clocks while timing: {r.clocks.summary()}.")
        if r.clocks.note:
            out.append(f"Note: {r.clocks.note}.")
    if r.chain:
        c = r.chain
        out.append(f"Your part-3 rows: your kernel in the exercise's chain, in front of the page's addResidual, beside "
                   f"the page's staged and fused chains ({c.shape}; not graded):")
        out.extend([timed_rows_text(c.rows), ""])
    elif r.chain_note:
        out.append(f"Note: {r.chain_note}")
    if r.counters is not None:
        out.extend(counters_text(r.counters))
    if r.kernel_output or r.kernel_output_dropped:
        out.append(f"Kernel output (printf from your kernel, not the grader; {len(r.kernel_output)} lines shown "
                   f"escaped, {r.kernel_output_dropped} more dropped):")
        out.extend("  | " + line for line in r.kernel_output)
    return out


def _compile_line(c: CompileSummary) -> str:
    """'Compiled for ARCH: N registers, ...' (ptxas's facts, or the driver's)."""
    facts = [f"{c.registers} registers" if c.registers is not None else None,
             f"{c.stack_frame} bytes stack" if c.stack_frame is not None else None,
             f"{c.spill_stores} bytes spill stores, {c.spill_loads} bytes spill loads"
             if c.spill_stores is not None else None,
             f"{c.local_bytes} bytes local memory per thread (stack and spills)"
             if c.local_bytes is not None else None]
    shown = ", ".join(f for f in facts if f) or "no resource report (ptxas said nothing; no GPU to ask)"
    return f"Compiled for {c.arch}: {shown}."


def _claim_lines(r: GradeReport) -> list[str]:
    """The flags and notes on the student's part-3 row and sentence, once the output is right (output_right); before,
    one line saying they wait for it."""
    if not r.flags:
        return []
    if not output_right(r):
        return ["Note: your part-3 row and sentence are checked once the output is right."]
    out = []
    for f in r.flags:
        if f.kind in NOTE_KINDS:
            out.append(f"Note: {f.message} [measured: {f.grader}]")
        else:
            out.append(f"Flag ({f.kind}): {f.message} [yours: {f.student}; measured: {f.grader}]")
    return out


def render_text(r: GradeReport) -> str:
    """The human report (what `grade FILE` prints): the file; the verdict and the first thing to do (first_step) with
    the verdict's details; then the evidence (card, versions, byte model, compile, verification, table, clocks,
    chain, counters, kernel output); then the flags and notes on the part-3 row and sentence (once the output is right)
    and the other hints. Everything in it is terminal-safe (grader.core.text): names, the student's row and NVRTC's
    source excerpts may hold escape sequences."""
    # one line: a newline in a file name cannot forge one
    out = [f"{printable(r.file, None)}" + (f": {r.kernel}" if r.kernel else "")]
    lead, shown = _lead_lines(r)
    out += lead + [""] + _evidence_lines(r)
    out += _claim_lines(r)
    out += [f"Hint: {h}" for h in r.hints if h is not shown]
    return printable_lines("\n".join(out))
