"""A class of 64 submissions graded on the H200, for the class page and its browser test (issue 31).

No gradebook of a whole class was recorded on the H200, so this one is built from what was recorded there and from
what the grader itself says without a GPU, each row made by the grader's own functions:
- correct kernels (gold, silver, correct but slow): the H200's gradings of the hint kernels and the model answer
  (tests/data/ncu/h200_gradings.json: the timed table, floor and fraction), each student's kernel time scaled by a
  few percent (a fixed seed); the hints grader.feedback.hints finds now in each kernel's machine code (NVRTC here),
  ranked by grader.pipeline.grade.rank_hints with the counters ncu recorded there (tests/data/ncu/h200_*.csv) for the
  slow kernels a `--counters-when-slow` batch profiles, and without for the rest; the verifications computed by
  grader.check.verify.compare on the exact function in numpy;
- wrong output: the tanh GELU (submissions/tanh_gelu.cu) and the bias-index bug (submissions/bias_index_bug.cu),
  their hints from their machine code, their first failed check computed by compare on the same wrong function in
  numpy (the bug's reads past the bias wrap around here, where the GPU reads the guard region);
- errors in the submission: grader.pipeline.grade.grade_file's own reports on files that stop before the GPU (a compile
  error, another kernel name, another parameter list, a refused include, a binary file), a fault (the reason
  grader.gpu.device gives) and a hang (the batch's own time-limit reason, grader.batch.pool.timeout_reason);
- one error of the grader (grader.gpu.device.grader_call_failed's), one busy row, a Gradescope group of three and
  one of one (submitters), flags from grader.source.claims.byte_count_flags on the students' rows and sentences, and
  no row or sentence for most of the class (the issue's class: 43 of 64).

h200_class() gives the rows (the same on every call: fixed seeds, no clock but `finished`); batch_and_merge writes
what `grade batch` and `grade merge` write for them.
"""

from __future__ import annotations

import functools
import json
import random
from pathlib import Path

import numpy as np

from class_fixture import H200, clocks
from grader.batch import gradebook as gb
from grader.batch.pool import timeout_reason
from grader.check.verify import Verification, compare
from grader.compile.nvrtc import compile_kernels
from grader.core.errors import InputError, Stage
from grader.exercises import bias_gelu as exercise
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.exercises.bias_gelu.exercise import EXERCISE as _BG  # noqa: E402
from grader.exercises.bias_gelu.reference import bias_gelu, gelu_erf, gelu_tanh, make_inputs
from grader.feedback.counters import counters_of, parse_csv
from grader.feedback.hints import code_hints
from grader.feedback.worth import Hint
from grader.gpu.device import grader_call_failed
from grader.output.gradescope_export import Submitter
from grader.output.report import CompileSummary, GradeReport, error_report
from grader.pipeline.grade import grade_file, rank_hints, verdict_for
from grader.source.claims import StudentClaim, StudentRow, byte_count_flags
from grader.source.contract import Contract
from grader.source.contract import parse_contract as _parse  # noqa: E402
from grader.timing.timer import FLOOR_SCALAR, TimedRow

PAGE = {"kernel": BIAS_GELU.kernel_name, "exercise_hints": BIAS_GELU.code_hints, "texts": BIAS_GELU.hint_texts()}
"""What grader.pipeline.grade.hints_for gives grader.feedback.hints for the course page's exercise: its kernel's
name and its own hint producer (the tanh GELU hint)."""

PAGE_CONTRACT = _parse("", "page.cu", _BG)
"""The page's launch: nothing declared."""

ROOT = Path(__file__).resolve().parent.parent
NCU = ROOT / "tests" / "data" / "ncu"
GRADINGS = json.loads((NCU / "h200_gradings.json").read_text())
VERSIONS = GRADINGS["gold_float4"]["versions"]
SANDBOX = "landlock ABI 7: NVRTC may read only libnvrtc-builtins.so.13.0"
"""The NVRTC sandbox as a report on the H200 names it (docs/h200.md: Landlock ABI 7 there)."""
KERNELS = {"col_major": "tests/data/hints/col_major.cu", "double": "tests/data/hints/double.cu",
           "normcdf_scalar": "tests/data/hints/normcdf_scalar.cu", "scalar": "tests/data/hints/scalar.cu",
           "mod_cols": "tests/data/hints/mod_cols.cu", "stride_float4": "tests/data/silver/stride_float4.cu",
           "gold_float4": "submissions/gold_float4.cu", "tanh": "submissions/tanh_gelu.cu",
           "bias_index": "submissions/bias_index_bug.cu"}
ROWS_COLS = GRADINGS["scalar"]["bench_rows"] * GRADINGS["scalar"]["bench_cols"]
STATIC = {"compile": "submissions/compile_error.cu", "name": "tests/data/batch/wrong_name.cu",
          "params": "tests/data/batch/wrong_params.cu", "include": "tests/data/batch/include_passwd.cu"}
