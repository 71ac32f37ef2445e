"""A whole program is a valid submission (grader.source.program): the corpus of tests/data/programs/ read and compiled
on the CPU, the kept and ignored names, the refusals, diagnostics at the student's lines, a kernel-only file
unchanged byte for byte, the new path's leak cases, and bounded time on hostile input.

tests/data/programs/ holds realistic programs, each with a first-line comment saying what it is and what the
grader must do with it. elementwise.cu (the page's program with the student's kernel) and
elementwise_kernel_only.cu (the same kernel alone) are twins: the same cubin here, the same verdict on a GPU.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import assert_linear
from grader.compile.nvrtc import compile_kernels
from grader.core.errors import SubmissionError
from grader.exercises import bias_gelu as exercise
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.source.includes import scan
from grader.source.prelude import prelude
from grader.source.program import LINE_PLACEHOLDER, PROGRAM_INCLUDES, Extracted, Part, extract
from grader.source.read import prepare, prepare_for_nvrtc, read_submission
from grader.source.signature import source_signature

DATA = Path(__file__).parent / "data"
PROGRAMS = DATA / "programs"
ROOT = Path(__file__).resolve().parent.parent
KERNEL = exercise.KERNEL_NAME
ROW_SIGNATURE = ["const float* __restrict__ x", "const float* __restrict__ bias", "float* __restrict__ out",
                 "size_t cols"]
PLAIN_SIGNATURE = ["const float* x", "const float* bias", "float* out", "size_t cols"]
K = "__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {{ {} }}\n"
MAIN = "int main() { return 0; }\n"

PAGE_IGNORED = ("CUDA_CHECK", "kGeluA", "kGeluB", "kRows", "kCols", "kBatch", "kSeq", "kHeads", "kHeadDim", "kBlock",
                "kReps", "geluTanh", "ropeInterleaved", "ropeInterleavedVec2", "ropeHalfSplit", "addBiasRow",
                "applyGeluErf", "addResidual", "biasGeluResidualFused", "copyFloor", "geluErfRef", "geluTanhRef",
                "Buffers", "fillUniform", "checkClose", "timeIt", "printRow", "main")
# name -> (kept, ignored, parameter list as written); None: not a whole program
ACCEPTED = {
    "elementwise.cu": (("kInvSqrt2", "geluErf"), PAGE_IGNORED, ROW_SIGNATURE),
    "elementwise_after_main.cu": (("kInvSqrt2", "geluErf"), PAGE_IGNORED, ROW_SIGNATURE),
    "elementwise_kernel_only.cu": (None, None, ROW_SIGNATURE),
    "after_main.cu": (("kInvSqrt2", "geluErf"), ("addResidual", "copyFloor", "geluRef", "checkRows", "main"),
                      ROW_SIGNATURE),
    "host_device_helper.cu": (("kInvSqrt2", "geluErf"), ("maxError", "main"), ROW_SIGNATURE),
    "macros_both_sides.cu": (("BLOCK", "INV_SQRT2", "GELU_ERF", "IDX"), ("CUDA_CHECK", "ceilDiv", "hostGelu", "main"),
                             ROW_SIGNATURE[:3] + ["int rows", "int cols"]),
    "crlf_visual_studio.cu": (("geluErf",), ("launchBiasGelu", "main"), PLAIN_SIGNATURE),
    "namespace_helpers.cu": (("kInvSqrt2", "erfForm", "columnOf"),
                             ("tanhForm", "referenceErf", "Launch", "hostSettings", "c_unused", "main"), ROW_SIGNATURE),
    "if_alternatives.cu": (("geluErf",), ("main",), PLAIN_SIGNATURE),
    "helper_math_style.cu": (("operator*", "operator+=", "geluErf", "gelu4"),
                             ("gRuns", "copyFloor", "checkAll", "main"), ROW_SIGNATURE),
}
# name -> (line, what the message says)
REFUSED = {
    "refuse_host_call.cu": (11, "`biasGeluFused` calls `gelu`, a host function (line 7)"),
    "refuse_host_variable.cu": (11, "`biasGeluFused` reads `g_scale`, a host variable (line 5)"),
    "refuse_template.cu": (7, "`biasGeluFused` is a template"),
    "refuse_namespace.cu": (8, "`biasGeluFused` is inside `namespace student { }`"),
    "refuse_twice.cu": (13, "`biasGeluFused` is defined twice (lines 7 and 13)"),
    "refuse_own_header.cu": (4, "refused `#include`"),
}


def today(text: str, name: str) -> str:
    """What grader.source.read compiled before whole programs were accepted: the prelude, `#line 1`, and the text
    with its allowed includes blanked."""
    result = scan(text)
    assert result.refusal is None
    return f'{prelude(extract(text, name, KERNEL).headers)}#line 1 "{name}"\n{result.normalized}'


def compile_sub(text: str, name: str):
    return compile_kernels(text, name, (KERNEL,), "sm_90")


def test_every_corpus_file_says_what_it_is_and_has_an_expectation():
    files = sorted(p.name for p in PROGRAMS.glob("*.cu"))
    assert files == sorted([*ACCEPTED, *REFUSED])
    for name in files:
        first = (PROGRAMS / name).read_bytes().split(b"\n", 1)[0].decode()
        assert first.startswith("// ") and "Expected:" in first, name


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_corpus_program_is_read_and_compiled_on_the_cpu(name):
    kept, ignored, signature = ACCEPTED[name]
    sub = read_submission(PROGRAMS / name, BIAS_GELU)
    compiled = compile_sub(sub.compile_text, sub.name)
    info = compiled.kernels[KERNEL]
    assert len(info.params) == len(sub.contract.params)
    assert source_signature(sub.text, KERNEL) == signature
    if kept is None:
        assert sub.program is None
        assert sub.compile_text == today(sub.text, sub.name)
        return
    assert isinstance(sub.program, Extracted) and sub.program.whole_program
    assert sub.program.kept == kept
    assert sub.program.ignored == ignored
    assert not compiled.warnings
    # every piece carries its own line: no line of the compiled text is out of place
    assert sub.compile_text.startswith(prelude(sub.program.headers) + "#line ")


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_corpus_refusal_says_what_to_change(name):
    line, says = REFUSED[name]
    with pytest.raises(SubmissionError) as err:
        read_submission(PROGRAMS / name, BIAS_GELU)
    assert err.value.stage == "source"
    assert str(err.value).startswith(f"{name}:{line}: ")
    assert says in str(err.value)


def test_the_twins_compile_to_the_same_cubin():
    program = read_submission(PROGRAMS / "elementwise.cu", BIAS_GELU)
    alone = read_submission(PROGRAMS / "elementwise_kernel_only.cu", BIAS_GELU)
    assert program.program is not None and alone.program is None
    assert program.contract == alone.contract
    assert source_signature(program.text, KERNEL) == source_signature(alone.text, KERNEL)
    a, b = compile_sub(program.compile_text, program.name), compile_sub(alone.compile_text, alone.name)
    assert a.ptx == b.ptx and a.cubin == b.cubin
    assert a.kernels[KERNEL].params == b.kernels[KERNEL].params


def test_the_report_summary_and_parts():
    sub = read_submission(PROGRAMS / "elementwise.cu", BIAS_GELU)
    ex = sub.program
    assert ex.summary() == ("graded biasGeluFused from your program; kept kInvSqrt2, geluErf; ignored main and 15 "
                            "other functions, 10 variables, 1 macro, 1 type")
    assert ex.kernel == KERNEL and ex.kernel_line == 164
    assert ex.headers == ("cstdio", "cstdlib", "cmath", "vector", "random", "algorithm", "cuda_runtime.h")
    parts = {p.name: p for p in ex.parts}
    assert parts["geluErf"] == Part("geluErf", "function", 44, True)
    assert parts["kInvSqrt2"] == Part("kInvSqrt2", "variable", 31, True)
    assert parts["main"] == Part("main", "function", 252, False)
    assert parts["copyFloor"].kind == "kernel" and parts["CUDA_CHECK"].kind == "macro"
    assert parts["Buffers"].kind == "type"
    assert KERNEL not in parts
    assert Extracted("", (), (), False, KERNEL).summary() == ""


# --- a file that is not a whole program is compiled as before --------------------------------------------
KERNEL_ONLY = sorted([*(ROOT / "submissions").glob("*.cu"), *(DATA / "hints").glob("*.cu"),
                      *(DATA / "exploits").glob("*.cu"), *(DATA / "silver").glob("*.cu"),
                      PROGRAMS / "elementwise_kernel_only.cu"])


@pytest.mark.parametrize("path", KERNEL_ONLY, ids=lambda p: p.name)
def test_a_kernel_only_file_gives_byte_identical_compile_text(path):
    text = path.read_bytes().decode()
    compile_text, program = prepare(text, path.name, KERNEL)
    assert program is None
    assert compile_text == today(text, path.name)
    assert prepare_for_nvrtc(text, path.name, KERNEL) == compile_text


@pytest.mark.parametrize("text", [
    "__host__ __device__ float g(float v) { return v; }\n",  # device code too: not host code
    "#if 0\nint main() { return 0; }\n#endif\n",  # host code NVRTC never sees
    "__global__ void other(float* p) {}\nconstexpr int kN = 4;\n",
    "#include <cmath>\n#include <cuda_runtime.h>\nstruct S { __device__ float f() const { return 1; } };\n",
    "{ unbalanced\n",  # cannot be split: compiled as before, NVRTC says what is wrong
])
def test_device_code_alone_is_not_a_whole_program(text):
    full = text + "__global__ void biasGeluFused(const float* x, const float* b, float* o, size_t c) {}\n"
    assert extract(full, "s.cu", KERNEL).whole_program is False
    assert prepare(full, "s.cu", KERNEL) == (today(full, "s.cu"), None)


@pytest.mark.parametrize("text", [
    "int main() { return 0; }\n",
    "#include <vector>\n",  # a host header alone makes a program (the header is blanked, never read)
    "static double reference(double v) { return v; }\n",
    "__host__ void setup() {}\n",
])
def test_host_code_makes_a_whole_program(text):
    full = text + "__global__ void biasGeluFused(const float* x, const float* b, float* o, size_t c) {}\n"
    ex = extract(full, "s.cu", KERNEL)
    assert ex.whole_program
    compile_sub(prelude(ex.headers) + ex.text, "s.cu")


def test_every_program_header_is_blanked_and_others_stay_refused():
    body = "".join(f"#include <{h}>\n" for h in sorted(PROGRAM_INCLUDES)) + "int main() { return 0; }\n" + \
        "__global__ void biasGeluFused(const float* x, const float* b, float* o, size_t c) {}\n"
    ex = extract(body, "s.cu", KERNEL)
    assert set(ex.headers) == PROGRAM_INCLUDES and "include" not in ex.text
    for refused in ('#include "helpers.cuh"', "#include <cuda_fp16.h>", "#include <cooperative_groups.h>",
                    "#include <thrust/device_vector.h>", "#include </etc/passwd>"):
        with pytest.raises(SubmissionError, match="refused `#include`") as err:
            extract("#include <vector>\n" + refused + "\n" + body, "s.cu", KERNEL)
        assert str(err.value).startswith("s.cu:2: ")


def test_a_refusal_in_a_kernel_only_file_reads_as_before():
    text = '#include "/etc/passwd"\n' + K.format("")
    line, token, why = scan(text).refusal
    with pytest.raises(SubmissionError) as err:
        prepare_for_nvrtc(text, "s.cu", KERNEL)
    assert str(err.value) == f"s.cu:{line}: refused `{token}`: {why}"


# --- diagnostics keep the student's lines --------------------------------------------------------------
ERROR_PROGRAM = """#include <cstdio>
#include <cuda_runtime.h>

