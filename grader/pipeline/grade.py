"""Stage 6, grade: the grading policy, and the pipeline that runs every stage in order for one file.

source -> compile -> device (load) -> verify -> measure -> grade -> report. Each stage returns a value
(a Submission, a Compiled, Verifications, a Measurement) or raises; `assemble` alone turns what the stages
produced into the GradeReport. Wrong output is a fail whatever the speed; a correct kernel is gold at >= 0.90
of the copy floor, silver at >= 0.75, fail below.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from grader import exercises
from grader.check.verify import Verification, verify
from grader.compile import sandbox
from grader.compile.nvrtc import DEFAULT_ARCH, Compiled, compile_kernels
from grader.compile.toolkit import check_arch, require_cuda
from grader.core import exercise
from grader.core.errors import Busy, GraderError, GraderFault, NoGpuError, Stage, SubmissionError, WrongOutput
from grader.core.exercise import Exercise
from grader.core.launch import LaunchSpec
from grader.core.version import __version__
from grader.feedback.hint import Hint, HintKind
from grader.feedback.hints import code_hints
from grader.feedback.launch_facts import division_facts, item_floats, launch_hints, sites
from grader.feedback.sass import Reading
from grader.feedback.worth import Times, rank
from grader.gpu.capture import Captured, capture_stdout
from grader.gpu.device import Gpu, GpuInfo, open_gpu
from grader.output.report import ByteModel, CompileSummary, GradeReport, ProgramSummary, Verdict, error_report
from grader.source.claims import byte_count_flags
from grader.source.contract import Contract
from grader.source.read import Submission, read_submission
from grader.source.signature import check_params, source_signature
from grader.timing.measure import Measurement, measure
from grader.timing.timer import FLOOR_SCALAR, Table


def verdict_for(fraction: float) -> Verdict:
    """gold at fraction >= exercise.GOLD (0.90), silver at >= exercise.SILVER (0.75), else fail. Only for a
    kernel that passed verification."""
    if fraction >= exercise.GOLD:
        return "gold"
    if fraction >= exercise.SILVER:
        return "silver"
    return "fail"


def versions() -> dict[str, str]:
    """Versions of the CUDA Python packages and NVRTC in use."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"grader": __version__}
    for pkg in ("cuda-core", "cuda-bindings"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "missing"
    try:
        from cuda.bindings import nvrtc

        _, major, minor = nvrtc.nvrtcVersion()
        out["nvrtc"] = f"{major}.{minor}"
    except Exception as err:  # pragma: no cover - reported, never fatal
        out["nvrtc"] = f"unavailable ({err})"
    return out


@dataclass
class Outcome:
    """What the stages of one grading produced, in the order they ran; `assemble` makes the report of it.
    `stopped` is the error a stage raised (SubmissionError, WrongOutput, Busy), `no_gpu` the reason there was
    no GPU (static checks only)."""

    file: str
    sub: Submission
    seed: int
    gpu: GpuInfo | None = None
    no_gpu: str = ""
    target: str = ""
    compiled: Compiled | None = None
    limits: dict[str, int] = field(default_factory=dict)
    verification: list[Verification] = field(default_factory=list)
    measurement: Measurement | None = None
    chain: Table | None = None
    chain_note: str = ""
    printed: Captured = field(default_factory=Captured)
    stopped: SubmissionError | WrongOutput | Busy | None = None
    sass: Reading | None = None
    ex: Exercise | None = None


def grade_file(path: str, *, arch: str | None = None, seed: int | None = None, device_id: int = 0,
               on_stage: Callable[[Stage], None] | None = None, exercise_name: str = exercises.DEFAULT) -> GradeReport:
    """Grade one submission file end to end and return its report.

    exercise_name: the exercise the file answers (grader.exercises.names(); default: the page's own exercise).
    arch: compile target when no GPU is present (default sm_90); with a GPU its own arch is used.
    seed: replay a run's inputs (default: drawn from the OS's secure random source).
    on_stage: called with each of grader.core.errors.PROGRESS as that stage starts (grader.batch.worker times phases
    and applies the batch's compile and run time limits with it).
    Raises InputError (exit 2) for unreadable input or a target the installed NVRTC cannot compile for,
    InstallError (exit 4) when the CUDA extra is missing, GraderFault (exit 4) when a CUDA call of the grader's
    own fails, the card is too small to time on, or the grader cannot read the kernel's parameter list from the
    cubin (grader.compile.nvrtc, grader.compile.cubin); every problem of the submission itself is a report with
    verdict "error" or "fail".
    """
    stage = on_stage or (lambda _name: None)
    ex = exercises.get(exercise_name)
    require_cuda()
    stage(Stage.READ)
    try:
        sub = read_submission(path, ex)
    except SubmissionError as err:  # read, but refused (an include form): a report, like every other refusal
        return error_report(str(path), err.stage, str(err), err.details, versions=versions(), exercise=ex.name,
                            kernel=ex.kernel_name, byte_model=byte_model(ex))
    out = Outcome(file=str(path), sub=sub, seed=secrets.randbits(63) if seed is None else seed, ex=ex)
    gpu = None
    stage(Stage.CONTEXT)
    try:
        gpu = open_gpu(device_id)
        out.gpu = gpu.info
    except NoGpuError as err:
        out.no_gpu = str(err)
    out.target = gpu.info.arch if gpu else (arch or DEFAULT_ARCH)
    check_arch(out.target, gpu.info.name if gpu else None)
    try:
        stage(Stage.COMPILE)
        out.compiled = compile_submission(sub, ex, out.target)
        out.sass = Reading(out.compiled.cubin, out.compiled.kernels[ex.kernel_name].mangled)  # runs while the GPU works
        spec = launch_spec(sub, out.compiled, ex)
        if gpu is not None:
            with capture_stdout(out.printed):  # a kernel's printf must not reach the report's stream
                _run_on_gpu(gpu, spec, out, stage)
    except (SubmissionError, WrongOutput, Busy) as err:
        out.stopped = err
    return assemble(out)


def compile_submission(sub: Submission, ex: Exercise, target: str) -> Compiled:
    """Stage compile of the pipeline's one front (grade_file; the counters' child, grader.pipeline.profiled): the
    submission's kernel `ex.kernel_name` compiled for `target` ("sm_90") with line info, sandboxed
    (grader.compile.nvrtc). Raises SubmissionError(Stage.COMPILE) for the student's compile errors."""
    return compile_kernels(sub.compile_text, sub.name, (ex.kernel_name,), target, lineinfo=True)


def launch_spec(sub: Submission, compiled: Compiled, ex: Exercise) -> LaunchSpec:
    """The submission's launch: its contract (grader.source.contract) with the parameter widths the cubin gives,
    checked against its source's signature (grader.source.signature.check_params). Raises SubmissionError
    (stage contract) when they disagree."""
    info = compiled.kernels[ex.kernel_name]
    widths = check_params(sub.contract, [(p.ptx_type, p.size) for p in info.params],
                          source_signature(sub.text, ex.kernel_name), ex.kernel_name)
    return sub.contract.launch_spec(widths)


def _run_on_gpu(gpu: Gpu, spec: LaunchSpec, out: Outcome, stage: Callable[[Stage], None]) -> None:
    """Load, verify at every shape, then measure; each result goes into `out`. Raises what the stages raise."""
    stage(Stage.VERIFY)
    contract, ex = out.sub.contract, out.ex
    kernel = gpu.load(out.compiled)[ex.kernel_name]
    out.limits = gpu.kernel_limits(kernel)
    check_launch_fits(out.limits, contract)
    sizes = tuple(gpu.param_sizes(kernel))
    widths = tuple(p.size for p in spec.params)
    if sizes != widths:
        raise GraderFault(f"the driver reports parameter sizes {sizes} for the kernel, the grader read {widths} "
                          "from the cubin's metadata (grader.compile.cubin): the grader misread the cubin, "
                          "so nothing is "
                          "judged; report it to the course staff with the file")
    rng = np.random.default_rng(out.seed)
    for dims in ex.verify_dims:
        v = verify(gpu, kernel, spec, contract, ex, ex.problem(dims), rng)
        out.verification.append(v)
        if not v.passed:
            raise WrongOutput(v)
    stage(Stage.TIME)
    out.measurement = measure(gpu, kernel, spec, contract.launch_values, ex, rng)
    try:
        out.chain = ex.chain(gpu, kernel, spec, contract.launch_values, rng)
    except (WrongOutput, SubmissionError):  # the kernel's own output or fault: graded as in the measurement
        raise
    except GraderError as err:  # the chain is shown, never graded: its failure is a note
        out.chain_note = f"the exercise's chain is not shown: {err}"


def check_launch_fits(limits: dict[str, int], contract: Contract) -> None:
    """Refuse, with the reason, a block larger than the loaded kernel allows (limits: Gpu.kernel_limits; the
    driver's own answer would be CUDA_ERROR_INVALID_VALUE). Raises SubmissionError(Stage.LAUNCH)."""
    most = limits.get("max_threads_per_block")
    if most is not None and contract.block > most:
        fits = max(32, most // 32 * 32)
        raise SubmissionError(Stage.LAUNCH, (
            f"your kernel allows at most {most} threads per block (its __launch_bounds__, or what its "
            f"{limits.get('num_regs', '?')} registers per thread leave), but the launch uses {contract.block}: "
            f"declare `// grade: block = {fits}` (and size the grid for it), or raise the bound"))


def assemble(out: Outcome) -> GradeReport:
    """The report of one grading, from what its stages produced: verdict and reason, compile facts (with the
    driver's registers and local memory where ptxas's log said nothing), verifications, the measurement,
    kernel output, and the flags and hints, which never change the verdict."""
    sub = out.sub
    program = sub.program
    ex = out.ex or exercises.get()
    report = GradeReport(file=out.file, sha256=sub.sha256, exercise=ex.name, kernel=ex.kernel_name,
                         byte_model=byte_model(ex), verdict="error", reason="", seed=out.seed,
                         versions=versions(), contract=sub.contract, sandbox=sandbox.state().describe(),
                         program=ProgramSummary(summary=program.summary(), kept=list(program.kept),
                                                ignored=list(program.ignored))
                         if program is not None and program.whole_program else None,
                         gpu=out.gpu, verification=list(out.verification),
                         kernel_output=out.printed.lines, kernel_output_dropped=out.printed.dropped)
    if out.compiled is not None:
        report.compile = _compile_summary(out.compiled, out.target, out.limits, ex.kernel_name)
    err = out.stopped
    m = out.measurement if err is None else None  # a kernel stopped after its timing (the chain) shows no number
    if isinstance(err, WrongOutput):
        if err.verification not in report.verification:
            report.verification.append(err.verification)
        report.verdict, report.stage, report.reason = "fail", Stage.VERIFY, str(err)
    elif isinstance(err, Busy):
        report.verdict, report.stage, report.reason = "busy", Stage.TIME, str(err)
        report.clocks = err.clocks
    elif err is not None:
        report.verdict, report.stage, report.reason, report.details = "error", err.stage, str(err), err.details
    elif m is not None:
        report.verification.append(Verification(
            rows=m.rows, cols=m.cols, passed=True, total=m.rows * m.cols * m.rounds,
            message=f"all {m.rounds} timed launches correct at {m.rows} x {m.cols} (inputs redrawn before each; "
                    "checked on the GPU in float64)"))
        report.verdict, report.stage = verdict_for(m.fraction), Stage.GRADE
        report.reason = (f"{m.fraction:.3f} of the copy floor ({m.table.floor_gbs:.0f} GB/s, {m.table.floor_version}); "
                         f"{m.fraction_of_scalar_copy:.3f} x the one-float-per-thread copy")
    elif out.compiled is not None:
        report.verdict = "no-gpu"
        report.reason = (f"no GPU ({out.no_gpu}); compiled for {out.target} and checked the parameter list, "
                         "both fine; verification and timing need a CUDA GPU")
    if m is not None:
        report.bench_rows, report.bench_cols, report.table = m.rows, m.cols, m.table.rows
        report.floor_version, report.floor_gbs = m.table.floor_version, m.table.floor_gbs
        report.fraction, report.fraction_low, report.fraction_high = m.fraction, m.fraction_low, m.fraction_high
        report.fraction_of_scalar_copy, report.borderline = m.fraction_of_scalar_copy, m.borderline
        report.clocks = m.clocks
        report.chain, report.chain_note = out.chain, out.chain_note
        report.byte_model.cached_bytes = ex.cached_bytes(ex.problem(m.dims))
    if out.compiled is not None:
        report.hints = hints_for(out.compiled, report, out.sass, ex)
        report.flags = _flags(sub.contract, m, ex) if ex.asks_for_row else []
    return report


def byte_model(ex: Exercise) -> ByteModel:
    """The report's byte model of exercise `ex`: its floats per element and what it counts and leaves out."""
    return ByteModel(floats_per_elem=ex.floats_per_element,
                     bytes_per_elem=ex.floats_per_element * exercise.BYTES_PER_FLOAT,
                     counted=ex.bytes_text, not_counted=ex.cached_text)


def _compile_summary(compiled: Compiled, target: str, limits: dict[str, int], kernel: str | None = None
                     ) -> CompileSummary:
    info = compiled.kernels[kernel] if kernel else next(iter(compiled.kernels.values()))
    summary = CompileSummary(arch=target, registers=info.registers, spill_stores=info.spill_stores,
                             spill_loads=info.spill_loads, stack_frame=info.stack_frame,
                             warnings=list(compiled.warnings), warnings_dropped=compiled.warnings_dropped,
                             log=compiled.log)
    if summary.registers is None:
        summary.registers = limits.get("num_regs")
    if summary.stack_frame is None:
        summary.local_bytes = limits.get("local_size_bytes")
    return summary


def hints_for(compiled: Compiled, report: GradeReport, reading: Reading | None = None, ex: Exercise | None = None
              ) -> list[Hint]:
    """`report`'s hints for the kernel in `compiled`: from the machine code (`reading`, the disassembly started
    after compiling; None: read here), or the PTX without a disassembler (grader.feedback.hints), with the report's
    measured copies for the 4-byte-load hint and the exercise's own hints (Exercise.code_hints: biasGeluFused's tanh
    GELU), and the static launch facts at the report's benchmark shape, on its GPU (grader.feedback.launch_facts);
    ranked by what fixing each is worth (rank_hints). A wrong output gets the known mistake it matches and the hints
    about correctness alone (Exercise.wrong_output_kinds): no speed hint.
    ex: the report's exercise (default: the one it names)."""
    ex = ex or exercises.get(report.exercise or exercises.DEFAULT)
    info = compiled.kernels[ex.kernel_name]
    reading = reading or (Reading(compiled.cubin, info.mangled) if compiled.cubin else None)
    one = next((r for r in report.table if r.version == FLOOR_SCALAR), None)
    spec = report.contract.launch_spec(tuple(p.size for p in info.params))
    found = code_hints(compiled.ptx, info.mangled, scalar_copy_gbs=one.gbs if one else None,
                       floor_gbs=report.floor_gbs if one else None, floor_name=report.floor_version if one else None,
                       cubin=compiled.cubin, arch=compiled.arch, reading=reading, kernel=ex.kernel_name,
                       texts=ex.hint_texts(), exercise_hints=ex.code_hints, division_bits=ex.division_hint_bits,
                       integer_params=frozenset(i for i, p in enumerate(spec.params) if p.kind != "ptr"))
    facts = reading.facts() if reading else None
    report.sites = sites(facts, spec)
    shape = (report.bench_rows, report.bench_cols) if report.bench_rows and report.bench_cols else None
    sms = report.gpu.multiprocessors if report.gpu else None
    division = division_facts(facts, spec, sms=sms, sm_mhz=report.clocks.sm_mhz if report.clocks else None,
                              shape=shape, item=item_floats(ex),
                              threads_per_sm=report.gpu.threads_per_multiprocessor if report.gpu else None)
    report.hints = [h.model_copy(update={"facts": division}) if h.kind == HintKind.DIVISION else h for h in found]
    wrong = [v.mistake for v in report.verification if not v.passed and v.mistake is not None]
    if report.verdict == "fail" and report.stage == Stage.VERIFY:
        report.hints = [Hint(text=w.text, kind=HintKind.MISTAKE) for w in wrong[-1:]] + \
            [h for h in report.hints if h.kind in ex.wrong_output_kinds]
    else:
        try:
            report.hints += launch_hints(spec, facts, compiled.arch, ex=ex, sms=sms, shape=shape,
                                         shared=info.shared_bytes,
                                         sm_mhz=report.clocks.sm_mhz if report.clocks else None)
        except Exception:  # noqa: BLE001 - advice only: a fact that cannot be read is left out, never the grading
            pass
    return rank_hints(report)


def times_of(report: GradeReport) -> Times | None:
    """The grading's medians (the kernel, the copy floor, the one-float copy) of a correct, timed kernel's
    report; None for any other (not timed, wrong output, withheld)."""
    if report.stage != Stage.GRADE or report.verdict not in ("gold", "silver", "fail") or not report.table:
        return None
    ms = {row.version: row.ms for row in report.table}
    kernel = report.kernel or report.table[0].version
    if kernel not in ms or report.floor_version not in ms or FLOOR_SCALAR not in ms:
        return None
    return Times(kernel=ms[kernel], floor=ms[report.floor_version], one_float=ms[FLOOR_SCALAR])


def rank_hints(report: GradeReport) -> list[Hint]:
    """`report`'s hints ranked by what fixing each is worth (grader.feedback.worth.rank), from its times and, where they
    were measured, its counters; a failed kernel with no hint at all gets its exercise's slow_hint."""
    c = report.counters
    why_none = f"the counters were not measured: {c.unavailable}" if c is not None and c.unavailable else ""
    ex = exercises.get(report.exercise or exercises.DEFAULT)
    noise = (report.fraction_high - report.fraction_low) / 2 \
        if report.fraction_high is not None and report.fraction_low is not None else 0.0
    hints = rank(report.hints, times_of(report), c, report.bench_cols, no_counters=why_none, ex=ex,
                 sites=report.sites, noise=noise)
    if report.verdict == "fail" and report.stage == Stage.GRADE and not hints:
        hints.append(Hint(text=ex.slow_hint, kind=HintKind.SLOW))
    return hints


def add_counters(report: GradeReport, path: str, *, asked: bool, when_slow: bool = True, device: int = 0,
                 on_start: Callable[[int], None] | None = None, before: Callable[[], None] | None = None) -> None:
    """Measure the counters of the graded file at `path` into `report` when asked, or unasked for a slow
    correct kernel (`when_slow`: grader.feedback.counters.counters_wanted), then rank its hints again with them. A
    kernel that cannot be profiled (grader.feedback.counters.verdict_allows) gets the reason instead. before(), when
    given, is called just before ncu starts (a batch worker sends the verdict first); on_start as for
    grader.feedback.counters.run_ncu. Never raises for the counters' own failures (they say why in one line)."""
    from grader.feedback.counters import Counters, counters_wanted, submission_counters, verdict_allows
    from grader.feedback.source_counters import source_instructions
    from grader.feedback.worth import access_suspect

    why = counters_wanted(report, asked, when_slow)
    if not why:
        return
    ex = exercises.get(report.exercise or exercises.DEFAULT)
    blocked = verdict_allows(report)
    if blocked:
        report.counters = Counters(unavailable=blocked)
    else:
        if before is not None:
            before()
        started = time.monotonic()
        report.counters = submission_counters(path, ex, report.bench_rows, report.bench_cols, device=device,
                                              on_start=on_start)
        divides = any(h.kind == HintKind.DIVISION for h in report.hints)
        if not report.counters.unavailable and (access_suspect(report.counters) or divides):
            # name the scattered instruction and its line (issue 29); count the divisions the launch runs (issue 39)
            c = report.counters
            c.instructions, c.instructions_unavailable, c.division_threads = source_instructions(
                path, report.bench_rows, report.bench_cols, report.compile.arch, ex, device=device, on_start=on_start)
        report.counters.seconds = round(time.monotonic() - started, 2)
    report.counters.why = "" if why == "asked" else why
    report.hints = rank_hints(report)


def _flags(contract: Contract, m: Measurement | None, ex: Exercise) -> list:
    """Byte-count flags of the student's row and claim of exercise `ex` against the measurement
    (grader.source.claims)."""
    if m is None:
        return byte_count_flags(contract.row, contract.claim, rows=None, cols=None, floor_gbs=None,
                                measured_gbs=None, measured_ms=None, ex=ex)
    return byte_count_flags(contract.row, contract.claim, rows=m.rows, cols=m.cols, floor_gbs=m.table.floor_gbs,
                            measured_gbs=m.subject.gbs, measured_ms=m.subject.ms, floor_name=m.table.floor_version,
                            ex=ex)
