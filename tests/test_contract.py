"""The `// grade:` block (grader.source.contract): defaults, declarations, lookalikes, the student's row and claim,
and the launch the contract gives (grader.core.launch)."""

import re

import numpy as np
import pytest

from grader.core import exercise as course
from grader.core.errors import GraderFault, InputError, SubmissionError
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.exercises.bias_gelu.exercise import EXERCISE as _BG  # noqa: E402
from grader.source.claims import parse_claim, parse_row
from grader.source.contract import Contract, parse_contract
from grader.source.contract import parse_contract as _parse  # noqa: E402

PAGE_CONTRACT = _parse("", "page.cu", _BG)
"""The page's launch: nothing declared."""


def plan(c: Contract, rows: int, cols: int, sms: int, threads_per_sm: int):
    """The grid and block of the submission's launch under `c` (widths: every integer 64-bit)."""
    spec = c.launch_spec((8,) * len(c.params))
    return spec.grid_for(rows, cols, sms * threads_per_sm), spec.block_dims()


def test_defaults_are_the_pages_launch():
    c = parse_contract("__global__ void biasGeluFused() {}", "s.cu", BIAS_GELU)
    assert c.params == ("x", "bias", "out", "cols")
    assert plan(c, 101, 97, 132, 2048) == ((1, 101, 1), (256, 1, 1))


