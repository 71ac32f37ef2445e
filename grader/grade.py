"""Stage 6, grade: the grading policy, and the pipeline that runs every stage in order for one file.

source -> compile -> device (load) -> verify -> timing -> grade -> report. Wrong output is a fail whatever
the speed; a correct kernel is gold at >= 0.90 of the copy floor, silver at >= 0.75, fail below.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable

import numpy as np

from grader import __version__, exercise, sandbox
from grader.capture import Captured, capture_stdout
from grader.contention import Busy, describe, disturbed, gpu_turn, wait_for_quiet
from grader.compile import DEFAULT_ARCH, Compiled, compile_kernels
from grader.contract import kernel_args, plan_launch
from grader.device import Gpu, open_gpu
from grader.errors import InputError, NoGpuError, SubmissionError
from grader.flags import byte_count_flags
from grader.hints import code_hints
from grader.report import CompileSummary, GradeReport, TableRow, Verdict
from grader.signature import check_params, source_signature
from grader.source import read_submission
from grader.toolkit import check_arch, require_cuda
from grader.timing import (FLOOR_SCALAR, TARGET_RSE, AlternatingTimer, CopyFloor, InputFiller, TimingStats,
                           bench_shape, gbs)
from grader.verify import DeviceCheck, Verification, verify

BAND_SIGMAS = 2.0
"""The fraction's uncertainty band is fraction x (1 +/- BAND_SIGMAS x sqrt(rse_sub^2 + rse_floor^2))."""


def verdict_for(fraction: float) -> Verdict:
    """gold at fraction >= exercise.GOLD (0.90), silver at >= exercise.SILVER (0.75), else fail. Only for a
    kernel that passed verification."""
    if fraction >= exercise.GOLD:
        return "gold"
    if fraction >= exercise.SILVER:
        return "silver"
    return "fail"


def straddles(low: float, high: float) -> bool:
    """True when [low, high] contains a grade threshold."""
    return any(low < t <= high for t in (exercise.SILVER, exercise.GOLD))


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


STAGES = ("read", "context", "compile", "verify", "time")
"""Stages grade_file announces to its `on_stage` callback, in order (a run may stop after any of them)."""


def grade_file(path: str, *, arch: str | None = None, seed: int | None = None, device_id: int = 0,
               on_stage: Callable[[str], None] | None = None) -> GradeReport:
    """Grade one submission file end to end and return its report.

    arch: compile target when no GPU is present (default sm_90); with a GPU its own arch is used.
    seed: replay a run's inputs (default: drawn from the OS's secure random source).
    on_stage: called with each name of STAGES as that stage starts (grader.worker times phases and applies
    the batch's compile and run time limits with it).
    Raises InputError (exit 2) for unreadable input or a target the installed NVRTC cannot compile for,
    InstallError (exit 4) when the CUDA extra is missing, GraderFault (exit 4) when a CUDA call of the grader's
    own fails; every problem of the submission itself is a report with verdict "error" or "fail".
    """
    stage = on_stage or (lambda _name: None)
    require_cuda()
    stage("read")
    try:
        sub = read_submission(path)
    except SubmissionError as err:  # read, but refused (an include form): a report, like every other refusal
        return GradeReport(file=str(path), verdict="error", stage=err.stage, reason=str(err), details=err.details,
                           versions=versions())
    seed = secrets.randbits(63) if seed is None else seed
    report = GradeReport(file=str(path), sha256=sub.sha256, verdict="error", reason="", seed=seed,
                         versions=versions(), contract=sub.contract, sandbox=sandbox.state().describe())
    gpu, no_gpu = None, ""
    stage("context")
    try:
        gpu = open_gpu(device_id)
        report.gpu = gpu.info
    except NoGpuError as err:
        no_gpu = str(err)
    target = gpu.info.arch if gpu else (arch or DEFAULT_ARCH)
    check_arch(target, gpu.info.name if gpu else None)
    compiled = None
    try:
        stage("compile")
        compiled = compile_kernels(sub.compile_text, sub.name, (exercise.KERNEL_NAME,), target)
        info = compiled.kernels[exercise.KERNEL_NAME]
        report.compile = CompileSummary(arch=target, registers=info.registers, spill_stores=info.spill_stores,
                                        spill_loads=info.spill_loads, stack_frame=info.stack_frame,
                                        warnings=list(compiled.warnings),
                                        warnings_dropped=compiled.warnings_dropped, log=compiled.log)
        widths = check_params(sub.contract, [(p.ptx_type, p.size) for p in info.params],
                              source_signature(sub.text, exercise.KERNEL_NAME), exercise.KERNEL_NAME)
        if gpu is None:
            report.verdict = "no-gpu"
            report.reason = (f"no GPU ({no_gpu}); compiled for {target} and checked the parameter list, "
                             "both fine; verification and timing need a CUDA GPU")
        else:
            printed = Captured()
            try:
                with capture_stdout(printed):  # a kernel's printf must not reach the report's stream
                    _run_on_gpu(gpu, compiled, widths, sub.contract, report, np.random.default_rng(seed), stage)
            finally:
                report.kernel_output, report.kernel_output_dropped = printed.lines, printed.dropped
    except SubmissionError as err:
        report.verdict, report.stage, report.reason, report.details = "error", err.stage, str(err), err.details
    except InputError as err:  # a launch the contract cannot express at some shape (a value past 32 bits)
        report.verdict, report.stage, report.reason = "error", "contract", str(err)
    if compiled is not None:
        _add_flags_and_hints(report, compiled, sub.contract)
    return report


