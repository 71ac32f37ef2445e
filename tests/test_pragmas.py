"""The directives nvcc's preprocessor honours and NVRTC ignores (grader.source.pragmas): refused by name, in a file
of device code and in a whole program alike; the ones both read alike are not refused. Each refused form was
shown to change biasGeluFused's machine code, or nvcc's verdict, by benchmarks/nvcc_oracle.py
(tests/test_nvcc_oracle.py compiles them with nvcc where it is installed); these tests need no compiler.
"""

from __future__ import annotations

import pytest

from conftest import assert_linear
from grader.core.errors import SubmissionError
from grader.source.includes import scan
from grader.source.read import prepare

KERNEL = ("__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {\n"
          "  size_t i = blockIdx.x * blockDim.x + threadIdx.x;\n"
          "  if (i < cols) out[i] = x[i] * bias[i] + SCALE;\n}\n")
MAIN = 'int main() { printf("hi\\n"); return 0; }\n'
RESET = "#undef SCALE\n#define SCALE 2.0f\n"

# (the lines between `#define SCALE 0.5f` and the kernel; the token named; words the message must hold)
REFUSED = [
    ('#pragma push_macro("SCALE")\n' + RESET + '#pragma pop_macro("SCALE")\n', "#pragma push_macro",
     "#undef"),
    ('#pragma pop_macro("SCALE")\n', "#pragma pop_macro", "NVRTC ignores"),
    ('  #  pragma   push_macro ( "SCALE" )\n', "#pragma push_macro", "nvcc"),
    ('#pragma /* a comment */ push_macro("SCALE")\n', "#pragma push_macro", "nvcc"),
    ('#pragma /* a comment\n spanning lines */ push_macro("SCALE")\n', "#pragma push_macro", "nvcc"),
    ('%:pragma push_macro("SCALE")\n', "%:pragma push_macro", "nvcc"),
    ('#pra\\\ngma push_\\\nmacro("SCALE")\n', "#pragma push_macro", "nvcc"),
    ('_Pragma("push_macro(\\"SCALE\\")")\n' + RESET, "_Pragma", "push_macro"),
    ('_Pragma(L"pop_macro(\\"SCALE\\")")\n', "_Pragma", "pop_macro"),
    ('_Pragma ( /* c */ u8"push_macro(\\"SCALE\\")")\n', "_Pragma", "push_macro"),
    ('#define P(x) _Pragma(#x)\nP(push_macro("SCALE"))\n', "_Pragma", "string literal"),
    ('#define SAVE _Pragma\n', "_Pragma", "string literal"),
    ('_Pragma(R"(push_macro("SCALE"))")\n', "_Pragma", "string literal"),
    ("#pragma GCC poison cols\n", "#pragma GCC poison", "delete the line"),
    ('#pragma GCC error "stop"\n', "#pragma GCC error", "#error"),
    ('#pragma GCC dependency "other.h"\n', "#pragma GCC dependency", "delete the line"),
    ("#if #machine(x86_64)\n" + RESET + "#endif\n", "#", "GCC assertion"),
    ("#if 0\n#elif %:cpu(x86_64)\n" + RESET + "#endif\n", "%:", "GCC assertion"),
    ("#if /* a comment\n */ #system(linux)\n#endif\n", "#", "GCC assertion"),
    # reserved names only one of nvcc's preprocessor and NVRTC defines (the oracle's known gaps of issue 19)
    ("#ifdef __GNUC__\n" + RESET + "#endif\n", "__GNUC__", "NVRTC does not"),
    ("#if defined(__linux__) && __x86_64__\n" + RESET + "#endif\n", "__linux__", "another branch"),
    ("#ifndef __CUDACC_RTC__\n" + RESET + "#endif\n", "__CUDACC_RTC__", "NVRTC defines"),
    ("#undef SCALE\n#define SCALE (float)__COUNTER__\n", "__COUNTER__", "NVRTC does not"),
    ("#define IS_GNU defined(__GNUC__)\n#if IS_GNU\n" + RESET + "#endif\n", "__GNUC__", "NVRTC does not"),
    ("__device__ const char* when = __TIMESTAMP__;\n", "__TIMESTAMP__", "NVRTC does not"),
    ("#define F(a, ...) a __VA_OPT__(+) __VA_ARGS__\n", "__VA_OPT__", "two macros"),
    ("#if __x8\\\n6_64__\n#endif\n", "__x86_64__", "NVRTC does not"),
]

