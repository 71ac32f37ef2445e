"""The parameter list (grader.source.signature): read from the source text past comments, dead code and macros, and
checked against the compiled kernel's PTX parameter types."""

import re

import pytest

from grader.core.errors import SubmissionError
from grader.exercises.bias_gelu.exercise import EXERCISE as _BG  # noqa: E402
from grader.source.contract import parse_contract as _parse  # noqa: E402
from grader.source.signature import check_params, source_signature

PAGE_CONTRACT = _parse("", "page.cu", _BG)
"""The page's launch: nothing declared."""


def test_source_signature_and_param_check():
    text = "__global__ void __launch_bounds__(256) biasGeluFused(const float* x, const float* b, float* o, int c)"
    written = source_signature(text, "biasGeluFused")
    assert written == ["const float* x", "const float* b", "float* o", "int c"]
    widths = check_params(PAGE_CONTRACT, [("u64", 8)] * 3 + [("u32", 4)], written, "biasGeluFused")
    assert widths == (8, 8, 8, 4)
    with pytest.raises(SubmissionError) as err:
        check_params(PAGE_CONTRACT, [("u64", 8)] * 3 + [("f32", 4)], None, "biasGeluFused")
    assert "expected: biasGeluFused(const float* x" in err.value.details and ".f32" in err.value.details
    with pytest.raises(SubmissionError, match="should be a 32- or 64-bit integer"):
        check_params(PAGE_CONTRACT, [("u64", 8)] * 4, ["const float* x", "const float* b", "float* o", "float* c"],
                     "biasGeluFused")


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
        # a raw string whose delimiter holds a quote (grader.source.lexer) hides the text of a kernel
        ("__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols)" + BODY +
         '\nconst char* doc = R"x"(\n)"";\n__global__ void biasGeluFused(float* o, int n) {}\n)x"";\n',
         ["const float* x", "const float* bias", "float* out", "size_t cols"]),
        ('const char* s = "(("; __global__ void biasGeluFused(const float* x, const float* bias, float* out, '
         'size_t cols = sizeof(")")) {}', ["const float* x", "const float* bias", "float* out",
                                          'size_t cols = sizeof(")")']),
    ],
)
def test_source_signature_reads_past_comments_and_dead_code(source, expected):
    assert source_signature(source, "biasGeluFused") == expected
    check_params(PAGE_CONTRACT, PTX_DEFAULT, source_signature(source, "biasGeluFused"), "biasGeluFused")


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
    check_params(PAGE_CONTRACT, PTX_DEFAULT, None, "biasGeluFused")


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
    assert check_params(PAGE_CONTRACT, PTX_DEFAULT, written, "biasGeluFused") == (8, 8, 8, 8)
    assert check_params(PAGE_CONTRACT, [("u64", 8)] * 3 + [("u32", 4)], written, "biasGeluFused") == (8, 8, 8, 4)


def test_written_list_of_another_length_is_ignored():
    # e.g. a macro expanding to two parameters: the text cannot be matched to PTX, so only PTX is judged
    assert check_params(PAGE_CONTRACT, PTX_DEFAULT, ["PTRS", "float* out", "size_t cols"], "biasGeluFused")
    with pytest.raises(SubmissionError) as err:
        check_params(PAGE_CONTRACT, [("u64", 8)] * 3 + [("f32", 4)], ["PTRS", "float* out", "float cols"],
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
        check_params(PAGE_CONTRACT, PTX_DEFAULT, written, "biasGeluFused")


def test_float_typed_integer_is_refused_by_ptx_or_text():
    with pytest.raises(SubmissionError, match="should be a 32- or 64-bit integer"):
        check_params(PAGE_CONTRACT, [("u64", 8)] * 3 + [("f64", 8)], ["cfp x", "cfp b", "fp o", "real cols"], "k")
    with pytest.raises(SubmissionError, match="floating-point"):  # the text names the type; PTX alone allows
        check_params(PAGE_CONTRACT, PTX_DEFAULT, ["cfp x", "cfp b", "fp o", "double cols"], "k")


