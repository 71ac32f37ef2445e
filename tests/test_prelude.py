"""The prelude (grader.source.prelude) against the real headers: for each allowed header, the macros and types device
code takes from it, names and values.

The system's headers are read with g++ (`g++ -dM -E`: which public macros each header defines) and evaluated by
a program g++ compiles and runs (each macro's type and bits, each typedef's type); NVRTC then compiles the
prelude with a static_assert of each of those, so a value or a type that differs fails here. The CUDA toolkit's
cuda.h and cuda_runtime_api.h give the format of CUDA_VERSION and CUDART_VERSION, and NVRTC's version their value.
Then the cases of issue 19 (each failed before the prelude came from the headers), and grader/source/host_macros.json
against the headers it was read from. Tests that need g++ or nvcc skip with the reason when it is missing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, benchmark_module
from grader.compile.nvrtc import compile_kernels
from grader.compile.predefined import nvrtc_defines
from grader.exercises import bias_gelu as exercise
from grader.source import prelude as prelude_module
from grader.source.includes import ALLOWED_INCLUDES
from grader.source.prelude import HEADER_MACROS, HOST_INCLUDED, LEFT_OUT, header_macro_names, prelude
from grader.source.program import extract
from grader.source.read import prepare

GXX = shutil.which("g++")
NVCC = shutil.which("nvcc")
needs_gxx = pytest.mark.skipif(GXX is None, reason="no g++ on PATH: the prelude is not checked against the system's "
                               "headers")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="no nvcc on PATH (the CUDA toolkit): its headers are not read")
KERNEL = ("__global__ void biasGeluFused(const float* x, const float* bias, float* out, int cols) {\n"
          "  int i = blockIdx.x * blockDim.x + threadIdx.x; out[i] = x[i] + bias[i % cols]; }\n")
TYPES = ("bool", "char", "signed char", "unsigned char", "short", "unsigned short", "int", "unsigned int", "long",
         "unsigned long", "long long", "unsigned long long", "float", "double", "long double", "wchar_t")


def cuda_include() -> Path | None:
    """The CUDA toolkit's include folder (the one holding cuda.h), or None."""
    roots = [os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda",
             *sorted(str(p) for p in Path("/usr/local").glob("cuda-*"))]
    return next((Path(r) / "include" for r in roots if r and (Path(r) / "include" / "cuda.h").is_file()), None)


def gxx(text: str, *args: str) -> str:
    """g++ -std=c++17 (and the toolkit's include folder) on `text`: its output (or, with no `-o`, its stdout)."""
    include = cuda_include()
    command = [GXX, "-std=c++17", *(["-I", str(include)] if include else []), *args, "-x", "c++", "-"]
    return subprocess.run(command, input=text, capture_output=True, text=True, check=True).stdout


def public_macros(header: str) -> dict[str, str]:
    """{name: definition} of the macros without a leading underscore that `#include <header>` defines."""
    found = dict(re.findall(r"^#define ([A-Za-z]\w*)(?:\(|\s|$)(.*)$", gxx(f"#include <{header}>\n", "-dM", "-E"),
                            re.M))
    empty = set(re.findall(r"^#define (\w+)", gxx("", "-dM", "-E"), re.M))
    return {k: v for k, v in found.items() if k not in empty}


def group(header: str) -> tuple[str, ...] | None:
    return next((g for g in HEADER_MACROS if header in g), None)


def left_out(header: str, name: str) -> bool:
    rules = next((r for key, r in LEFT_OUT.items() if header in key.split(", ")), {})
    return any(re.fullmatch(pattern, name) for pattern in rules)


@needs_gxx
@pytest.mark.parametrize("header", sorted(ALLOWED_INCLUDES))
def test_every_macro_of_an_allowed_header_is_in_the_prelude_or_left_out_for_a_reason(header):
    if header.startswith("cuda") and cuda_include() is None:
        pytest.skip("no CUDA toolkit include folder (cuda.h): the CUDA headers are not read")
    real = public_macros(header)
    ours = prelude_module._group_names([header])
    assert not ours - set(real), f"the prelude defines names <{header}> does not: {sorted(ours - set(real))}"
    rest = set(real) - ours
    if header in HOST_INCLUDED:  # e.g. libstdc++'s <cmath> includes <stdlib.h> for its abs overloads
        rest -= set(public_macros(HOST_INCLUDED[header]))
    rest -= nvrtc_defines(frozenset(rest)) or frozenset()
    missing = sorted(n for n in rest if not left_out(header, n))
    assert not missing, f"<{header}> defines {missing}, which the prelude lacks (add them, or to LEFT_OUT)"


