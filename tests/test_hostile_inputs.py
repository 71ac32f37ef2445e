"""Hostile inputs that are not include bypasses (issue 8, part 4): inputs that made the grader slow or
memory-hungry, names that broke ids or options, text that reached a terminal or a markdown file unescaped,
files that could not be read, numbers written in forms C would not accept, and non-finite numbers in JSON.
No GPU needed."""

from __future__ import annotations

import io
import json

import pytest

from conftest import SUBMISSIONS, assert_linear
from grader.batch import gradebook as gb
from grader.batch import pool
from grader.cli import main
from grader.core.text import markdown_cell, printable, printable_lines
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.output.report import GradeReport, render_text

GOLD = (SUBMISSIONS / "gold_float4.cu").read_text()
CONTROL = ("\x1b", "\x07", "\x9b", "\r")


def no_control(text: str) -> bool:
    return not any(c in text for c in CONTROL)


# --- escaping: one helper (grader.core.text) for everything shown ------------------------------------------
def test_printable_escapes_control_and_format_characters():
    # \udcff: the byte 0xFF of a file name that is not UTF-8 (PEP 383), shown as that byte
    assert printable("a\x1b[2J\x07\u202eb\udcff\nc", None) == "a\\x1b[2J\\x07\\u202eb\\xff\\nc"
    assert printable("x" * 100, 10) == "xxxxxxx..."
    assert printable_lines("\tint a;\n\x1b]0;title\x07") == "\tint a;\n\\x1b]0;title\\x07"


def test_markdown_cell_carries_no_html_and_no_markup():
    cell = markdown_cell('<img src=x onerror="alert(1)"> | [a](http://x) `c` & \\', None)
    assert "<" not in cell and ">" not in cell and "&lt;img" in cell
    assert "\\|" in cell and "\\[a\\](http://x)" in cell and "\\`c\\`" in cell and "&amp;" in cell


def test_progress_line_off_a_terminal_escapes_names():
    stream = io.StringIO()
    p = pool.Progress(total=1, already=0, slots=1, quiet=False, stream=stream)
    p.done = 1
    p.update(["\x1b]0;owned\x07"], 0, finished="\x1b[2Jevil\x1b[31m: error")
    assert no_control(stream.getvalue()) and "\\x1b[2Jevil" in stream.getvalue()


def test_summary_markdown_carries_no_raw_html():
    report = GradeReport(file="s.cu", verdict="error", stage="input", reason="<script>alert(1)</script>")
    row = gb.make_result(id="<img src=x onerror=alert(1)>", path="p", key="k", sha256=None, report=report,
                         grader_version="t")
    md = gb.summary_markdown(gb.build_gradebook([row], "t", {}))
    assert "<img" not in md and "<script" not in md and "&lt;img src=x onerror=alert(1)&gt;" in md


def test_text_report_escapes_what_the_student_controls():
    report = GradeReport(file="\x1b]0;t\x07.cu", verdict="error", stage="compile", reason="s.cu: compile error",
                         details='s.cu:3: error: x\n    const char* s = "\x1b[2J\x1b[H";\n\t^')
    text = render_text(report)
    assert no_control(text) and '"\\x1b[2J\\x1b[H"' in text and "\t^" in text


def test_compile_excerpt_with_escapes_reaches_the_terminal_escaped(tmp_path, capsys):
    p = tmp_path / "s.cu"
    p.write_text(GOLD + '\nint broken = "\x1b[2J\x1b]0;owned\x07" + ;\n')
    main([str(p)])
    out, err = capsys.readouterr()
    assert "error" in out and no_control(out + err)


def test_input_error_message_is_escaped_on_stderr(tmp_path, capsys):
    p = tmp_path / "s.cu"
    p.write_text("// Grade: block = 256 \x1b]0;owned\x07\n" + GOLD)
    assert main([str(p)]) == 2
    err = capsys.readouterr().err
    assert "looks like a `// grade:` line" in err and no_control(err)


# --- the claim and row parsers are linear ------------------------------------------------------------
# Linear time is checked by the ratio of CPU times on two input sizes (conftest.assert_linear), never against
# a clock: a 1 s limit failed on a quiet 2-core machine and under load.
def test_the_linear_time_check_catches_a_quadratic_step():
    def quadratic(text):
        return sum(text.count("a", 0, i) for i in range(0, len(text), 16))  # len/16 scans of up to len

    assert assert_linear(len, lambda n: "a" * n, 1 << 20) == 1 << 20
    with pytest.raises(AssertionError, match="quadratic: 64x"):
        assert_linear(quadratic, lambda n: "a" * n, 1 << 15)


