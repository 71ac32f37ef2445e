"""A realistic class for the class page's tests: GradeReports built by hand with H200-like numbers (docs/h200.md:
copy floor about 4200 GB/s, SM 1980 MHz, memory 3201 MHz, DRAM 4.00 read and 3.92 written per element), for
every verdict (gold, silver, fail: slow or wrong, error: compile, run, input and the grader's own, busy), fractions
from 0.1 to 0.97, flags (an impossible claim, an inflated byte count, borderline), counters for some rows, notes,
Gradescope submitters for some, and hostile or odd ids (markup, a script end tag, a path, a long name, non-ASCII).

realistic_rows() gives the rows; write_results(path) writes them as a batch's results.jsonl (the file `grade merge`
reads). Deterministic: a fixed random seed, no clock read.
"""

from __future__ import annotations

import random
from pathlib import Path

from grader.batch import gradebook as gb
from grader.check.verify import Verification
from grader.feedback.counters import Counters, KernelCounters
from grader.feedback.worth import Hint
from grader.gpu.clocks import ClockLimits, Clocks
from grader.gpu.device import GpuInfo
from grader.output.gradescope_export import Submitter
from grader.output.report import CompileSummary, GradeReport
from grader.source.claims import Flag, StudentClaim, StudentRow
from grader.source.contract import Contract
from grader.timing.timer import TimedRow

H200 = GpuInfo(name="NVIDIA H200", compute_capability="9.0", arch="sm_90", multiprocessors=132,
               threads_per_multiprocessor=2048, l2_bytes=60 * 2**20, total_bytes=150 * 10**9, free_bytes=149 * 10**9,
               driver_cuda="13.0", peak_gbs=4800.0)
ROWS, COLS = 61440, 4096
N = ROWS * COLS
VERSIONS = {"grader": "0.1.0", "cuda-core": "1.2.0", "cuda-bindings": "13.3.1", "nvrtc": "13.5"}
HOSTILE = ["<img src=x onerror=alert(1)>", "</script><script>alert(1)</script>", "../../etc/passwd",
           "a b\\c", "Zoë Çelik 李雷", "x" * 150]


def clocks(sm: int = 1980) -> Clocks:
    """Clocks of a steady timing at SM `sm` MHz and memory 3201 MHz."""
    return Clocks(known=True, sm_mhz=sm, sm_low_mhz=sm, sm_high_mhz=sm, mem_mhz=3201, mem_low_mhz=3201,
                  mem_high_mhz=3201, samples=34,
                  limits=ClockLimits(sm_max_mhz=1980, mem_max_mhz=3201, sm_app_mhz=1980, sm_app_default_mhz=1980,
                                     mem_app_mhz=3201, mem_app_default_mhz=3201))


def table(fraction: float, floor: float) -> list[TimedRow]:
    """The graded table: the student's kernel at `fraction` of `floor` GB/s, and the three copies."""
    bytes_moved = 8 * N

    def row(version: str, gbs: float, per_elem: int = 2, is_floor: bool = False) -> TimedRow:
        return TimedRow(version=version, values_per_elem=per_elem, ms=bytes_moved / gbs / 1e6, gbs=gbs,
                        x_copy=gbs / floor, spread=0.004, reps=30, rse=0.002, is_floor=is_floor)

    return [row("biasGeluFused", fraction * floor), row("copy, 1 float/thread", 0.638 * floor, 0, True),
            row("copy, 16 B/thread", floor, 0, True), row("cuMemcpyDtoD", 0.995 * floor, 0, True)]


def verified(passed: bool = True) -> list[Verification]:
    if passed:
        return [Verification(rows=r, cols=c, passed=True, total=r * c, message=f"correct at {r} x {c}")
                for r, c in ((101, 97), (1, 1), (3, 4099), (65535, 5))]
    return [Verification(rows=101, cols=97, passed=False, total=9797, bad=9797, max_abs_error=4.7e-4,
                         message="wrong at (0, 0): got 0.841192, expected 0.841345; 9797 of 9797 elements wrong")]


def graded(file: str, fraction: float, rng: random.Random, *, claim: float | None = None,
           flags: list[Flag] | None = None, counters: bool = False, borderline: bool = False) -> GradeReport:
    """A correct kernel timed at `fraction` of a floor near 4204 GB/s."""
    floor = 4204.0 * rng.uniform(0.995, 1.005)
    verdict = "gold" if fraction >= 0.90 else "silver" if fraction >= 0.75 else "fail"
    contract = Contract(claim=StudentClaim(raw=f"It reached {claim} of the copy floor.", fraction=claim)
                        if claim is not None else None,
                        row=StudentRow(raw="biasGeluFused | 1 | 2 | 0.4881 | 4124.5", kernels=1, floats_per_elem=2,
                                       ms=0.4881, gbs=4124.5))
    report = GradeReport(kernel="biasGeluFused", file=file, sha256="0" * 64, verdict=verdict, stage="grade",
                         seed=rng.randrange(2**31),
                         reason=f"{fraction:.3f} of the copy floor ({floor:.0f} GB/s, copy, 16 B/thread); "
                                f"{fraction / 0.638:.3f} x the one-float-per-thread copy",
                         versions=VERSIONS, gpu=H200, contract=contract,
                         compile=CompileSummary(arch="sm_90", registers=rng.choice([16, 24, 32, 40])),
                         verification=verified(), bench_rows=ROWS, bench_cols=COLS, table=table(fraction, floor),
                         floor_version="copy, 16 B/thread", floor_gbs=floor, fraction=fraction,
                         fraction_low=fraction - 0.004, fraction_high=fraction + 0.004,
                         fraction_of_scalar_copy=fraction / 0.638, borderline=borderline, flags=flags or [],
                         clocks=clocks())
    if verdict == "fail":
        report.hints = [Hint(text="correct but slow: look at your bias index first, then at the width of your loads "
                                  "and stores", kind="slow")]
    if counters:
        extra = 0.0 if fraction > 0.8 else rng.uniform(0.5, 4.0)
        report.counters = Counters(tool="ncu 2025.3.1", kernels=[
            KernelCounters(label="biasGeluFused", kernel="biasGeluFused", elements=N, dram_read=(4.0 + extra) * N,
                           dram_write=3.92 * N, l2_bytes=8.1 * N),
            KernelCounters(label="copy, 16 B/thread", kernel="copyVec4", elements=N, dram_read=4.0 * N,
                           dram_write=3.90 * N)])
    return report