def host_values(headers: tuple[str, ...], exprs: list[str], typedefs: list[str]) -> dict[str, tuple[str, int]]:
    """{expression or typedef: (its type's name, its bits as an unsigned integer; 0 for a typedef)} as g++ and
    the system's headers give them (a program compiled and run here)."""
    names = "".join(f"if (std::is_same<T, {t}>::value) return \"{t}\";\n" for t in TYPES)
    body = "".join(f'show<decltype({e})>("{e}", {e});\n' for e in exprs)
    body += "".join(f'std::printf("%s\\t%s\\t0\\n", "{t}", name<{t}>());\n' for t in typedefs)
    program = "".join(f"#include <{h}>\n" for h in headers) + f"""
#include <cstdio>
#include <cstring>
#include <type_traits>
template <class T> const char* name() {{ {names} return "?"; }}
template <class T, class V> void show(const char* what, V value) {{
  unsigned long long bits = 0;
  if (std::is_floating_point<V>::value) std::memcpy(&bits, &value, sizeof value);
  else bits = (unsigned long long)value;
  std::printf("%s\\t%s\\t%llu\\n", what, name<typename std::decay<T>::type>(), bits);
}}
int main() {{ {body} }}
"""
    exe = Path(os.environ.get("PYTEST_TMP", "/tmp")) / f"prelude_probe_{os.getpid()}"
    gxx(program, "-o", str(exe))
    try:
        out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    finally:
        exe.unlink(missing_ok=True)
    return {k: (t, int(b)) for k, t, b in (line.split("\t") for line in out.splitlines())}


def checks(header: str) -> tuple[list[str], list[str]]:
    """The expressions (object-like macros, each function-like one applied) and typedefs of `header`'s group."""
    text = HEADER_MACROS[group(header)]
    objects = sorted(set(re.findall(r"^#define (\w+) ", text, re.M)))
    calls = [f"{n}({'0xffffffffffffffff' if n.startswith('U') and '64' in n or n == 'UINTMAX_C' else '100'})"
             for n in sorted(set(re.findall(r"^#define (\w+)\(", text, re.M)))]
    typedefs = re.findall(r"typedef [\w ]+? (\w+);", text)
    if header in ("stdint.h", "cstdint"):
        typedefs += re.findall(r"typedef [\w ]+? (\w+);", prelude_module.PRELUDE)
    return objects + calls, typedefs


@needs_gxx
@pytest.mark.parametrize("header", ["cmath", "math.h", "cfloat", "climits", "cstdint", "stdint.h"])
def test_the_prelude_has_the_values_and_types_of_the_real_header(header):
    exprs, typedefs = checks(header)
    host = host_values((header,), exprs, typedefs)
    asserts = []
    for e in exprs:
        kind, bits = host[e]
        assert kind != "?", e
        value = (f"__builtin_bit_cast({'unsigned' if kind == 'float' else 'unsigned long long'}, ({kind})({e}))"
                 if kind in ("float", "double") else f"(unsigned long long)({e})")
        asserts.append(f"static_assert(same<decltype({e}), {kind}>::value, \"type of {e}\");\n"
                       f"static_assert({value} == {bits}ULL, \"value of {e}\");\n")
    asserts += [f"static_assert(same<{t}, {host[t][0]}>::value, \"{t}\");\n" for t in typedefs]
    probe = (prelude([header]) + "template <class A, class B> struct same { static constexpr bool value = false; };\n"
             "template <class A> struct same<A, A> { static constexpr bool value = true; };\n" + "".join(asserts) +
             'extern "C" __global__ void probe() {}\n')
    compile_kernels(probe, "probe.cu", ("probe",), "sm_90")  # a static_assert that fails is a SubmissionError


def nvrtc_version() -> tuple[int, int]:
    from cuda.bindings import nvrtc

    _, major, minor = nvrtc.nvrtcVersion()
    return major, minor