PLAN = (["gold_float4"] * 20 + ["stride_float4"] * 7 + ["scalar"] * 6 + ["mod_cols"] * 4 + ["normcdf_scalar"] * 3
        + ["double"] * 2 + ["col_major"] * 2 + ["tanh"] * 4 + ["bias_index"] * 4 + ["compile"] * 3
        + ["name", "params", "params", "include", "binary", "fault", "hang", "grader", "busy"])
"""What each of the 64 students handed in: 27 gold or silver, 17 correct but slow, 8 wrong output, 10 errors in the
submission, one error of the grader, one busy."""
FIRST = ["amara", "ben", "chen", "dara", "eli", "fatima", "goran", "hana", "ivan", "jun", "kofi", "lena", "mateo",
         "nadia", "omar", "priya", "quinn", "rosa", "sami", "tomas", "uma", "vera", "wei", "yusuf"]
LAST = ["okafor", "schmidt", "li", "nguyen", "haddad", "kowalski", "silva", "tanaka", "ivanova", "mensah", "novak",
        "garcia", "berg", "rahman", "costa", "park"]


def ids(n: int, rng: random.Random) -> list[str]:
    """`n` distinct login-like ids (first.last), one with non-ASCII letters and one very long folder name."""
    out = {"zoë.çelik", "submission-of-a-student-who-named-the-folder-very-descriptively-2026"}
    while len(out) < n:
        out.add(f"{rng.choice(FIRST)}.{rng.choice(LAST)}")
    return sorted(out)


@functools.cache
def compiled(name: str):
    return compile_kernels((ROOT / KERNELS[name]).read_text(), f"{name}.cu", (exercise.KERNEL_NAME,), "sm_90")


@functools.cache
def machine_hints(name: str) -> tuple[Hint, ...]:
    """The hints grader.feedback.hints finds in kernel `name`'s machine code, with the copies the H200 timed beside it
    where it was timed (the copies of a correct kernel's grading are the recorded ones: only its own time varies)."""
    c = compiled(name)
    g = GRADINGS.get(name)
    table = [TimedRow(**row) for row in g["table"]] if g else []
    one_float = next((r for r in table if r.version == FLOOR_SCALAR), None)
    floor = next((r for r in table if r.version == g["floor_version"]), None) if g else None
    found = code_hints(c.ptx, c.kernels[exercise.KERNEL_NAME].mangled,
                       scalar_copy_gbs=one_float.gbs if one_float else None, floor_gbs=floor.gbs if floor else None,
                       floor_name=floor.version if floor else None, cubin=c.cubin, arch="sm_90", **PAGE)
    return tuple(Hint(text=str(h), kind=h.kind) for h in found)


@functools.cache
def checks() -> tuple[Verification, ...]:
    """The four checks of a correct kernel: grader.check.verify.compare of the exact function, rounded to float32."""
    rng = np.random.default_rng(5)
    out = []
    for rows, cols in (exercise.VERIFY_SHAPE, *exercise.EXTRA_SHAPES):
        x, bias = make_inputs(rng, rows, cols)
        ref = bias_gelu(x, bias)
        out.append(compare(ref.astype(np.float32), ref, BIAS_GELU))
    return tuple(out)


def wrong_check(name: str) -> Verification:
    """The first failed check of the tanh GELU or the bias-index bug, at the first shape (101 x 97)."""
    rows, cols = exercise.VERIFY_SHAPE
    x, bias = make_inputs(np.random.default_rng(6), rows, cols)
    v = x.astype(np.float64)
    if name == "tanh":
        got = gelu_tanh(v + bias.astype(np.float64)[None, :])
    else:
        flat = np.arange(rows * cols).reshape(rows, cols)
        got = gelu_erf(v + bias.astype(np.float64)[flat % rows % cols])
    return compare(got.astype(np.float32), bias_gelu(x, bias), BIAS_GELU)


def contract_for(fraction: float, floor: float, rng: random.Random, kind: str) -> Contract:
    """The student's part-3 row and sentence: none ("none"), honest (their own run, within a few percent),
    an impossible claim ("impossible"), or a row counting the bias ("bias-counted")."""
    if kind == "none":
        return PAGE_CONTRACT
    own = fraction * rng.uniform(0.97, 1.03)
    gbs = own * floor
    ms = 8 * ROWS_COLS / gbs / 1e6
    floats = 3 if kind == "bias-counted" else 2
    shown = gbs * floats / 2
    claim = 1.12 if kind == "impossible" else round(own, 2)
    return Contract(row=StudentRow(raw=f"biasGeluFused | 1 | {floats} | {ms:.4f} | {shown:.1f}", kernels=1,
                                   floats_per_elem=floats, ms=ms, gbs=shown),
                    claim=StudentClaim(raw=f"It reached {claim} of the copy floor; it cannot exceed 1 because the "
                                           "copy moves the same bytes.", fraction=claim))