# Read alike by g++ and NVRTC (the same machine code: tests/test_nvcc_oracle.py)
ALLOWED = [
    "#pragma once\n", "#pragma GCC system_header\n", '#pragma GCC warning "careful"\n', '#pragma message("hi")\n',
    "#pragma STDC FP_CONTRACT OFF\n", '#pragma GCC push_options\n#pragma GCC optimize("O0")\n',
    "#pragma pack(push, 1)\nstruct S { char c; float f; };\n#pragma pack(pop)\n", "#pragma nv_diag_suppress 177\n",
    '#pragma GCC diagnostic ignored "-Wunused"\n', "#pragma poison frobnicate\n", '#pragma dependency "x.h"\n',
    '#pragma GCC push_macro("SCALE")\n', '#define PM push_macro\n#pragma PM("SCALE")\n',
    '#pragma message("push_macro")\n', '_Pragma("unroll")\n', '#define UNROLL _Pragma("unroll 4")\n',
    '#define S(x) #x\n', "#if defined(SCALE) && 2 > 1\n#endif\n",
    "// #pragma push_macro(\"SCALE\")\n", '/* _Pragma(x) */\n',
    'constexpr char s[] = "_Pragma(#x) #pragma pop_macro";\n',
    # reserved names both define, or in a comment or a literal
    "#if __CUDA_ARCH__ >= 900 && defined(__CUDACC__) && __cplusplus >= 201703L\n#endif\n",
    "__device__ __forceinline__ float twice(float v) { return 2.0f * v; }\n", "#if __LINE__ > 1\n#endif\n",
    "// #ifdef __GNUC__\n", 'constexpr char names[] = "__GNUC__ __COUNTER__";\n',
    "#define GNU_ish 1\nconstexpr int __gnuc_not_a_macro = 0;\n",
]


def file_with(lines: str, program: bool) -> str:
    head = "#include <cstdio>\n" if program else ""
    return f"{head}#define SCALE 0.5f\n{lines}{KERNEL}{MAIN if program else ''}"


@pytest.mark.parametrize("lines, token, words", REFUSED)
def test_directives_nvcc_honours_and_nvrtc_ignores_are_refused(lines, token, words):
    for program in (False, True):
        text = file_with(lines, program)
        result = scan(text, frozenset({"cstdio"}))
        assert result.refusal is not None, (program, lines)
        _, got, why = result.refusal
        assert got == token and words in why
        with pytest.raises(SubmissionError) as err:
            prepare(text, "k.cu", "biasGeluFused")
        assert token in str(err.value) and words in str(err.value)


@pytest.mark.parametrize("lines", ALLOWED)
def test_directives_read_alike_are_not_refused(lines):
    for program in (False, True):
        assert scan(file_with(lines, program), frozenset({"cstdio"})).refusal is None, lines


def test_the_line_named_is_the_pragmas():
    text = file_with('\n\n#pragma pop_macro("SCALE")\n', program=True)
    with pytest.raises(SubmissionError, match=r"k\.cu:5: refused `#pragma pop_macro`"):
        prepare(text, "k.cu", "biasGeluFused")


def test_many_pragmas_are_read_in_linear_time():
    def make(n: int) -> str:
        return '#pragma unroll\n_Pragma("unroll")\n#if 1 /* */\n#endif\n' * n + KERNEL.replace("SCALE", "1.0f")

    assert assert_linear(scan, make, 4000).refusal is None