int main() {
    printf("%d\\n", 1);
    return 0;
}

__device__ float geluErf(float v) {
    return 0.5f * v * (1.0f + erff(v * 0.70710678f)) +;
}

static void unused() {}

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    const size_t col = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (col < cols) out[blockIdx.y * cols + col] = geluErf(x[blockIdx.y * cols + col] + bias[col]) + undefinedName;
}
"""


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_an_error_in_a_kept_helper_names_its_line_in_the_file(tmp_path, newline):
    path = tmp_path / "p.cu"
    path.write_bytes(ERROR_PROGRAM.replace("\n", newline).encode())
    sub = read_submission(path, BIAS_GELU)
    assert sub.program.kept == ("geluErf",) and sub.program.ignored == ("main", "unused")
    with pytest.raises(SubmissionError) as err:
        compile_sub(sub.compile_text, sub.name)
    assert "p.cu:10: error: expected an expression" in err.value.details
    assert 'p.cu:17: error: identifier "undefinedName" is undefined' in err.value.details


def test_crlf_program_reads_as_its_lf_twin(tmp_path):
    lf = (PROGRAMS / "elementwise.cu").read_bytes()
    path = tmp_path / "elementwise.cu"
    path.write_bytes(lf.replace(b"\n", b"\r\n"))
    crlf_sub, lf_sub = read_submission(path, BIAS_GELU), read_submission(PROGRAMS / "elementwise.cu", BIAS_GELU)
    assert crlf_sub.compile_text == lf_sub.compile_text and crlf_sub.program == lf_sub.program
    assert crlf_sub.contract == lf_sub.contract and crlf_sub.sha256 != lf_sub.sha256
    vs = read_submission(PROGRAMS / "crlf_visual_studio.cu", BIAS_GELU)
    assert b"\r\n" in (PROGRAMS / "crlf_visual_studio.cu").read_bytes() and "\r" not in vs.compile_text


# --- what is kept -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("before, body, kept", [
    ("struct Vals { float a; };\n__device__ Vals mk(float v) { return {v}; }\n", "out[0] = mk(x[0]).a;",
     ("Vals", "mk")),
    ("typedef struct Tag { float s; } Pair, *PairPtr;\ntypedef void (*fn_t)(int);\n",
     "Pair p; PairPtr q = &p; fn_t f = 0; out[0] = q->s;", ("Tag", "Pair", "PairPtr", "fn_t")),
    ("template <typename T> __device__ T sq(T v) { return v * v; }\n", "out[0] = sq<float>(x[0]);", ("sq",)),
    ("enum Mode { kFast = 2, kSlow };\nusing real = float;\n", "real v = kFast; out[0] = v;",
     ("Mode", "kFast", "kSlow", "real")),
    ("__constant__ float c_scale[1];\nconst float kHalf = 0.5f;\n", "out[0] = c_scale[0] * kHalf;",
     ("c_scale", "kHalf")),
    ("#define DEVICE __device__ __forceinline__\nDEVICE float g(float v) { return v; }\n", "out[0] = g(x[0]);",
     ("DEVICE", "g")),
    ("__device__ float4 operator+(float4 a, float4 b) { return make_float4(a.x + b.x, 0, 0, 0); }\n"
     "float4 operator*(float4 a, float s);\n", "float4 a = make_float4(x[0], 0, 0, 0); out[0] = (a + a).x;",
     ("operator+",)),
    ("double gelu(double v) { return v; }\n__device__ float gelu(float v) { return v; }\n",
     "out[0] = gelu(x[0]);", ("gelu",)),  # the device overload kept, the host one left out
    ("float hostOnly(float v) { return v; }\n__host__ __device__ float hd(float v) {\n#ifdef __CUDA_ARCH__\n"
     "  return v;\n#else\n  return hostOnly(v);\n#endif\n}\n", "out[0] = hd(x[0]);", ("hd",)),
    ("int n = 5;\nfloat scale = 2;\nfloat f(float v) { return v; }\n__device__ float apply(float f, float v) "
     "{ return f * v; }\n", "const size_t n = cols; float scale = 1.0f; out[0] = apply(scale, x[0]) + n;",
     ("apply",)),  # locals and parameters named like host code are not host code
    ("#ifndef BLOCK\n#define BLOCK 256\n#endif\n#undef LATER\n#define LATER 1\n",
     "out[0] = BLOCK + LATER;", ("BLOCK", "LATER")),  # the #undef of a kept macro is kept too
    ('extern "C" {\n__device__ float g(float v) { return v; }\nint helper() { return 1; }\n}\n', "out[0] = g(1);",
     ("g",)),
    ("namespace detail {\n__device__ float g(float v) { return v; }\nvoid host() {}\n}\nusing namespace detail;\n",
     "out[0] = g(1);", ("g",)),
])
def test_the_device_code_the_kernel_uses_is_kept_and_compiles(before, body, kept):
    ex = extract("#include <cstdio>\n" + before + K.format(body) + MAIN, "s.cu", KERNEL)
    assert ex.kept == kept
    assert "main" in ex.ignored
    if "#undef" in before:
        assert "#undef LATER" in ex.text
    compile_sub(prelude(ex.headers) + ex.text, "s.cu")


def test_a_macro_defined_inside_left_out_code_is_kept_alone():
    text = ("#include <cstdio>\n__global__ void biasGeluFused(const float* x, const float* b, float* o, size_t c);\n"
            "int main() {\n#define SCALE 2.0f\n  return 0;\n}\n" + K.format("out[0] = SCALE * x[0];"))
    ex = extract(text, "s.cu", KERNEL)
    assert ex.kept == ("SCALE",) and ex.ignored == ("main",)
    assert '#line 4 "s.cu"\n#define SCALE 2.0f\n' in ex.text
    compile_sub(prelude(ex.headers) + ex.text, "s.cu")


def test_empty_conditional_groups_and_if0_code_are_left_out():
    text = ("#include <cstdio>\n#if 0\nint old() { return 1; }\n#endif\n"
            "#ifdef _WIN32\n#define EXPORT __declspec(dllexport)\n"
            "#else\n#define EXPORT\n#endif\n#ifndef __CUDACC__\n#error build with nvcc\n#endif\n"
            "#pragma unroll\n" + K.format("out[0] = x[0];") + MAIN)
    ex = extract(text, "s.cu", KERNEL)
    assert ex.kept == () and "EXPORT" in ex.ignored and "old" not in ex.ignored
    assert "#if" not in ex.text and "#error" not in ex.text and "#pragma unroll" in ex.text


def test_a_student_placeholder_pragma_stays_a_pragma():
    text = "#include <cstdio>\n__device__ float g(float v) {\n#pragma grader_line\n  return v;\n}\n" + \
        K.format("out[0] = g(x[0]);") + MAIN
    ex = extract(text, "s.cu", KERNEL)
    assert f"{LINE_PLACEHOLDER}\n  return v;" in ex.text
    assert ex.text.count("#line ") == 1


@pytest.mark.parametrize("text, says", [
    ("int main() { return 0; }\n__global__ void biasGeluFusedV2(float* p) {}\n__global__ void other() {}\n",
     "s.cu: your program defines no kernel `__global__ void biasGeluFused(...)`; kernels found: biasGeluFusedV2, "
     "other"),
    ("int main() { return 0; }\nvoid biasGeluFused(const float* x, const float* b, float* o, size_t c) {}\n",
     "s.cu:2: `biasGeluFused` is not a __global__ kernel but a host function"),
    ("int main() { return 0; }\nnamespace { " + K.format("") + "}\n",
     "s.cu:2: `biasGeluFused` is inside `namespace { }`"),
    ("#include <vector>\n__global__ void biasGeluFused(float* out) {\n  out[0] = 1;\n",
     "s.cu:2: cannot split your program into declarations here (a `{` that is never closed"),
    ("#include <vector>\n#ifdef _MSC_VER\nvoid f() {\n#else\nvoid f() {\n#endif\n}\n" + K.format(""),
     "s.cu:3: cannot split your program into declarations here"),
    ("int main() { return 0; }\n__device__ float scale(float v);\n" + K.format("out[0] = scale(x[0]) * kHost;")
     + "float kHost = 2;\n", "s.cu:3: `biasGeluFused` reads `kHost`, a host variable (line 4)"),
    ("int main() { return 0; }\n#ifdef _MSC_VER\n" + K.format("") + "#endif\n" + K.format(""),
     "s.cu:5: `biasGeluFused` is defined twice (lines 3 and 5)"),
])
def test_what_cannot_be_separated_is_refused_with_one_message(text, says):
    with pytest.raises(SubmissionError) as err:
        extract(text, "s.cu", KERNEL)
    assert err.value.stage == "source" and str(err.value).startswith(says)


def test_versions_in_the_branches_of_one_if_are_not_defined_twice():
    text = ("int main() { return 0; }\n#if VARIANT == 4\n" + K.format("out[0] = 4;") + "#elif VARIANT == 2\n" +
            K.format("out[0] = 2;") + "#else\n" + K.format("out[0] = 1;") + "#endif\n")
    ex = extract(text, "s.cu", KERNEL)
    assert ex.text.count("__global__") == 3 and ex.kernel_line == 3
    compile_sub(prelude(ex.headers) + ex.text, "s.cu")


def test_branches_nvrtc_certainly_skips_are_left_out():
    # no -D is passed and nothing in the file defines USE_ALT or DEBUG; NVRTC defines __CUDA_ARCH__
    text = ("#include <cstdio>\n#ifdef USE_ALT\n" + K.format("out[0] = 2;") + "#endif\n" + K.format("out[0] = 1;")
            + "#ifndef __CUDA_ARCH__\nint hostOnly() { return 1; }\n#endif\n#if !defined(DEBUG)\n__device__ int g;\n"
            "#else\nint h;\n#endif\n#if defined DEBUG2 || 1\nint unknown;\n#endif\n" + MAIN)
    ex = extract(text, "s.cu", KERNEL)
    assert ex.text.count("__global__") == 1 and ex.kernel_line == 5
    assert ex.ignored == ("g", "unknown", "main")  # hostOnly and h are in skipped branches: not even listed
    # a macro the file defines (or undefines) anywhere is not known
    text = "#define USE_ALT\n" + text
    with pytest.raises(SubmissionError, match="defined twice"):
        extract(text, "s.cu", KERNEL)


# --- the new path cannot read a file --------------------------------------------------------------------
PROGRAM_LEAKS = sorted((DATA / "leaks").glob("program_*.cu"))
LEAK_REFUSED = {"program_digraph_in_main.cu": 10, "program_if0_include.cu": 6, "program_include_in_kernel.cu": 7,
                "program_include_in_main.cu": 12, "program_macro_include.cu": 8, "program_placeholder.cu": 8,
                "program_stray_hash.cu": 6}


@pytest.mark.parametrize("path", PROGRAM_LEAKS, ids=lambda p: p.name)
def test_program_leak_cases_are_refused_or_read_nothing(path):
    # tests/test_directives.py and tests/test_sandbox.py run these too, against a canary file
    text = path.read_bytes().decode()
    if path.name in LEAK_REFUSED:
        with pytest.raises(SubmissionError, match=r"refused `(#|%:)(include|line)`") as err:
            prepare_for_nvrtc(text, path.name, KERNEL)
        assert str(err.value).startswith(f"{path.name}:{LEAK_REFUSED[path.name]}: ")
        return
    compiled_text = prepare_for_nvrtc(text, path.name, KERNEL)
    assert "/etc/passwd" not in compiled_text and "#include" not in compiled_text
    compile_sub(compiled_text, path.name)


def test_every_program_leak_case_has_an_expectation():
    names = {p.name for p in PROGRAM_LEAKS}
    assert set(LEAK_REFUSED) <= names and len(names) >= 10


# --- hostile input: linear time -----------------------------------------------------------------------
CAP = 256 * 1024
F0 = "__device__ float f0(float v) { return v; }\n"
K0 = "__global__ void biasGeluFused(const float* x, const float* b, float* o, size_t c) { o[0] = f0(x[0]); }\n"


def _fill(prefix: str, unit: str, suffix: str, size: int = CAP) -> str:
    return prefix + unit * ((size - len(prefix) - len(suffix)) // len(unit)) + suffix


def _prepared(text: str):
    """prepare() on `text`: its result, or the SubmissionError it raised."""
    try:
        return prepare(text, "s.cu", KERNEL)
    except SubmissionError as err:
        return err


def _linear(make, size: int = CAP):
    """prepare() on make(size), checked to take linear time against make(size // 8) (conftest.assert_linear;
    a quadratic step took 30 s on 60,000 declarations): its result, or the SubmissionError it raised."""
    return assert_linear(_prepared, make, size)


@pytest.mark.parametrize("make", [
    lambda n: "{" * n,
    lambda n: _fill("#include <vector>\n", "{", "", n),
    lambda n: "#include <vector>\n" + "{" * (n // 2 - 20) + "}" * (n // 2 - 20),
    lambda n: _fill("#include <vector>\n", "(", "", n),
    lambda n: _fill("#include <vector>\n" + F0 + "__global__ void biasGeluFused(float* o) {", "{}",
                    "}\nint main() {}\n", n),
    lambda n: "#include <vector>\n" + "namespace a {\n" * (n // 17) + "}\n" * (n // 17) + F0 + K0 + MAIN,
    lambda n: "#ifdef X\n" * (n // 17) + F0 + "#endif\n" * (n // 17) + K0 + MAIN,  # X defined nowhere: skipped
    lambda n: "#if X\n" * (n // 17) + F0 + "#endif\n" * (n // 17) + K0 + MAIN,  # not known: every directive kept
    lambda n: _fill("", "#ifdef A\n#endif\n", F0 + K0 + MAIN, n),
    lambda n: _fill(F0 + "#define A0 1\n", "#define A0 A0\n", K0.replace("f0(x[0])", "A0") + MAIN, n),
], ids=["braces", "braces-program", "closed-braces", "parentheses", "braces-in-kernel", "namespaces",
        "skipped-ifs", "nested-ifs", "empty-ifs", "macros"])
def test_256_kib_of_nesting_takes_linear_time(make):
    assert len(make(CAP)) <= CAP + 4096
    _linear(make)


@pytest.mark.parametrize("make, size", [
    (lambda n: "#include <vector>\n" + "a;" * n + F0 + K0 + MAIN, 60_000),
    (lambda n: "a;\n" * n + F0 + K0 + MAIN, 60_000),
    (lambda n: "a;" * n + F0 + K0, 60_000),  # not a whole program
    (lambda n: _fill("#include <vector>\n" + F0 + "__global__ void biasGeluFused(const float* x, const float* b, "
                     "float* o, size_t c) { o[0] = 0", "+f0(1)", "; }\n" + MAIN, n), CAP),
    (lambda n: "".join(f"__device__ float f{i}(float v){{return f{i - 1}(v);}}\n" if i else F0 for i in range(n))
     + K0.replace("f0(x[0])", f"f{n - 1}(x[0])") + MAIN, 5_000),
    (lambda n: "void g();" * n + F0 + K0 + MAIN, 28_000),
], ids=["60000-declarations", "60000-lines", "60000-kernel-only", "40000-calls", "5000-chained-helpers",
        "28000-prototypes"])
def test_60000_declarations_take_linear_time(make, size):
    assert len(make(size)) <= CAP + 4096
    out = _linear(make, size)
    assert not isinstance(out, SubmissionError)


def test_many_definitions_are_refused_in_linear_time():
    def many(n):
        return "int main() {}\n#if _A\n" + "#elif _B\n".join(K0.replace("f0(x[0])", "1") for _ in range(n)) + "#endif\n"

    err = _linear(many, 5_000)
    assert isinstance(err, SubmissionError) and "defined 5000 times" in str(err)


def test_the_parameter_list_is_read_from_the_kernel_in_a_program():
    # grader.source.signature reads the original text: a forward declaration without names, a launch, a host wrapper
    # and printf texts naming the kernel do not hide the definition's list
    text = ('#include <cstdio>\n__global__ void biasGeluFused(const float*, const float*, float*, size_t);\n'
            'void launch_biasGeluFused(float* d, int n) { biasGeluFused<<<1, 256>>>(d, d, d, n); '
            'printf("biasGeluFused(%d)\\n", n); }\n'
            'int main() { void (*k)(const float*, const float*, float*, size_t) = biasGeluFused; return 0; }\n'
            + K.format("out[0] = x[0];"))
    assert source_signature(text, KERNEL) == PLAIN_SIGNATURE
    assert extract(text, "s.cu", KERNEL).ignored == ("launch_biasGeluFused", "main")


# --- what students write that a first version refused or compiled wrongly ---------------------------------
G = "__device__ float g(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678f)); }\n"
KG = K.format("size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x; "
              "if (c < cols) out[blockIdx.y * cols + c] = g(x[blockIdx.y * cols + c] + bias[c]);")


@pytest.mark.parametrize("helper, kept", [
    ("__device__ void operator+=(float4& a, float4 b) { a.x += b.x; a.y += b.y; }\n", ("g", "operator+=")),
    ("__device__ bool operator==(float4 a, float4 b) { return a.x == b.x; }\n", ("g", "operator==")),
    ("template <int N = 4>\n__global__ void copyFloor(const float* in, float* out) { out[0] = in[N]; }\n", ("g",)),
    ("__device__ float4 operator+(float4, float4);\n", ("g",)),  # an unused prototype, named as it is
])
def test_operators_with_an_equals_sign_and_default_template_arguments(helper, kept):
    ex = extract("#include <cstdio>\n" + G + helper + KG + MAIN, "s.cu", KERNEL)
    assert ex.whole_program and ex.kept == kept, ex.parts
    assert "float4" not in ex.ignored and all(p.name != "float4" for p in ex.parts)
    compile_sub(prelude(ex.headers) + ex.text, "s.cu")


def test_an_unknown_name_in_if_is_0_as_the_preprocessor_reads_it():
    main = "int main() {\n#if TIMING\n  for (int r = 0; r < 10; ++r) {\n#else\n  {\n#endif\n  }\n  return 0;\n}\n"
    ex = extract("#include <cmath>\n" + G + KG + main, "s.cu", KERNEL)  # only allowed headers: split all the same
    assert ex.whole_program and ex.ignored == ("main",)
    ex = extract("#include <cstdio>\n#if !TIMING\n" + G + "#endif\n" + KG + MAIN, "s.cu", KERNEL)
    assert ex.kept == ("g",) and "#if !TIMING" in ex.text


def test_a_program_with_only_allowed_headers_that_cannot_be_split_gets_the_split_message():
    main = "int main() {\n#ifdef _MSC_VER\n  {\n#else\n  {\n#endif\n  }\n  return 0;\n}\n"
    with pytest.raises(SubmissionError, match=r"s.cu:4: cannot split your program into declarations here"):
        extract("#include <cmath>\n" + G + KG + main, "s.cu", KERNEL)


def test_a_define_under_an_if_inside_main_is_refused_not_kept_without_its_if():
    main = "int main() {\n#ifndef _WIN32\n#define BLOCK 256\n#else\n#define BLOCK 128\n#endif\n  return 0;\n}\n"
    kernel = K.format("size_t c = blockIdx.x * (size_t)BLOCK + threadIdx.x; if (c < cols) out[c] = g(x[c]);")
    with pytest.raises(SubmissionError, match=r"s.cu:5: `BLOCK`, which biasGeluFused uses, is set by a #define "
                                              r"inside `main` under an #if there"):
        extract("#include <cstdio>\n" + G + main + kernel, "s.cu", KERNEL)
    plain = "int main() {\n#define BLOCK 256\n  return 0;\n}\n"  # no #if: kept alone, as before
    assert "#define BLOCK 256" in extract("#include <cstdio>\n" + G + plain + kernel, "s.cu", KERNEL).text


def test_class_definitions_run_together_are_read_without_recursing():
    def text(n):
        return "#include <cstdio>\n" + KG.replace("g(", "(") + " ".join(f"struct S{i} {{}}" for i in range(n)) + \
            ";\n" + " ".join(f"typedef struct T{i} {{}}" for i in range(n)) + " X;\n" + MAIN

    out = _linear(text, 3000)
    assert not isinstance(out, SubmissionError) and out[1].whole_program


@pytest.mark.parametrize("header, use", [
    ("cmath", "v * (float)M_SQRT1_2 + (v == INFINITY) + (v != v ? NAN : 0.0f) + (float)M_PI"),
    ("math.h", "v * M_2_SQRTPI * M_SQRT2 * 0.5 + (v == HUGE_VALF)"),
    ("cfloat", "(v > FLT_MAX || v < -FLT_MAX) ? 0.0f : v + FLT_EPSILON * (float)DBL_EPSILON"),
    ("climits", "v + (INT_MAX > 0) + (UINT_MAX > 0u) + (LLONG_MIN < 0) + CHAR_BIT"),
    ("cstdint", "v + (reinterpret_cast<uintptr_t>(&v) & 3) + (intptr_t)0 + (INT32_MAX > 0) + (SIZE_MAX > 0)"),
])
def test_the_macros_and_types_of_the_headers_a_file_includes_are_there(header, use):
    body = f"#include <{header}>\n__device__ float g(float v) {{ return {use}; }}\n" + KG
    for text in (body, body + MAIN):  # the kernel alone, and in a program
        sub_text, _ = prepare(text, "s.cu", KERNEL)
        compile_sub(sub_text, "s.cu")
    assert "M_PI" not in prepare(KG.replace("g(", "("), "s.cu", KERNEL)[0]  # nothing included, nothing added


def test_names_nvrtc_or_the_prelude_defines_are_not_read_as_undefined():
    # NVRTC's built-in headers define CUDART_VERSION, NULL, assert, ...; the prelude defines M_SQRT1_2 for cmath
    for cond, taken in (("#ifdef CUDART_VERSION", "1.0f"), ("#if defined(NULL)", "1.0f"),
                        ("#if CUDART_VERSION", "1.0f"), ("#ifndef assert", "2.0f")):
        text = "#include <cstdio>\n" + G + f"{cond}\n#define kScale 1.0f\n#else\n#define kScale 2.0f\n#endif\n" + \
            KG.replace("g(x[", "kScale * g(x[") + MAIN
        ex = extract(text, "s.cu", KERNEL)
        assert f"#define kScale {taken}" in ex.text, (cond, ex.text)  # the branch NVRTC takes is kept
        compile_sub(prelude(ex.headers) + ex.text, "s.cu")
    text = ("#include <cmath>\n#include <cstdio>\n#ifdef M_SQRT1_2\nconstexpr float kInv = (float)M_SQRT1_2;\n"
            "#else\nconstexpr float kInv = 0.70710678f;\n#endif\n"
            "__device__ float g(float v) { return 0.5f * v * (1.0f + erff(v * kInv)); }\n" + KG + MAIN)
    ex = extract(text, "s.cu", KERNEL)
    assert ex.kept == ("kInv", "g") and "#ifdef M_SQRT1_2" in ex.text
    compile_sub(prelude(ex.headers) + ex.text, "s.cu")
    # without an answer from NVRTC nothing is decided on such a name: both branches stay for NVRTC
    ex = extract("#include <cstdio>\n#ifdef TIMING\n" + G + "#endif\n" + KG + MAIN, "s.cu", KERNEL,
                 compiler_defines=None)
    assert "#ifdef TIMING" in ex.text


def test_a_shift_in_a_default_template_argument_and_attributes():
    copy = "template <int kBlock = 1 << 8, bool kWide = (kBlock <= 256)>\n" \
           "__global__ void copyFloor(const float* in, float* out) { out[threadIdx.x] = in[kBlock]; }\n"
    ex = extract("#include <cstdio>\n" + G + copy + KG + MAIN, "s.cu", KERNEL)
    assert ex.kept == ("g",) and "copyFloor" in ex.ignored
    text = ("#include <cstdio>\n[[maybe_unused]] constexpr float kInv = 0.70710678f;\n"
            "[[nodiscard]] __device__ float g(float v) { return 0.5f * v * (1.0f + erff(v * kInv)); }\n" + KG + MAIN)
    ex = extract(text, "s.cu", KERNEL)
    assert ex.kept == ("kInv", "g")
    compile_sub(prelude(ex.headers) + ex.text, "s.cu")


def test_a_kernel_in_a_raw_string_whose_delimiter_holds_a_quote_is_not_extracted():
    # `R"x"(` ... `)x""` is one raw string for NVRTC (and g++). Read as `R` `"x"` `(`, the text in it on line 4
    # was extracted as the kernel, and the real one (line 7) hidden in a second raw string (issue 19).
    text = ('#include <cstdio>\nconst char* kDoc = R"x"(\n)"";\n'
            "__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) "
            "{ out[0] = 1; }\n"
            'const char* kTail = R"(\n)x"";\n' + K.format("out[threadIdx.x] = x[threadIdx.x] + bias[0];")
            + '// )";\n' + "int main() { std::puts(kDoc); return 0; }\n")
    ex = extract(text, "s.cu", KERNEL)
    assert (ex.kernel_line, ex.ignored) == (7, ("kDoc", "main")) and "out[0] = 1;" not in ex.text
    compile_sub(prelude(ex.headers) + ex.text, "s.cu")
