"""Honest outputs (issue 9, part 5): the JSON schema describes what `--json` writes, for every kind of report;
without a GPU Gradescope gets "not graded" and no points; the scores CSV for Gradescope's import; benchmarks
refuse to print a figure without a GPU."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest

import grader.pipeline.grade
from conftest import SUBMISSIONS, load_benchmark
from grader.batch import gradebook as gb
from grader.check.verify import Verification, compare
from grader.cli import main
from grader.core.errors import EXIT_GRADER, EXIT_NO_GPU, NoGpuError
from grader.core.model import NON_FINITE_STRINGS as NON_FINITE
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.output.report import CompileSummary, GradeReport
from grader.timing.timer import TimedRow

GOLD = str(SUBMISSIONS / "gold_float4.cu")


def no_gpu(device_id=0):
    raise NoGpuError("test: no NVIDIA driver")


# --- a small JSON-schema check (the keywords GradeReport's schema uses) ----------------------------------
def schema_errors(value, schema: dict, defs: dict, path: str = "$") -> list[str]:
    """Where `value` does not match `schema` ($ref, anyOf, enum, const, type, properties, required, items,
    additionalProperties): a list of paths with the reason, empty when it matches."""
    if "$ref" in schema:
        return schema_errors(value, defs[schema["$ref"].rsplit("/", 1)[1]], defs, path)
    if "anyOf" in schema:
        if any(not schema_errors(value, s, defs, path) for s in schema["anyOf"]):
            return []
        return [f"{path}: {value!r} matches no choice of {schema['anyOf']}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{path}: {value!r} not in {schema['enum']}"]
    if "const" in schema and value != schema["const"]:
        return [f"{path}: {value!r} is not {schema['const']!r}"]
    kinds = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
    kind = schema.get("type")
    if kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    else:
        ok = kind is None or isinstance(value, kinds[kind])
    if not ok:
        return [f"{path}: {value!r} is not of type {kind}"]
    errors = []
    if isinstance(value, dict):
        props = schema.get("properties", {})
        errors += [f"{path}: {name} missing" for name in schema.get("required", []) if name not in value]
        for name, item in value.items():
            sub = props.get(name, schema.get("additionalProperties", {}))
            if sub is False:
                errors.append(f"{path}.{name}: not allowed")
            elif isinstance(sub, dict):
                errors += schema_errors(item, sub, defs, f"{path}.{name}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors += schema_errors(item, schema["items"], defs, f"{path}[{i}]")
    return errors


def printed_schema(capsys) -> dict:
    assert main(["--json-schema"]) == 0
    return json.loads(capsys.readouterr().out)


def assert_valid(text: str, schema: dict) -> dict:
    """`text` (a report as --json writes it) matches the schema and reads back into the same GradeReport."""
    data = json.loads(text)
    assert schema_errors(data, schema, schema.get("$defs", {})) == []
    back = GradeReport.model_validate_json(text)
    assert back.model_dump_json() == GradeReport.model_validate_json(back.model_dump_json()).model_dump_json()
    assert json.loads(back.model_dump_json()) == data  # nothing lost or changed on the way back
    return data


def number_nodes(node, path="$", inside_any_of=False):
    """Paths of every {"type": "number"} in a schema, with whether it sits in an anyOf admitting NON_FINITE."""
    if isinstance(node, dict):
        if node.get("type") == "number":
            yield path, inside_any_of
        choices = node.get("anyOf")
        admits = bool(choices) and any(c.get("enum") == list(NON_FINITE) for c in choices)
        for key, sub in node.items():
            yield from number_nodes(sub, f"{path}.{key}", admits if key == "anyOf" else False)
    elif isinstance(node, list):
        for i, sub in enumerate(node):
            yield from number_nodes(sub, f"{path}[{i}]", inside_any_of)


def test_every_float_of_the_schema_admits_the_non_finite_strings(capsys):
    schema = printed_schema(capsys)
    nodes = list(number_nodes(schema))
    assert len(nodes) > 10
    assert [path for path, ok in nodes if not ok] == []
    mismatch = schema["$defs"]["Mismatch"]["properties"]["got"]  # where a never-writing kernel puts "NaN"
    assert not schema_errors("NaN", mismatch, schema["$defs"]) and schema_errors("nan", mismatch, schema["$defs"])


def never_written() -> GradeReport:
    """A kernel that never writes: the output stays the NaN it was poisoned with."""
    rng = np.random.default_rng(1)
    ref = rng.uniform(-1, 1, (101, 97))
    v = compare(np.full((101, 97), np.nan, dtype=np.float32), ref, BIAS_GELU)
    v.message = "wrong output at 101 x 97"
    assert not v.passed and math.isnan(v.first_bad.got)
    return GradeReport(file="never.cu", verdict="fail", stage="verify", reason=v.message, seed=5, verification=[v],
                       compile=CompileSummary(arch="sm_90", registers=12))


def gold_report() -> GradeReport:
    row = dict(kernels=1, values_per_elem=2, reps=40, spread=0.01, rse=0.002)
    return GradeReport(
        file="gold.cu", verdict="gold", stage="grade", reason="0.960 of the copy floor", seed=7, bench_rows=61440,
        bench_cols=4096, floor_version="copyVec4", floor_gbs=4300.0, fraction=0.96, fraction_low=0.95,
        fraction_high=math.inf, fraction_of_scalar_copy=1.5, compile=CompileSummary(arch="sm_90", registers=20),
        verification=[Verification(rows=101, cols=97, passed=True, total=9797, message="correct at 101 x 97")],
        table=[TimedRow(version="biasGeluFused", ms=0.47, gbs=4128.0, x_copy=0.96, **row),
               TimedRow(version="copyVec4", ms=0.45, gbs=4300.0, x_copy=1.0, **row),
               TimedRow(version="copyScalar", ms=math.nan, gbs=math.nan, x_copy=math.nan, **row)])


def test_reports_of_every_kind_match_the_schema(capsys, monkeypatch):
    schema = printed_schema(capsys)
    gold = assert_valid(gold_report().model_dump_json(), schema)
    assert gold["fraction_high"] == "Infinity" and gold["table"][2]["ms"] == "NaN"
    never = assert_valid(never_written().model_dump_json(), schema)
    assert never["verification"][0]["first_bad"]["got"] == "NaN"
    assert main([str(SUBMISSIONS / "compile_error.cu"), "--json"]) == 1
    assert assert_valid(capsys.readouterr().out, schema)["stage"] == "compile"
    assert main(["does/not/exist.cu", "--json"]) == 2
    assert assert_valid(capsys.readouterr().out, schema)["stage"] == "input"
    monkeypatch.setattr(grader.pipeline.grade, "open_gpu", no_gpu)
    assert main([GOLD, "--json"]) == EXIT_NO_GPU
    assert assert_valid(capsys.readouterr().out, schema)["verdict"] == "no-gpu"


def test_batch_rows_write_non_finite_floats_as_strings():
    row = gb.make_result(id="a", path="a.cu", key="k", sha256=None, report=gold_report(), grader_version="t")
    row.fraction = math.inf
    data = json.loads(row.model_dump_json())
    assert data["fraction"] == "Infinity" and data["report"]["table"][2]["gbs"] == "NaN"
    assert gb.BatchResult.model_validate_json(row.model_dump_json()).fraction == math.inf


# --- Gradescope without a GPU ----------------------------------------------------------------------------
def assert_not_graded(results: dict) -> None:
    assert results["output"].startswith("not graded: this autograder has no GPU")
    assert results["score"] == 0.0 and results["extra_data"] == {"graded": False}
    assert all(t["score"] == 0.0 and t["max_score"] == 0.0 for t in results["tests"])


def test_gradescope_without_a_gpu_says_not_graded_and_gives_no_points(monkeypatch, capsys):
    monkeypatch.setattr(grader.pipeline.grade, "open_gpu", no_gpu)
    assert main([GOLD, "--format", "gradescope"]) == EXIT_NO_GPU
    results = json.loads(capsys.readouterr().out)
    assert_not_graded(results)
    assert [t["status"] for t in results["tests"]] == ["passed"]  # what did run: compile, parameter list
    assert "compiled for sm_90" in results["tests"][0]["output"]


def test_gradescope_still_scores_a_compile_error_without_a_gpu(monkeypatch, capsys):
    monkeypatch.setattr(grader.pipeline.grade, "open_gpu", no_gpu)
    assert main([str(SUBMISSIONS / "compile_error.cu"), "--format", "gradescope"]) == 1
    results = json.loads(capsys.readouterr().out)
    assert results["score"] == 0 and sum(t["max_score"] for t in results["tests"]) == 10


# --- the scores CSV for Gradescope's import --------------------------------------------------------------
def _row(id: str, report: GradeReport) -> gb.BatchResult:
    return gb.make_result(id=id, path=f"{id}.cu", key=id, sha256=None, report=report, grader_version="t")


def test_scores_csv_gives_points_to_graded_rows_only(tmp_path):
    rows = [_row("zoë@example.edu", gold_report()),
            _row("李雷", never_written()),
            _row("no_gpu_student", GradeReport(file="n.cu", verdict="no-gpu", reason="no GPU")),
            _row("=cmd", GradeReport(file="g.cu", verdict="error", stage="grader", reason="cuMemGetInfo failed"))]
    paths = gb.write_outputs(gb.build_gradebook(rows, "t", {}), tmp_path)
    raw = paths["scores"].read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")  # UTF-8 with BOM: a spreadsheet reads the names right
    table = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"))))
    assert tuple(table[0]) == gb.SCORES_COLUMNS
    assert table[1:] == [["zoë@example.edu", "10", "zoë@example.edu", "gold", "", "", "zoë@example.edu.cu"],
                         ["", "1", "李雷", "fail", "", "", "李雷.cu"], ["", "", "no_gpu_student", "no-gpu", "", "",
                                                                   "no_gpu_student.cu"],
                         ["", "", "'=cmd", "error", "", "", "'=cmd.cu"]]  # Name and SID: from a Gradescope export only


# --- benchmarks without a GPU ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["batch_throughput", "stability", "reference_perf", "rope_perf", "grade_speed",
                                  "hint_check", "ncu_record"])
def test_benchmarks_exit_3_without_a_gpu_and_print_no_figure(name, tmp_path, monkeypatch, capsys):
    module = load_benchmark(name)
    if name == "batch_throughput":
        monkeypatch.setattr(module, "probe_gpus", lambda: (0, [], "test: no NVIDIA driver"))
        args = ["--copies", "1", "--json", str(tmp_path / "t.json")]
    elif name in ("grade_speed", "hint_check", "ncu_record"):
        monkeypatch.setattr(module, "visible_gpus", no_gpu)
        args = ["--out", str(tmp_path / "t.json")]
    else:
        monkeypatch.setattr(module, "open_gpu", no_gpu)
        args = ["--out", str(tmp_path / "t.json")]
    assert module.main(args) == EXIT_NO_GPU
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1 and "no GPU" in captured.err
    assert not (tmp_path / "t.json").exists()


def test_exit_4_is_distinct_from_fail():
    assert EXIT_GRADER == 4 and EXIT_GRADER not in (0, 1, 2, 3)


# --- the JSON report is as safe to print as the text report -----------------------------------------------
UNSAFE = ("\x9b", "\u202e", "\x00", "\x1b")
"""C1 control (CSI), bidirectional override, NUL, ESC: never raw in any output."""


def test_json_report_escapes_controls_and_bidi_overrides_from_compiler_excerpts(tmp_path, capsys):
    src = tmp_path / "s.cu"
    src.write_text('extern "C" __global__ void biasGeluFused(const float* x, const float* bias, float* out, '
                   'size_t cols) { out[0] = x[0] \u202e+ undefined_name\x9b; }\n', encoding="utf-8")
    assert main([str(src), "--json"]) == 1
    out = capsys.readouterr().out
    assert not any(ch in out for ch in UNSAFE), out
    report = json.loads(out)
    assert report["stage"] == "compile"
    assert "\\u202e" in report["details"] and "\\x9b" in report["details"]
    assert GradeReport.model_validate_json(out).model_dump_json(indent=2) == out.rstrip("\n")  # idempotent


def test_a_file_name_that_is_not_utf8_still_gives_a_json_report(tmp_path, capsys, monkeypatch):
    src = tmp_path / "caf\udce9.cu"  # the byte 0xE9 (Latin-1 é) as Python decodes it from a file name
    src.write_bytes((SUBMISSIONS / "gold_float4.cu").read_bytes())
    monkeypatch.setattr(grader.pipeline.grade, "open_gpu", no_gpu)
    assert main([str(src), "--json"]) == EXIT_NO_GPU
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "no-gpu" and report["file"].endswith("caf\\xe9.cu")



@pytest.mark.parametrize("name, shown", [("caf\udce9.cu", "caf\\xe9.cu"),
                                         ("a\nVerdict: GOLD.cu", "a\\nVerdict: GOLD.cu")])
@pytest.mark.parametrize("fmt", ["text", "json", "gradescope"])
def test_a_hostile_file_name_gives_its_report_in_every_format(tmp_path, capsys, monkeypatch, name, shown, fmt):
    src = tmp_path / name  # a byte that is not UTF-8 (Python's surrogate), a newline that could forge a line
    src.write_bytes((SUBMISSIONS / "gold_float4.cu").read_bytes())
    monkeypatch.setattr(grader.pipeline.grade, "open_gpu", no_gpu)
    assert main([str(src), "--format", fmt]) == EXIT_NO_GPU
    out = capsys.readouterr().out
    if fmt == "text":
        assert out.splitlines()[0] == f"{shown}: biasGeluFused" and "\nVerdict: GOLD" not in out  # its base name
    elif fmt == "json":
        report = json.loads(out)
        assert report["verdict"] == "no-gpu" and report["file"] == shown
    else:
        results = json.loads(out)
        assert results["score"] == 0.0 and all(ch.isprintable() or ch == "\n" for ch in results["output"])
        assert "\n" not in name or "\nVerdict: GOLD" not in results["output"]

def test_no_nul_byte_in_the_compile_log(capsys):
    from grader.compile.nvrtc import compile_kernels

    compiled = compile_kernels((SUBMISSIONS / "gold_float4.cu").read_text(), "gold.cu", ("biasGeluFused",), "sm_90")
    assert "ptxas info" in compiled.log and "\x00" not in compiled.log  # cuda.core hands NVRTC's NULs on
    assert main([str(SUBMISSIONS / "compile_error.cu"), "--json"]) == 1
    assert "\\x00" not in capsys.readouterr().out