def _run_on_gpu(gpu: Gpu, compiled: Compiled, widths: tuple[int, ...], contract, report: GradeReport,
                rng: np.random.Generator, stage: Callable[[str], None]) -> None:
    stage("verify")
    kernel = gpu.load(compiled)[exercise.KERNEL_NAME]
    _check_launch_fits(gpu.kernel_limits(kernel), contract, report)
    sizes = tuple(gpu.param_sizes(kernel))
    if sizes != widths:
        raise SubmissionError("contract", f"the driver reports parameter sizes {sizes}, PTX {widths}")
    for rows, cols in (exercise.VERIFY_SHAPE, *exercise.EXTRA_SHAPES):
        v = verify(gpu, kernel, contract, widths, rows, cols, rng)
        report.verification.append(v)
        if not v.passed:
            report.verdict, report.stage, report.reason = "fail", "verify", v.message
            return
    stage("time")
    _time(gpu, kernel, contract, widths, report, rng)


def _check_launch_fits(limits: dict[str, int], contract, report: GradeReport) -> None:
    """Fill the registers and local memory the loaded kernel really uses into the report (where ptxas's log
    said nothing), and refuse, with the reason, a block larger than the kernel allows (the driver's own
    answer would be CUDA_ERROR_INVALID_VALUE). Raises SubmissionError(stage "launch")."""
    if report.compile is not None:
        if report.compile.registers is None:
            report.compile.registers = limits.get("num_regs")
        if report.compile.stack_frame is None:
            report.compile.local_bytes = limits.get("local_size_bytes")
    most = limits.get("max_threads_per_block")
    if most is not None and contract.block > most:
        fits = max(32, most // 32 * 32)
        raise SubmissionError("launch", (
            f"your kernel allows at most {most} threads per block (its __launch_bounds__, or what its "
            f"{limits.get('num_regs', '?')} registers per thread leave), but the launch uses {contract.block}: "
            f"declare `// grade: block = {fits}` (and size the grid for it), or raise the bound"))


def _time(gpu: Gpu, kernel, contract, widths, report: GradeReport, rng: np.random.Generator) -> None:
    rows, cols = bench_shape(gpu.info)
    report.bench_rows, report.bench_cols = rows, cols
    n = rows * cols
    scratch_words = 2 * gpu.info.l2_bytes // 4
    buffers = x, bias, out, copy_out, scratch = (gpu.alloc(n * 4), gpu.alloc(cols * 4), gpu.alloc(n * 4),
                                                 gpu.alloc(n * 4), gpu.alloc(scratch_words * 4))
    fill, check = InputFiller(gpu), DeviceCheck(gpu)
    failures = []

    def redraw(_round: int) -> None:
        """Fresh inputs before every timed round (a kernel that caches results goes stale), then a write of
        twice the L2 size so the round's first launch does not find the new inputs' tail in cache."""
        fill(x, n, int(rng.integers(2**63)), *exercise.INPUT_X_RANGE)
        fill(bias, cols, int(rng.integers(2**63)), *exercise.INPUT_BIAS_RANGE)
        gpu.fill_words(scratch, 0, scratch_words)

    def check_round(k: int) -> bool:
        v = check(x, bias, out, rows, cols, f"timed launch {k + 1}")
        if not v.passed:
            failures.append(v)
        return v.passed

    def timed() -> AlternatingTimer:
        timer = AlternatingTimer(gpu, launches, before_round=redraw, after_round=check_round)
        timer.warm_up()
        timer.run()
        if not failures:
            _fill_table(report, timer.stats(), n)
        return timer

    def noise(timer: AlternatingTimer) -> list[str]:
        return [] if failures else disturbed(timer.times, report.floor_gbs, gpu.info.peak_gbs)

    load, reasons = None, []
    try:
        redraw(-1)
        plan = plan_launch(contract, rows, cols, gpu.info.multiprocessors, gpu.info.threads_per_multiprocessor)
        args = kernel_args(contract, widths, {"x": int(x.handle), "bias": int(bias.handle), "out": int(out.handle)},
                           rows, cols)
        launches = CopyFloor(gpu).launches(x, copy_out, n)
        launches[exercise.KERNEL_NAME] = lambda: gpu.launch(kernel, plan.grid, plan.block, *args)
        with gpu_turn(gpu):  # other gradings on this GPU wait; their numbers and ours stay clean
            load = wait_for_quiet(gpu)
            timer = timed()
            reasons = noise(timer)
            if reasons:  # disturbed: wait for quiet, then one fresh timing
                load = wait_for_quiet(gpu)
                timer = timed()
                reasons = noise(timer)
            if not reasons and not failures and straddles(report.fraction_low, report.fraction_high):
                timer.run(min_reps=timer.rounds * 2, target_rse=TARGET_RSE / 2)
                _fill_table(report, timer.stats(), n)
                report.borderline = straddles(report.fraction_low, report.fraction_high)
                reasons = noise(timer)
    except Busy as err:
        reasons = [str(err)]
    finally:
        check.close()
        for b in buffers:
            b.close()
    if reasons and not failures:
        _withhold(report, reasons, load)
        return
    if failures:
        report.verification.append(failures[0])
        report.verdict, report.stage, report.reason = "fail", "verify", failures[0].message
        return
    report.verification.append(Verification(
        rows=rows, cols=cols, passed=True, total=n * timer.rounds,
        message=f"all {timer.rounds} timed launches correct at {rows} x {cols} (inputs redrawn before each; "
                "checked on the GPU in float64)"))
    report.verdict = verdict_for(report.fraction)
    report.stage = "grade"
    report.reason = (
        f"{report.fraction:.3f} of the copy floor ({report.floor_gbs:.0f} GB/s, {report.floor_version}); "
        f"{report.fraction_of_scalar_copy:.3f} x the one-float-per-thread copy"
    )


def _withhold(report: GradeReport, reasons: list[str], load) -> None:
    """Verdict "busy": the timings cannot be trusted (grader.contention); nothing of them is graded."""
    report.verdict, report.stage = "busy", "time"
    report.table, report.floor_version, report.floor_gbs = [], None, None
    report.fraction = report.fraction_low = report.fraction_high = report.fraction_of_scalar_copy = None
    report.reason = (f"not graded: the GPU was busy ({'; '.join(reasons)}; other processes: {describe(load)}); "
                     "the kernel is correct; run again when the GPU is quiet")


def _add_flags_and_hints(report: GradeReport, compiled: Compiled, contract) -> None:
    """Byte-count flags from the student's row and claim, and hints from the PTX. Neither changes the verdict."""
    sub = next((t for t in report.table if t.version == exercise.KERNEL_NAME), None)
    scalar = next((t.gbs for t in report.table if t.version == FLOOR_SCALAR), None)
    report.hints += code_hints(compiled.ptx, compiled.kernels[exercise.KERNEL_NAME].mangled,
                               scalar_copy_gbs=scalar, floor_gbs=report.floor_gbs, floor_name=report.floor_version,
                               cubin=compiled.cubin, arch=compiled.arch)
    if report.verdict == "fail" and report.stage == "grade" and not report.hints:
        report.hints.append("correct but slow: look at your bias index first, then at the width of your loads "
                            "and stores (the page's Check)")
    report.flags = byte_count_flags(contract.row, contract.claim, rows=report.bench_rows, cols=report.bench_cols,
                                    floor_gbs=report.floor_gbs, measured_gbs=sub.gbs if sub else None,
                                    measured_ms=sub.ms if sub else None, floor_name=report.floor_version)


def _fill_table(report: GradeReport, stats: dict[str, TimingStats], n: int) -> None:
    nbytes = n * exercise.FLOATS_PER_ELEMENT * exercise.BYTES_PER_FLOAT
    floor_name = min((k for k in stats if k != exercise.KERNEL_NAME), key=lambda k: stats[k].median_ms)
    floor = stats[floor_name]
    floor_gbs = gbs(nbytes, floor.median_ms)
    report.table = [
        TableRow(version=name, kernels=1, floats_per_elem=exercise.FLOATS_PER_ELEMENT, ms=s.median_ms,
                 gbs=gbs(nbytes, s.median_ms), x_copy=gbs(nbytes, s.median_ms) / floor_gbs, spread=s.spread,
                 reps=s.reps, rse=s.rse)
        for name, s in stats.items()
    ]
    sub = stats[exercise.KERNEL_NAME]
    report.floor_version, report.floor_gbs = floor_name, floor_gbs
    report.fraction = floor.median_ms / sub.median_ms
    half = BAND_SIGMAS * math.hypot(sub.rse, floor.rse)
    report.fraction_low, report.fraction_high = report.fraction * (1 - half), report.fraction * (1 + half)
    report.fraction_of_scalar_copy = stats[FLOOR_SCALAR].median_ms / sub.median_ms