def impossible(claim: float, fraction: float) -> Flag:
    return Flag(kind="impossible-fraction", message=f"a fraction of {claim:g} of the copy floor is impossible",
                student=f"{claim:g}", grader=f"{fraction:.3f}")


def inflated() -> Flag:
    return Flag(kind="inflated-byte-count", message="3 floats per element counts the bias", student="3 floats/elem",
                grader="2 floats/elem")


def realistic_rows(n: int = 44) -> list[gb.BatchResult]:
    """`n` rows of a class (n >= 30): mostly correct kernels spread over 0.1-0.97, and each special case once."""
    rng = random.Random(21)
    rows = []

    def add(id: str, report: GradeReport, submitters: list[Submitter] | None = None) -> None:
        rows.append(gb.make_result(id=id, path=f"class/{id}/kernel.cu", key=f"k-{len(rows)}", sha256="0" * 64,
                                   report=report, grader_version="0.1.0", device="0", phases={"wall": 2.1},
                                   submitters=submitters))

    special = {
        HOSTILE[0]: lambda f: graded(f, 0.951, rng, claim=0.95, counters=True),
        HOSTILE[1]: lambda f: graded(f, 0.62, rng, claim=1.12, flags=[impossible(1.12, 0.62)]),
        HOSTILE[2]: lambda f: GradeReport(kernel="biasGeluFused", file=f, verdict="error", stage="input",
                                          reason=f"{f}: an archive; unpack it"),
        HOSTILE[3]: lambda f: graded(f, 0.899, rng, claim=0.9, borderline=True),
        HOSTILE[4]: lambda f: graded(f, 0.963, rng, claim=0.96, counters=True),
        HOSTILE[5]: lambda f: GradeReport(kernel="biasGeluFused", file=f, verdict="error", stage="compile",
                                          reason="compile error",
                                          details=f"{f}:6: error: expected a \";\"", versions=VERSIONS, gpu=H200),
    }
    for id, make in special.items():
        add(id, make(f"class/{id}/kernel.cu"))
    add("gs_submission_1001", graded("s.cu", 0.932, rng, claim=0.93),
        [Submitter(name="Ada Lovelace", email="ada@example.edu", sid="0012345")])
    add("gs_submission_1002", graded("s.cu", 0.781, rng, claim=0.78, flags=[inflated()], counters=True),
        [Submitter(name="Grace Hopper", email="grace@example.edu", sid="0012346"),
         Submitter(name="Alan Turing", email="alan@example.edu", sid="0012347")])
    add("busy_student", GradeReport(kernel="biasGeluFused", file="b.cu", verdict="busy", stage="time",
                                    reason="not graded: the GPU was busy "
                                    "(other processes: pid 4242 (python3, 2.0 GiB)); run again", gpu=H200,
                                    clocks=clocks()))
    add("grader_fault", GradeReport(kernel="biasGeluFused", file="g.cu", verdict="error", stage="grader",
                                    reason="the grader failed on this "
                                    "submission (CUDA_ERROR_OUT_OF_MEMORY); please report it", gpu=H200))
    add("hang_forever", GradeReport(kernel="biasGeluFused", file="h.cu", verdict="error", stage="run",
                                    reason="run time limit exceeded: the "
                                    "kernel did not finish within 120 s while verifying", gpu=H200))
    add("tanh_gelu", GradeReport(kernel="biasGeluFused", file="t.cu", verdict="fail", stage="verify",
                                 reason="wrong output at (0, 0)",
                                 gpu=H200, versions=VERSIONS, verification=verified(False),
                                 compile=CompileSummary(arch="sm_90", registers=18)))
    add("slow_sm_clock", graded("c.cu", 0.874, rng, claim=0.9))
    rows[-1].report.clocks = clocks(1755)
    rows[-1].clocks = rows[-1].report.clocks.summary()
    i = 0
    while len(rows) < n:
        f = rng.choice([rng.uniform(0.93, 0.97), rng.uniform(0.5, 0.95), rng.uniform(0.1, 0.6)])
        claim = round(f + rng.uniform(-0.03, 0.05), 2) if rng.random() < 0.7 else None
        add(f"student_{i:02d}", graded(f"class/student_{i:02d}.cu", round(f, 3), rng, claim=claim,
                                       counters=rng.random() < 0.3))
        i += 1
    return rows


def write_results(path: Path, n: int = 44) -> list[gb.BatchResult]:
    """Write realistic_rows(n) to `path` as a results.jsonl; return the rows as they read back."""
    path.parent.mkdir(parents=True, exist_ok=True)
    store = gb.ResultStore(path)
    try:
        return [store.append(r) for r in realistic_rows(n)]
    finally:
        store.close()
