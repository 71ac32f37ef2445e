"""The `// grade:` block: defaults, declarations, the student's row and claim, launch plans, parameter checks."""

import re

import numpy as np
import pytest

from grader import exercise
from grader.contract import Contract, kernel_args, parse_claim, parse_contract, parse_row, plan_launch
from grader.signature import check_params, source_signature
from grader.errors import InputError, SubmissionError


def test_defaults_are_the_pages_launch():
    c = parse_contract("__global__ void biasGeluFused() {}", "s.cu")
    assert c.params == ("x", "bias", "out", "cols")
    plan = plan_launch(c, 101, 97, 132, 2048)
    assert plan.grid == (1, 101, 1) and plan.block == (256, 1, 1)


def test_declared_launches():
    c = parse_contract("// grade: params = x, bias, out, n, cols\n// grade: grid = flat\n"
                       "// grade: block = 128\n// grade: elems_per_thread = 4\n", "s.cu")
    assert plan_launch(c, 101, 97, 132, 2048).grid == (-(-101 * 97 // 512), 1, 1)
    s = parse_contract("// grade: params = x, bias, out, rows, cols\n// grade: grid = stride 264\n", "s.cu")
    assert plan_launch(s, 101, 97, 132, 2048).grid == (264, 1, 1)
    d = parse_contract("// grade: params = x, bias, out, rows, cols\n// grade: grid = stride\n", "s.cu")
    assert plan_launch(d, 101, 97, 132, 2048).grid == (132 * 2048 // 256, 1, 1)


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
        parse_contract(block + "\n", "s.cu")


def test_row_grid_over_gridDim_y_limit_is_refused():
    with pytest.raises(InputError, match="65535"):
        plan_launch(Contract(), exercise.MAX_GRID_Y + 1, 4, 132, 2048)


def test_student_row_and_claim():
    r = parse_row("biasGeluFused | 1 | 2 | 0.5232 | 4105.2")
    assert (r.version, r.kernels, r.floats_per_elem, r.ms, r.gbs, r.problem) == ("biasGeluFused", 1, 2, 0.5232, 4105.2, None)
    r = parse_row("bias gelu fused 1 3 0.71 286.9 1.17")
    assert r.version == "bias gelu fused" and r.floats_per_elem == 3 and r.x_copy == 1.17
    bad = parse_row("biasGeluFused | one | 2 | fast | 4105")
    assert bad.kernels is None and bad.ms is None and "kernels" in bad.problem
    assert "expected 5 fields" in parse_row("just words").problem
    assert parse_claim("It reached 93% of 244.7 GB/s").fraction == pytest.approx(0.93)
    assert parse_claim("It reached 0.97 of the floor, capped at 1 because ...").fraction == 0.97
    assert parse_claim("It is fast.").fraction is None


def test_source_signature_and_param_check():
    text = "__global__ void __launch_bounds__(256) biasGeluFused(const float* x, const float* b, float* o, int c)"
    written = source_signature(text, "biasGeluFused")
    assert written == ["const float* x", "const float* b", "float* o", "int c"]
    widths = check_params(Contract(), [("u64", 8)] * 3 + [("u32", 4)], written, "biasGeluFused")
    assert widths == (8, 8, 8, 4)
    with pytest.raises(SubmissionError) as err:
        check_params(Contract(), [("u64", 8)] * 3 + [("f32", 4)], None, "biasGeluFused")
    assert "expected: biasGeluFused(const float* x" in err.value.details and ".f32" in err.value.details
    with pytest.raises(SubmissionError, match="should be a 32- or 64-bit integer"):
        check_params(Contract(), [("u64", 8)] * 4, ["const float* x", "const float* b", "float* o", "float* c"],
                     "biasGeluFused")


def test_kernel_args_use_the_kernels_own_widths():
    c = Contract(params=("x", "bias", "out", "rows", "cols", "n"), grid="flat")
    args = kernel_args(c, (8, 8, 8, 4, 8, 4), {"x": 16, "bias": 32, "out": 48}, 101, 97)
    assert [type(a) for a in args] == [np.uint64] * 3 + [np.int32, np.uint64, np.int32]
    assert int(args[5]) == 101 * 97
    with pytest.raises(InputError, match="32-bit"):
        kernel_args(c, (8, 8, 8, 4, 8, 4), {"x": 16, "bias": 32, "out": 48}, 65535, 65535)


# --- parameter lists read from the text: comments, #if 0, macros, typedefs, names ---------------------------

PTX_DEFAULT = [("u64", 8)] * 3 + [("u64", 8)]
BODY = "{ }"


@pytest.mark.parametrize(
    "source, expected",
    [
        ("__global__ void biasGeluFused(const float* x, // input\n const float* bias, // per-column bias, length cols\n"
         " float* out, // output\n size_t cols) " + BODY,
         ["const float* x", "const float* bias", "float* out", "size_t cols"]),
        ("__global__ void biasGeluFused(const float* x /* in, row-major */, const float* bias, float* out, "
         "size_t cols)" + BODY, ["const float* x", "const float* bias", "float* out", "size_t cols"]),
        ("// old: __global__ void biasGeluFused(float* out, int n)\n"
         "__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols)" + BODY,
         ["const float* x", "const float* bias", "float* out", "size_t cols"]),
        ("/* __global__ void biasGeluFused(float* out, int n) {} */\n"
         "__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols)" + BODY,
         ["const float* x", "const float* bias", "float* out", "size_t cols"]),
        ("#if 0\n__global__ void biasGeluFused(float* o, int n) {}\n#endif\n"
         "__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols)" + BODY,
         ["const float* x", "const float* bias", "float* out", "size_t cols"]),
        ("#if 1\n__global__ void biasGeluFused(const float* x, const float* bias, float* out, int cols) {}\n#else\n"
         "__global__ void biasGeluFused(float* o, int n) {}\n#endif\n",
         ["const float* x", "const float* bias", "float* out", "int cols"]),
        ('const char* s = "/* not a comment"; char q = \'"\'; int k = 1\'000;\n'
         "__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols)" + BODY,
         ["const float* x", "const float* bias", "float* out", "size_t cols"]),
        ("__global__ void __launch_bounds__((256), (2)) biasGeluFused(const float* x, const float* bias, "
         "float* out, size_t cols)" + BODY, ["const float* x", "const float* bias", "float* out", "size_t cols"]),
        ("void __global__ biasGeluFused(const float* x, const float* bias, float* out, size_t cols = 4)" + BODY,
         ["const float* x", "const float* bias", "float* out", "size_t cols = 4"]),
        ("__global__ void biasGeluFused(const float*, const float*, float*, size_t);\n"
         "__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols)" + BODY,
         ["const float* x", "const float* bias", "float* out", "size_t cols"]),
    ],
)
def test_source_signature_reads_past_comments_and_dead_code(source, expected):
    assert source_signature(source, "biasGeluFused") == expected
    check_params(Contract(), PTX_DEFAULT, source_signature(source, "biasGeluFused"), "biasGeluFused")


@pytest.mark.parametrize(
    "source",
    [
        "#define KARGS const float* x, const float* bias, float* out, size_t cols\n"
        "__global__ void biasGeluFused(KARGS)" + BODY,
        "#define NAME biasGeluFused\n__global__ void NAME(const float* x, const float* bias, float* out, size_t c) {}",
        "#ifdef OLD\n__global__ void biasGeluFused(int n, const float* x, const float* bias, float* out) {}\n#else\n"
        "__global__ void biasGeluFused(const float* x, const float* bias, float* out, int cols) {}\n#endif\n",
        "void host() { biasGeluFused<<<1, 1>>>(x, bias, out, cols); }",
    ],
)
def test_source_signature_gives_up_on_macros_and_ambiguity(source):
    assert source_signature(source, "biasGeluFused") is None
    check_params(Contract(), PTX_DEFAULT, None, "biasGeluFused")


@pytest.mark.parametrize(
    "params",
    [
        "cfp x, cfp bias, fp out, size_t cols",  # typedef'd pointers: only PTX judges them
        "const float* x, const float* bias, float* out, size_t nfloats",  # 'float' inside a name
        "const float* x, const float* bias, float* out, int half",
        "const float x[], const float bias[], float out[], unsigned long long cols",
        "const float4* x, const float* __restrict__ bias, float* const out, const std::size_t cols",
        "const float* x, const float* bias, float* out, IDX cols",  # macro or typedef for the integer
    ],
)
def test_correct_kernels_are_never_refused_by_their_text(params):
    written = source_signature(f"__global__ void biasGeluFused({params}) {{}}", "biasGeluFused")
    assert written is not None and len(written) == 4
    assert check_params(Contract(), PTX_DEFAULT, written, "biasGeluFused") == (8, 8, 8, 8)
    assert check_params(Contract(), [("u64", 8)] * 3 + [("u32", 4)], written, "biasGeluFused") == (8, 8, 8, 4)


def test_written_list_of_another_length_is_ignored():
    # e.g. a macro expanding to two parameters: the text cannot be matched to PTX, so only PTX is judged
    assert check_params(Contract(), PTX_DEFAULT, ["PTRS", "float* out", "size_t cols"], "biasGeluFused")
    with pytest.raises(SubmissionError) as err:
        check_params(Contract(), [("u64", 8)] * 3 + [("f32", 4)], ["PTRS", "float* out", "float cols"],
                     "biasGeluFused")
    assert "kernel:   biasGeluFused(.u64 (8 bytes)" in err.value.details


@pytest.mark.parametrize(
    "params, words",
    [
        ("size_t cols, const float* x, const float* bias, float* out", "parameter 1 (size_t cols) should be a float"),
        ("const float* x, const float* bias, float* out, float* cols", "parameter 4 (float* cols) should be a 32-"),
        ("const float* x, const float* bias, float* out, const size_t& cols", "reference"),
        ("const float* x, const float* bias, float* out, size_t (*cols)(void)", "written as a pointer"),
        ("const double* x, const double* bias, double* out, size_t cols", "points to double"),
    ],
)
def test_clear_text_evidence_still_refuses(params, words):
    written = source_signature(f"__global__ void biasGeluFused({params}) {{}}", "biasGeluFused")
    with pytest.raises(SubmissionError, match=re.escape(words)):
        check_params(Contract(), PTX_DEFAULT, written, "biasGeluFused")


def test_float_typed_integer_is_refused_by_ptx_or_text():
    with pytest.raises(SubmissionError, match="should be a 32- or 64-bit integer"):
        check_params(Contract(), [("u64", 8)] * 3 + [("f64", 8)], ["cfp x", "cfp b", "fp o", "real cols"], "k")
    with pytest.raises(SubmissionError, match="floating-point"):  # the text names the type; PTX alone allows
        check_params(Contract(), PTX_DEFAULT, ["cfp x", "cfp b", "fp o", "double cols"], "k")


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
        parse_contract(text, "s.cu")
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
    c = parse_contract(f"// grade: params = x, bias, out, rows, cols\n{line}\n", "s.cu")
    assert c.params == ("x", "bias", "out", "rows", "cols")


def test_bom_and_crlf_keep_the_first_line_readable():
    c = parse_contract("\ufeff// grade: params = x, bias, out, rows, cols\r\n// grade: grid = flat\r\n", "s.cu")
    assert c.grid == "flat"