def test_a_claim_of_60000_digits_parses_in_linear_time():
    from grader.source.claims import parse_claim

    assert assert_linear(parse_claim, lambda n: "It reached " + "9" * n + " of the floor", 60_000).fraction is None
    assert assert_linear(parse_claim, lambda n: "It reached " + "9" * n + "x%", 60_000).fraction is None
    assert assert_linear(parse_claim, lambda n: "9" * n + " percent", 60_000).fraction == float("inf")
    assert assert_linear(parse_claim, lambda n: "1." * n, 30_000).fraction is None


def test_comments_are_found_in_linear_time_among_hostile_literals():
    from grader.source.claims import comment_lines, find_claim, parse_claim

    size = 256 * 1024
    for make in (lambda n: "1'" * (n // 2), lambda n: "a'" * (n // 2), lambda n: 'R"(' * (n // 3),
                 lambda n: 'R"x(a)x"' * (n // 8), lambda n: '"\\\n' * (n // 3),
                 lambda n: "// 0.5 x copy 0.5\n" * (n // 18)):
        assert_linear(comment_lines, make, size)
        assert_linear(lambda text: find_claim(text, BIAS_GELU.kernel_name), make, size)
    assert_linear(parse_claim, lambda n: "0.5 copy floor " * n, 20_000)


def test_a_long_row_parses_in_linear_time_and_its_flags_too():
    from grader.source.claims import byte_count_flags, parse_row

    def flags_of(raw):
        return byte_count_flags(parse_row(raw), None, rows=100, cols=1024, floor_gbs=4000.0, measured_gbs=3000.0,
                                measured_ms=1.0, ex=BIAS_GELU)

    for make, size in ((lambda n: "biasGeluFused 1 2 0.5 " + "9" * n + "x", 60_000),
                       (lambda n: "biasGeluFused | 1 | 2 | 0.5 | " + "9" * n + "x", 60_000),
                       (lambda n: "v | 1 | 2 | 0.5 | 1." + "0" * n, 60_000), (lambda n: "v | 1 | 2 | 0.5 | " + "1e" * n,
                                                                              30_000)):
        assert_linear(parse_row, make, size)
        flags = assert_linear(flags_of, make, size)
        assert all(len(f.message) < 2000 for f in flags)


def test_claim_fraction_at_the_end_of_a_sentence():
    from grader.source.claims import parse_claim

    assert parse_claim("It reached 0.93.").fraction == 0.93
    assert parse_claim("It reached 0.93... of it").fraction == 0.93
    assert parse_claim("It reached 93.5 % of the copy").fraction == 0.935
    assert parse_claim("version 1.2.3 is fast").fraction is None


def test_numbers_in_the_row_and_claim_are_ascii_decimal():
    from grader.source.claims import parse_claim, parse_row

    assert parse_claim("It reached \uff10.\uff19\uff13 of the floor").fraction is None  # full-width digits
    assert parse_row("v | \uff11 | 2 | 0.5 | 100").problem == "kernels '\uff11' is not a number"
    assert parse_row("v | 1 | 2 | 0.5 | 1_000").problem == "gbs '1_000' is not a number"
    assert parse_row("v | 1 | 2 | 0.5 | 1e3").gbs == 1000.0


# --- the source-signature scan is linear -------------------------------------------------------------
REAL_SIGNATURE = ["const float* __restrict__ x", "const float* __restrict__ bias", "float* __restrict__ out",
                  "size_t cols"]


def test_signature_scan_is_linear_in_copies_of_the_header():
    from grader.source.signature import source_signature

    def signature(text):
        return source_signature(text, "biasGeluFused")

    # NVRTC skips `#if 0L`; the scan keeps both branches of any conditional but `#if 0` / `#if 1` (33 s before)
    unclosed = assert_linear(signature, lambda n: "#if 0L\n" + "__global__ void biasGeluFused(\n" * n + "#endif\n"
                             + GOLD, 4000)
    assert unclosed == REAL_SIGNATURE
    copies = assert_linear(signature, lambda n: "#ifdef NEVER\n" + "__global__ void biasGeluFused(float* x)\n" * n
                           + "#endif\n" + GOLD, 4000)
    assert copies is None  # the definitions disagree
    assert_linear(signature, lambda n: "__global__ void biasGeluFused(" * n + ")" * n + "{}\n" + GOLD, 8000)
    assert_linear(signature, lambda n: "__global__ void biasGeluFused(int a) " * n + GOLD, 6000)


def test_signature_scan_is_linear_in_nested_conditionals():
    from grader.source.signature import source_signature

    deep = assert_linear(lambda text: source_signature(text, "biasGeluFused"),
                         lambda n: "#if 1\n" * (2 * n) + "int a;\n" * (3 * n) + "#endif\n" * (2 * n) + GOLD, 10_000)
    assert deep == REAL_SIGNATURE


# --- compiler output: warnings capped, ptxas errors shown, no name read as an option -----------------
def _compile(text: str, name: str = "s.cu"):
    from grader.compile.nvrtc import compile_kernels
    from grader.exercises import bias_gelu as exercise
    from grader.source.read import prepare_for_nvrtc

    kernel = exercise.KERNEL_NAME
    return compile_kernels(prepare_for_nvrtc(text, name, kernel), name, (kernel,), "sm_90")


def test_compiler_warnings_are_capped_and_the_rest_counted(tmp_path):
    from grader.compile import nvrtc as c
    from grader.pipeline.grade import grade_file

    decls = " ".join(f"int a{i};" for i in range(3000))  # 3,000 unused variables on one 30 KB line
    text = GOLD + "\n__global__ void extra() { " + decls + " }\n"
    compiled = _compile(text)
    shown = [w for w in compiled.warnings if ": warning #177-D:" in w]
    assert 0 < len(shown) <= c.MAX_DIAGNOSTICS and compiled.warnings_dropped == 3000 - len(shown)
    assert sum(map(len, compiled.warnings)) <= c.MAX_DIAGNOSTIC_CHARS
    p = tmp_path / "s.cu"
    p.write_text(text)
    report = grade_file(str(p))
    assert report.compile.warnings_dropped == 3000 - len(shown)
    assert len(report.model_dump_json()) < 100_000  # was 143 MB


def test_a_long_error_log_is_capped_too():
    import pytest

    from grader.core.errors import SubmissionError

    text = GOLD + "\n" + "".join(f"int e{i} = ;\n" for i in range(500))
    with pytest.raises(SubmissionError) as err:
        _compile(text)
    assert "more errors not shown" in err.value.details and len(err.value.details) < 20_000


def test_ptxas_errors_are_shown():
    import pytest

    from grader.core.errors import SubmissionError

    for extra, said in [("__constant__ float big[20000];\n"
                         "__global__ void useBig(float* o) { o[0] = big[threadIdx.x]; }\n",
                         "too much global constant data"),
                        ("__global__ void sh(float* o) { __shared__ float s[60000]; s[threadIdx.x] = 1; "
                         "__syncthreads(); o[0] = s[threadIdx.x + 1]; }\n", "too much shared data")]:
        with pytest.raises(SubmissionError) as err:
            _compile(GOLD + extra)
        assert "no diagnostic" not in err.value.details
        assert "ptxas error" in err.value.details and said in err.value.details
        assert "ptxas" in str(err.value)


def test_a_file_named_like_an_option_compiles(tmp_path, capsys):
    from grader.source.read import read_submission, safe_source_name

    assert not safe_source_name("-gold.cu").startswith("-") and not safe_source_name("--x").startswith("-")
    p = tmp_path / "-gold.cu"
    p.write_text(GOLD)
    sub = read_submission(p, BIAS_GELU)
    assert not sub.name.startswith("-")
    _compile(GOLD, sub.name)
    code = main([str(p), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert report["stage"] != "compile" and code in (0, 1, 3)


# --- batch ids are distinct whatever the names ---------------------------------------------------------
def _class(tmp_path, files: dict[str, str]):
    cls = tmp_path / "class"
    for name, content in files.items():
        p = cls / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)
    return cls


def test_batch_ids_are_distinct_when_a_name_looks_like_a_suffixed_id(tmp_path):
    from grader.batch import command as batch

    cls = _class(tmp_path, {"y.cu": GOLD, "y/a.cu": GOLD, "y~2/b.cu": GOLD, "y~3.cu": GOLD, "z/y.cu": GOLD})
    items = batch.discover([*map(str, sorted(cls.iterdir())), str(cls / "z" / "y.cu")])  # `class/* class/z/y.cu`
    ids = [it.id for it in items]
    assert len(ids) == len(set(ids)) == 6
    assert {"y", "y~2", "y~3"} <= set(ids)
    assert next(it for it in items if it.id == "y~2").path.endswith("y~2/b.cu")  # a real name keeps its id
    rows = [gb.make_result(id=it.id, path=it.path, key=it.id, sha256=None, grader_version="t",
                           report=GradeReport(file=it.path, verdict="error", reason="r")) for it in items]
    assert len(gb.latest_by_id(rows)) == 6  # grade merge keeps every student


# --- files and folders that cannot be read -------------------------------------------------------------
def _deny(monkeypatch, path, fn_name: str, module):
    """Make module.fn_name raise PermissionError for `path` (tests run as root: chmod 000 does not stop it)."""
    real = getattr(module, fn_name)

    def denied(p, *args, **kwargs):
        if str(p) == str(path):
            raise PermissionError(13, "Permission denied", str(p))
        return real(p, *args, **kwargs)

    monkeypatch.setattr(module, fn_name, denied)


def test_an_unreadable_file_is_an_input_error_with_a_report(tmp_path, monkeypatch, capsys):
    import os

    p = tmp_path / "s.cu"
    p.write_text(GOLD)
    _deny(monkeypatch, p, "open", os)  # grader.source.read reads without following a link: os.open
    assert main([str(p)]) == 2
    out, err = capsys.readouterr()
    assert "s.cu: cannot be read (Permission denied)" in err and "Traceback" not in err
    assert main([str(p), "--format", "json"]) == 2
    report = json.loads(capsys.readouterr().out)
    assert report["stage"] == "input" and "cannot be read" in report["reason"]
    assert main([str(p), "--format", "gradescope"]) == 2
    assert "cannot be read" in json.loads(capsys.readouterr().out)["output"]


def test_a_folder_that_cannot_be_listed_is_said_so(tmp_path, monkeypatch):
    import os

    from grader.batch import command as batch

    cls = _class(tmp_path, {"alice/k.cu": GOLD, "bob/src/k.cu": GOLD, "carol/k.cu": GOLD})
    _deny(monkeypatch, cls / "alice", "scandir", os)
    _deny(monkeypatch, cls / "bob" / "src", "scandir", os)
    items = {it.id: it for it in batch.discover([str(cls)])}
    assert "cannot be read (Permission denied)" in items["alice"].problem
    assert "cannot be read (Permission denied)" in items["bob"].problem and "src" in items["bob"].problem
    assert items["carol"].problem is None
    _deny(monkeypatch, cls, "iterdir", type(cls))
    items = batch.discover([str(cls)])
    assert len(items) == 1 and "cannot be read (Permission denied)" in items[0].problem


def test_a_file_removed_during_a_batch_is_an_input_row(tmp_path, monkeypatch):
    import os

    from grader.batch.protocol import Job
    from grader.batch.worker import Channel, grade_job

    monkeypatch.chdir(tmp_path)
    r, w = os.pipe()
    job = Job(path=str(tmp_path / "gone.cu"), sha256="0" * 64, name="gone.cu", display="class/gone.cu")
    grade_job(job, Channel(w))
    os.close(w)
    with os.fdopen(r) as f:
        result = [json.loads(line) for line in f if '"result"' in line][0]["report"]
    assert result["stage"] == "input" and "was removed while the batch was running" in result["reason"]
    assert "please report it" not in result["reason"]


# --- UTF-16 and UTF-32 sources ---------------------------------------------------------------------------
def test_a_utf16_file_is_told_to_be_saved_as_utf8(tmp_path, capsys):
    import pytest

    from grader.core.errors import InputError
    from grader.source.read import decode_source

    for encoding in ("utf-16", "utf-16-le", "utf-16-be", "utf-32"):
        with pytest.raises(InputError) as err:
            decode_source(GOLD.encode(encoding), "s.cu")
        assert "save the file as UTF-8" in str(err.value) and "binary" not in str(err.value), encoding
    with pytest.raises(InputError, match="binary"):
        decode_source(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), "s.cu")
    p = tmp_path / "s.cu"
    p.write_bytes(GOLD.encode("utf-16"))
    assert main([str(p)]) == 2 and "UTF-16" in capsys.readouterr().err


# --- whole numbers in the // grade: block are ASCII decimal, as C reads them ------------------------------
def test_grade_block_numbers_are_ascii_decimal_only():
    import pytest

    from grader.core.errors import InputError
    from grader.source.contract import parse_contract

    assert parse_contract("// grade: block = 256\n// grade: grid = stride 1024\n"
                          "// grade: params = x, bias, out, n, cols\n",
                          "s.cu", BIAS_GELU).stride_blocks == 1024
    for line in ("block = 2_56", "block = \uff12\uff15\uff16", "block = 0x100", "block = 0256", "block = +256",
                 "elems_per_thread = \u0664", "grid = stride 1_024", "block = 256.0"):
        with pytest.raises(InputError) as err:
            parse_contract(f"// grade: {line}\n", "s.cu", BIAS_GELU)
        assert "decimal" in str(err.value) and "digits 0-9" in str(err.value), line


# --- non-finite numbers are the strings the README promises ----------------------------------------------
def test_an_infinite_claim_is_infinity_in_json(tmp_path, capsys):
    p = tmp_path / "s.cu"
    p.write_text(GOLD.replace("It reached 0.96 of the copy floor", "It reached " + "9" * 400 + "% of the copy floor"))
    main([str(p), "--format", "json"])
    out = capsys.readouterr().out
    report = json.loads(out)
    assert report["contract"]["claim"]["fraction"] == "Infinity"
    assert GradeReport.model_validate_json(out).contract.claim.fraction == float("inf")
    assert any(f["kind"] == "impossible-fraction" for f in report["flags"])


def test_every_float_of_the_report_model_round_trips_non_finite_values(tmp_path):
    import math

    from grader.check.verify import Verification
    from grader.timing.timer import TimedRow

    nan, inf = float("nan"), float("inf")
    report = GradeReport(file="s.cu", verdict="fail", reason="r", fraction=inf, fraction_low=-inf, floor_gbs=nan,
                         table=[TimedRow(version="v", kernels=1, values_per_elem=2, ms=nan, gbs=inf, x_copy=inf,
                                         spread=nan, reps=1, rse=inf)],
                         verification=[Verification(rows=1, cols=1, passed=False, total=1, max_abs_error=nan)])
    text = report.model_dump_json()
    data = json.loads(text)
    assert (data["fraction"], data["fraction_low"], data["floor_gbs"]) == ("Infinity", "-Infinity", "NaN")
    assert data["table"][0]["ms"] == "NaN" and data["table"][0]["gbs"] == "Infinity"
    back = GradeReport.model_validate_json(text)
    assert back.fraction == inf and math.isnan(back.table[0].ms) and math.isnan(back.verification[0].max_abs_error)
    row = gb.make_result(id="a", path="a.cu", key="k", sha256=None, report=report, grader_version="t")
    store = gb.ResultStore(tmp_path / "results.jsonl")
    store.append(row)
    store.close()
    rows, bad = gb.load_rows(tmp_path / "results.jsonl")
    assert bad == 0 and rows[0].fraction == inf and rows[0].report.fraction == inf
    book = json.loads(gb.build_gradebook(rows, "t", {}).model_dump_json())
    assert book["rows"][0]["fraction"] == "Infinity"


def test_the_json_schema_accepts_the_non_finite_strings(capsys):
    assert main(["--json-schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    strings = {"type": "string", "enum": ["NaN", "Infinity", "-Infinity"]}

    def floats(node):
        if isinstance(node, dict):
            if node.get("type") == "number":
                yield node
            for value in node.values():
                yield from floats(value)
        elif isinstance(node, list):
            for value in node:
                yield from floats(value)

    def accepts_strings(node):  # every number is one branch of an anyOf that has the strings
        if isinstance(node, dict):
            if any(isinstance(b, dict) and b.get("type") == "number" for b in node.get("anyOf", [])):
                return strings in node["anyOf"]
            if node.get("type") == "number":
                return False
            return all(accepts_strings(v) for v in node.values())
        if isinstance(node, list):
            return all(accepts_strings(v) for v in node)
        return True

    assert list(floats(schema)) and accepts_strings(schema)
    fraction = schema["properties"]["fraction"]["anyOf"]
    assert {"type": "number"} in fraction and strings in fraction
    claim = schema["$defs"]["StudentClaim"]["properties"]["fraction"]
    assert strings in claim["anyOf"]