def correct(name: str, rng: random.Random, claim: str, profiled: bool) -> GradeReport:
    """A correct kernel graded on the H200: the recorded grading of `name`, its kernel time scaled a few percent."""
    g = GRADINGS[name]
    scale = rng.uniform(0.96, 1.03)
    table = [TimedRow(**row) for row in g["table"]]
    mine = table[0]
    mine.ms, mine.gbs, mine.x_copy = mine.ms / scale, mine.gbs * scale, mine.x_copy * scale
    floor = next(r for r in table if r.version == g["floor_version"])
    fraction = mine.x_copy
    one_float = next(r for r in table if r.version == FLOOR_SCALAR)
    timed = Verification(rows=g["bench_rows"], cols=g["bench_cols"], passed=True, total=ROWS_COLS * 30,
                         message=f"all 30 timed launches correct at {g['bench_rows']} x {g['bench_cols']} (inputs "
                                 "redrawn before each; checked on the GPU in float64)")
    contract = contract_for(fraction, floor.gbs, rng, claim)
    report = GradeReport(
        kernel="biasGeluFused", file="submission.cu", sha256=f"{rng.getrandbits(256):064x}",
        verdict=verdict_for(fraction), stage="grade",
        seed=rng.randrange(2**63), versions=VERSIONS, gpu=H200, contract=contract,
        compile=CompileSummary(arch="sm_90", registers=rng.choice([16, 18, 22, 26, 32])),
        verification=[*checks(), timed], bench_rows=g["bench_rows"], bench_cols=g["bench_cols"], table=table,
        floor_version=floor.version, floor_gbs=floor.gbs, fraction=fraction, fraction_low=fraction * 0.997,
        fraction_high=fraction * 1.003, fraction_of_scalar_copy=mine.gbs / one_float.gbs, clocks=clocks(),
        reason=f"{fraction:.3f} of the copy floor ({floor.gbs:.0f} GB/s, {floor.version}); "
               f"{mine.gbs / one_float.gbs:.3f} x the one-float-per-thread copy")
    report.hints = [h.model_copy() for h in machine_hints(name)]
    if profiled and report.verdict == "fail":
        report.counters = counters_of("ncu 2025.3.1.0", parse_csv((NCU / f"h200_{name}.csv").read_text()),
                                      BIAS_GELU)
        report.counters.why = "correct but slow: measured unasked (grade batch --counters-when-slow)"
    report.hints = rank_hints(report)
    report.flags = byte_count_flags(contract.row, contract.claim, rows=g["bench_rows"], cols=g["bench_cols"],
                                    floor_gbs=floor.gbs, measured_gbs=mine.gbs, measured_ms=mine.ms,
                                    floor_name=floor.version, ex=BIAS_GELU)
    return report


def wrong(name: str, rng: random.Random) -> GradeReport:
    """A kernel whose output is wrong: stopped at its first check (fail, stage verify)."""
    bad = wrong_check(name)
    report = GradeReport(kernel="biasGeluFused", file="submission.cu", sha256=f"{rng.getrandbits(256):064x}",
                         verdict="fail", stage="verify",
                         reason=bad.message, seed=rng.randrange(2**63), versions=VERSIONS, gpu=H200,
                         compile=CompileSummary(arch="sm_90", registers=rng.choice([16, 18, 20])), verification=[bad])
    report.hints = rank_hints(report.model_copy(update={"hints": [h.model_copy() for h in machine_hints(name)]}))
    report.flags = byte_count_flags(None, None, rows=None, cols=None, floor_gbs=None, measured_gbs=None,
                                    measured_ms=None, ex=BIAS_GELU)
    return report


def stopped(kind: str, rng: random.Random) -> GradeReport:
    """An error in the submission, or the grader's, or a busy GPU: the reports the grader and the batch write."""
    if kind in STATIC:
        report = grade_file(str(ROOT / STATIC[kind]), seed=rng.randrange(2**63))
        here = (str(ROOT / STATIC[kind]), Path(STATIC[kind]).name)
        return report.model_copy(update={"file": "submission.cu", "gpu": H200, "details": _named(report.details, here),
                                         "reason": _named(report.reason, here)})
    if kind == "binary":
        reason = str(InputError("submission.cu: the file is binary (it holds NUL bytes); submit the .cu source, not "
                                "a build"))
        return error_report("submission.cu", Stage.INPUT, reason, kernel="biasGeluFused")
    if kind == "fault":
        err = grader_call_failed("cuStreamSynchronize", "CUDA_ERROR_ILLEGAL_ADDRESS")
        return error_report("submission.cu", err.stage, str(err), gpu=H200, versions=VERSIONS,
                            compile=CompileSummary(arch="sm_90", registers=20))
    if kind == "hang":
        return error_report("submission.cu", Stage.RUN, timeout_reason(Stage.VERIFY, 60, 120), gpu=H200,
                            versions=VERSIONS, compile=CompileSummary(arch="sm_90", registers=14))
    if kind == "grader":
        err = grader_call_failed("cuMemAlloc", "CUDA_ERROR_OUT_OF_MEMORY")
        return error_report("submission.cu", Stage.GRADER, str(err), gpu=H200, versions=VERSIONS,
                            kernel="biasGeluFused")
    return GradeReport(kernel="biasGeluFused", file="submission.cu", verdict="busy", stage="time", gpu=H200,
                       versions=VERSIONS,
                       clocks=clocks(), reason="not graded: the GPU was busy while timing (other processes: pid 4242 "
                                               "(python3, 2.0 GiB)); run again")