def test_cuda_version_is_the_nvrtc_in_use():
    major, minor = nvrtc_version()
    probe = (prelude(["cuda.h"]) + f"static_assert(CUDA_VERSION == {major * 1000 + minor * 10}, \"CUDA_VERSION\");\n"
             f"static_assert(CUDART_VERSION == CUDA_VERSION, \"CUDART_VERSION\");\n"
             f"#if CUDA_VERSION < {major * 1000}\n#error not read by the preprocessor\n#endif\n"
             'extern "C" __global__ void probe() {}\n')
    compile_kernels(probe, "probe.cu", ("probe",), "sm_90")


@needs_gxx
@needs_nvcc
def test_the_toolkit_headers_write_the_version_as_the_prelude_computes_it():
    if cuda_include() is None:
        pytest.skip("no CUDA toolkit include folder (cuda.h)")
    release = re.search(r"release (\d+)\.(\d+)", subprocess.run([NVCC, "--version"], capture_output=True,
                                                               text=True).stdout)
    major, minor = int(release.group(1)), int(release.group(2))
    out = gxx("#include <cuda.h>\n#include <cuda_runtime_api.h>\nA CUDA_VERSION B CUDART_VERSION\n", "-E", "-P")
    found = re.search(r"A (\d+) B (\d+)", out)
    assert found and (int(found.group(1)), int(found.group(2))) == (major * 1000 + minor * 10,) * 2


# --- the cases of issue 19: each was a compile error before the prelude came from the headers ---------------

@pytest.mark.parametrize("header, use", [
    ("climits", "static_assert(LONG_MAX == 9223372036854775807L && ULONG_MAX == 18446744073709551615UL, \"\");"),
    ("cstdint", "static_assert(UINT64_C(1) << 63 == 9223372036854775808UL, \"\");"),
    ("cstdint", "static_assert(sizeof(intmax_t) == 8 && sizeof(uintmax_t) == 8, \"\");"),
    ("cstdint", "static_assert(sizeof(int_fast32_t) >= 4 && sizeof(int_least16_t) == 2, \"\");"),
    ("stdint.h", "static_assert(PTRDIFF_MAX == 9223372036854775807L && SIZE_MAX > 0, \"\");"),
    ("cfloat", "static_assert(FLT_MAX_EXP == 128 && DBL_MIN_EXP == -1021, \"\");"),
    ("cmath", "static_assert(FP_NAN != FP_NORMAL, \"\"); constexpr float kInf = INFINITY;"),
    ("cuda.h", "#if CUDA_VERSION >= 11000\nconstexpr int kNew = 1;\n#else\n#error the #else of CUDA_VERSION\n#endif"),
    ("cuda.h", "static_assert(UINT64_MAX == UINT64_C(18446744073709551615), \"\");"),  # cuda.h includes <stdint.h>
    ("cuda_runtime.h", "struct S { int a; float b; }; static_assert(offsetof(S, b) == 4 && INT_MAX > 0, \"\");"),
])
def test_a_file_that_includes_a_header_has_what_it_defines(header, use):
    text, _ = prepare(f"#include <{header}>\n{use}\n{KERNEL}", "s.cu", exercise.KERNEL_NAME)
    compile_kernels(text, "s.cu", (exercise.KERNEL_NAME,), "sm_90")


WRONG = "__global__ void biasGeluFused(float* out) { out[0] = 0; }\n"
MAIN = "int main() { printf(\"%d\\n\", EOF); return 0; }\n"


@pytest.mark.parametrize("condition", ["#ifdef EOF", "#if defined(EOF) && EOF == -1", "#ifndef EOF_IS_UNDEFINED"])
def test_a_whole_program_reads_a_host_headers_macro_as_defined(condition):
    text = f"#include <cstdio>\n{condition}\n{KERNEL}#else\n{WRONG}#endif\n{MAIN}"
    compile_text, ex = prepare(text, "s.cu", exercise.KERNEL_NAME)
    assert ex.whole_program and "EOF" in header_macro_names(ex.headers)
    info = compile_kernels(compile_text, "s.cu", (exercise.KERNEL_NAME,), "sm_90").kernels[exercise.KERNEL_NAME]
    assert len(info.params) == 4  # the kernel nvcc builds, not the #else one