def test_declared_launches():
    c = parse_contract("// grade: params = x, bias, out, n, cols\n// grade: grid = flat\n"
                       "// grade: block = 128\n// grade: elems_per_thread = 4\n", "s.cu", BIAS_GELU)
    assert plan(c, 101, 97, 132, 2048)[0] == (-(-101 * 97 // 512), 1, 1)
    s = parse_contract("// grade: params = x, bias, out, rows, cols\n// grade: grid = stride 264\n", "s.cu", BIAS_GELU)
    assert plan(s, 101, 97, 132, 2048)[0] == (264, 1, 1)
    d = parse_contract("// grade: params = x, bias, out, rows, cols\n// grade: grid = stride\n", "s.cu", BIAS_GELU)
    assert plan(d, 101, 97, 132, 2048)[0] == (132 * 2048 // 256, 1, 1)


@pytest.mark.parametrize(
    "block, words",
    [
        ("// grade: blok = 256", "cannot read"),
        ("// grade: block = 100", "multiple of 32"),
        ("// grade: block = 2048", "outside"),
        ("// grade: grid = diagonal", "row"),
        ("// grade: params = x, bias, out, cols, k", "unknown name"),
        ("// grade: params = x, out, cols", "missing bias"),
        ("// grade: params = x, bias, out, n", "include cols"),
        ("// grade: params = x, bias, out, cols\n// grade: grid = flat", "flat grid needs rows or n"),
        ("// grade: block = 128\n// grade: block = 256", "twice"),
    ],
)
def test_malformed_blocks_are_input_errors_naming_the_line(block, words):
    with pytest.raises(InputError, match=words):
        parse_contract(block + "\n", "s.cu", BIAS_GELU)


def test_row_grid_over_gridDim_y_limit_is_refused():
    with pytest.raises(SubmissionError, match="65535"):
        plan(PAGE_CONTRACT, course.MAX_GRID_Y + 1, 4, 132, 2048)


def test_student_row_and_claim():
    r = parse_row("biasGeluFused | 1 | 2 | 0.5232 | 4105.2")
    assert (r.version, r.kernels, r.floats_per_elem, r.ms, r.gbs, r.problem) == (
        "biasGeluFused", 1, 2, 0.5232, 4105.2, None)
    r = parse_row("bias gelu fused 1 3 0.71 286.9 1.17")
    assert r.version == "bias gelu fused" and r.floats_per_elem == 3 and r.x_copy == 1.17
    bad = parse_row("biasGeluFused | one | 2 | fast | 4105")
    assert bad.kernels is None and bad.ms is None and "kernels" in bad.problem
    assert "expected 5 fields" in parse_row("just words").problem
    assert parse_claim("It reached 93% of 244.7 GB/s").fraction == pytest.approx(0.93)
    assert parse_claim("It reached 0.97 of the floor, capped at 1 because ...").fraction == 0.97
    assert parse_claim("It is fast.").fraction is None


def test_launch_values_use_the_kernels_own_widths():
    c = Contract(params=("x", "bias", "out", "rows", "cols", "n"), grid="flat")
    spec = c.launch_spec((8, 8, 8, 4, 8, 4))
    args = spec.args(c.launch_values({"x": 16, "bias": 32, "out": 48}, BIAS_GELU.problem((101, 97))))
    assert [type(a) for a in args] == [np.uint64] * 3 + [np.int32, np.uint64, np.int32]
    assert int(args[5]) == 101 * 97
    # the grader never passes an integer over INT32_LIMIT: a problem that would is its own fault, before any launch
    with pytest.raises(GraderFault, match="INT32_LIMIT"):
        c.launch_values({"x": 16, "bias": 32, "out": 48}, BIAS_GELU.problem((65535, 65535)))
    with pytest.raises(SubmissionError, match="32-bit"):  # and a launch refuses to truncate one all the same
        spec.args({"x": 16, "bias": 32, "out": 48, "rows": 65535, "cols": 65535, "n": 65535 * 65535})


# --- `// grade:` lookalikes ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line, words",
    [
        ("// Grade: params = x, bias, out, rows, cols", "lowercase"),
        ("// GRADE: grid = flat", "lowercase"),
        ("// grade : grid = flat", "colon must follow"),
        ("// grade params = x, bias, out, rows, cols", "followed by a colon"),
        ("// grade grid=flat", "followed by a colon"),
        ("/// grade: grid = flat", "exactly two slashes"),
        ("//! grade: grid = flat", "exactly two slashes"),
        ("/* grade: grid = flat */", "block comment"),
        ("/** grade: grid = flat */", "block comment"),
        (" * grade: grid = flat", "block comment"),
        ("//\u00a0grade: grid = flat", "non-breaking space"),
        ("\u00a0// grade: grid = flat", "non-breaking space"),
        ("int k = 0; // grade: block = 128", "own line"),
    ],
)
def test_grade_lookalikes_are_input_errors(line, words):
    text = f"// grade: params = x, bias, out, rows, cols\n{line}\n__global__ void biasGeluFused() {{}}\n"
    with pytest.raises(InputError, match=re.escape(words)) as err:
        parse_contract(text, "s.cu", BIAS_GELU)
    assert str(err.value).startswith("s.cu:2: ") and "// grade: KEY = VALUE" in str(err.value)


@pytest.mark.parametrize(
    "line",
    [
        "// grade this later",
        "// TODO: grade the tail separately",
        "// grades: see README",
        "// upgrade: use float4",
        "/* grade block size was tuned by hand */",
        "// Grade it yourself",
        "// see http://grade:8080/ for the scoreboard",
        "//grade: grid = flat",  # the exact form, no space: read, not flagged
        "  \t// grade:\tgrid = flat",
    ],
)
def test_prose_and_exact_forms_are_not_flagged(line):
    c = parse_contract(f"// grade: params = x, bias, out, rows, cols\n{line}\n", "s.cu", BIAS_GELU)
    assert c.params == ("x", "bias", "out", "rows", "cols")


def test_bom_and_crlf_keep_the_first_line_readable():
    c = parse_contract("\ufeff// grade: params = x, bias, out, rows, cols\r\n// grade: grid = flat\r\n", "s.cu",
                       BIAS_GELU)
    assert c.grid == "flat"


# --- the `// grade:` block read with grader.source.lexer's tokens -----------------------------------------------------

def test_grade_line_inside_a_raw_string_declares_nothing():
    # the text of the program, not a comment: NVRTC compiles it as a string (its delimiter holds a quote)
    text = ('const char *doc = R"x"(\n// grade: grid = flat\n// grade: block = 128\n)x"";\n'
            "__global__ void biasGeluFused() {}\n")
    c = parse_contract(text, "s.cu", BIAS_GELU)
    assert c.declared == () and c.grid == PAGE_CONTRACT.grid and c.block == PAGE_CONTRACT.block


def test_grade_line_inside_a_block_comment_is_refused_with_its_line():
    # a student who comments a declaration out with /* */ must not have it read, nor silently dropped
    text = "/*\n// grade: grid = flat\n*/\n__global__ void biasGeluFused() {}\n"
    with pytest.raises(InputError, match=r"^s\.cu:2: .*inside a /\* \*/ block comment"):
        parse_contract(text, "s.cu", BIAS_GELU)


def test_grade_line_after_a_closed_block_comment_is_read():
    text = "/* the launch:\n   row grid */\n// grade: block = 128\n__global__ void biasGeluFused() {}\n"
    assert parse_contract(text, "s.cu", BIAS_GELU).block == 128