def _named(text: str, names: tuple[str, ...]) -> str:
    """`text` with the file's path and name as the batch's worker shows them (submission.cu)."""
    for name in names:
        text = text.replace(name, "submission.cu")
    return text


def report_of(kind: str, rng: random.Random, claim: str, profiled: bool) -> GradeReport:
    if kind in GRADINGS:
        return correct(kind, rng, claim, profiled)
    if kind in ("tanh", "bias_index"):
        return wrong(kind, rng)
    return stopped(kind, rng)


@functools.cache
def _rows() -> tuple[str, ...]:
    rng = random.Random(31)
    names = ids(len(PLAN), rng)
    plan = list(PLAN)
    rng.shuffle(plan)
    claims = {i: "honest" for i in rng.sample(range(len(plan)), 12)}
    flagged = [i for i, kind in enumerate(plan) if kind in ("scalar", "stride_float4")][:2]
    claims[flagged[0]], claims[flagged[1]] = "impossible", "bias-counted"
    groups = {names[3]: [Submitter(name="Ada Lovelace", email="ada@example.edu", sid="0012345"),
                         Submitter(name="Grace Hopper", email="grace@example.edu", sid="0012346"),
                         Submitter(name="Alan Turing", email="alan@example.edu", sid="0012347")],
              names[9]: [Submitter(name="Zoë Çelik", email="zoe@example.edu", sid="0012348")]}
    rows, borderline = [], False
    for i, (student, kind) in enumerate(zip(names, plan, strict=True)):
        report = report_of(kind, rng, claims.get(i, "none"), profiled=i % 3 == 0)
        report.sandbox = SANDBOX if report.stage != Stage.INPUT else ""
        report.versions = VERSIONS if report.versions else {}
        if report.verdict == "silver" and not borderline:
            report.borderline = borderline = True  # the first silver: its band straddles a threshold
        row = gb.make_result(id=student, path=f"class/{student}/submission.cu", key=f"k-{i}", sha256=report.sha256
                             or None, report=report, grader_version="0.1.0", device=str(i % 4),
                             phases={"wall": round(rng.uniform(2.0, 9.0), 2)}, submitters=groups.get(student))
        rows.append(row.model_dump_json())
    return tuple(rows)


def h200_class() -> list[gb.BatchResult]:
    """The 64 rows (a fresh copy on each call), sorted by id, as a batch on the H200 would write them."""
    return [gb.BatchResult.model_validate_json(line) for line in _rows()]


BATCH_SETTINGS = {"grader": "0.1.0", "arch": None, "seed": None, "cards": ["NVIDIA H200"], "shard": None,
                  "compile_limit": 60.0, "run_limit": 120.0, "memory_limit_gib": 16.0, "sandbox": SANDBOX}
"""What `grade batch` puts in its gradebook's settings (grader.batch.command.write_batch) on the H200."""


def batch_and_merge(folder: Path, rows: list[gb.BatchResult] | None = None) -> tuple[Path, Path]:
    """What `grade batch` writes for `rows` (default: h200_class()) on the H200: folder/batch/results.jsonl (the rows
    in the order they finished: shuffled) and the class outputs with the batch's settings
    (grader.batch.command.write_class_outputs, index.html among them); and what `grade merge` writes from that
    results file into folder/merge. Returns (folder/batch, folder/merge)."""
    from grader.batch import command

    rows = h200_class() if rows is None else list(rows)
    random.Random(3).shuffle(rows)
    batch, merge = folder / "batch", folder / "merge"
    store = gb.ResultStore(batch / "results.jsonl")
    try:
        back = [store.append(r) for r in rows]
    finally:
        store.close()
    command.write_class_outputs(gb.build_gradebook(back, "0.1.0", BATCH_SETTINGS), batch)
    assert command.main(["merge", str(merge), str(batch / "results.jsonl"), "--quiet"]) == 0
    return batch, merge