def test_a_whole_program_uses_a_host_macro_in_device_code():
    body = ("#include <cstdio>\n#include <climits>\n__device__ int eofOr(int v) { return v < 0 ? EOF : v; }\n"
            "__device__ float inf() { return INFINITY; }\n" + KERNEL.replace("out[i] =", "out[i] = inf() + eofOr(i) +")
            + "int main() { return 0; }\n")
    compile_text, ex = prepare(body, "s.cu", exercise.KERNEL_NAME)
    assert ex.whole_program and "#define EOF (-1)" in compile_text and "INFINITY __builtin_bit_cast" in compile_text
    compile_kernels(compile_text, "s.cu", (exercise.KERNEL_NAME,), "sm_90")
    # a file that is only device code is NVRTC's, as before: nothing of a host header is defined for it
    assert "EOF" not in prepare(f"#include <climits>\n{KERNEL}", "s.cu", exercise.KERNEL_NAME)[0]


def test_each_definition_of_the_prelude_stands_alone():
    # a whole program gets only the macros it names (prelude's `used`): a definition naming another macro of the
    # prelude would be left without it
    ours = prelude_module._own_definitions()
    for name, definition in ours.items():
        params = set(re.findall(r"\w+", definition.split(")")[0])) if definition.startswith(name + "(") else set()
        body = re.sub(r"\.?\d(?:[eEpP][+-]|[\w.])*|##\s*\w+", " ", definition[len(name):])  # numbers, suffixes
        named = set(re.findall(r"[A-Za-z_]\w*", body)) - params - {"__builtin_bit_cast", "float",
                                                                                      "double", "__builtin_offsetof"}
        assert not named & set(ours) and named <= {"__CUDACC_VER_MAJOR__", "__CUDACC_VER_MINOR__"}, (name, named)


def test_only_the_names_a_whole_program_uses_are_defined():
    program = f"#include <cstdio>\n{KERNEL}int main() {{ return 0; }}\n"
    compile_text, ex = prepare(program, "s.cu", exercise.KERNEL_NAME)
    assert ex.whole_program and compile_text.startswith(prelude(ex.headers) + "#line ")
    assert "EOF" not in extract(program, "s.cu", exercise.KERNEL_NAME).names


# --- grader/source/host_macros.json -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def generator():
    yield from benchmark_module("host_macros")


@needs_nvcc
def test_host_macros_are_the_headers_macros(generator):
    stored = json.loads((ROOT / "grader" / "source" / "host_macros.json").read_text())
    fresh = generator.build(NVCC)
    if fresh["toolchain"] != stored["toolchain"]:
        pytest.skip(f"the headers here ({fresh['toolchain']}) are not the ones grader/source/host_macros.json was read "
                    f"from ({stored['toolchain']}): run python benchmarks/host_macros.py to compare")
    assert fresh == stored
    assert {"EOF", "M_PI", "INT_MAX", "stdin"} <= set(stored["implicit"]) and "UINT64_C" in stored["headers"]["cstdint"]


def test_the_names_only_one_preprocessor_defines_hold_for_this_nvrtc():
    # grader.source.pragmas refuses host_macros.json's nvcc_only and nvrtc_only names, read with one NVRTC; the NVRTC
    # installed here (PyPI's newest in CI, 13.0 on the GPU image) must agree, or the refusals are out of date.
    from grader.compile.predefined import nvrtc_defines

    data = json.loads((ROOT / "grader" / "source" / "host_macros.json").read_text())
    nvcc_only, nvrtc_only = frozenset(data["nvcc_only"]), frozenset(data["nvrtc_only"])
    defined = nvrtc_defines(nvcc_only | nvrtc_only)
    if defined is None:
        pytest.skip("NVRTC cannot be asked here (not installed, or no sandbox)")
    assert "__GNUC__" in nvcc_only and "__CUDACC_RTC__" in nvrtc_only and "__CUDA_ARCH__" not in nvcc_only
    assert not defined & nvcc_only, sorted(defined & nvcc_only)
    assert nvrtc_only <= defined, sorted(nvrtc_only - defined)
