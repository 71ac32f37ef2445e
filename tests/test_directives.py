"""The include policy against every trick collected so far: no byte of a host file may reach the output.

tests/data/leaks/ holds submissions that try to make NVRTC read /etc/passwd (carriage returns inside
splices and after `#`, digraphs, trigraphs, raw strings, macro-built names, stringized directives, line
markers, ...). Each must be refused before NVRTC, or compile without any line of the file in the output.
"""

from pathlib import Path

import pytest

from grader import exercise
from grader.compile import compile_kernels
from grader.directives import normalize, scan
from grader.errors import SubmissionError
from grader.source import prepare_for_nvrtc

LEAKS = sorted((Path(__file__).parent / "data" / "leaks").glob("*.cu"))
PASSWD_MARKERS = ("root:x:0:0", "/bin/bash", "/usr/sbin/nologin", "daemon:x:")
KERNEL = "__global__ void biasGeluFused(const float* x, const float* b, float* o, size_t c) {}\n"


def leaks(text: str, name: str) -> str:
    """What of /etc/passwd reaches the output when `text` is graded up to compilation ('' when nothing)."""
    try:
        prepared = prepare_for_nvrtc(text, name)
        compiled = compile_kernels(prepared, name, (exercise.KERNEL_NAME,), "sm_90")
        output = compiled.log + "\n".join(compiled.warnings)
    except SubmissionError as err:
        output = str(err) + err.details
    return output if any(m in output for m in PASSWD_MARKERS) else ""


@pytest.mark.parametrize("path", LEAKS, ids=lambda p: p.name)
def test_no_host_bytes_reach_the_output(path):
    assert leaks(path.read_bytes().decode("utf-8", "replace"), path.name) == ""


@pytest.mark.parametrize("text", [
    'CAP(\n#inc\\\r\r\nlude "/etc/passwd"\n)\n',
    'const char* s = "/*";\nCAP(\n#\r/**/include "/etc/passwd"\n)\n// */\n',
    '#\rinclude "/etc/passwd"\n',
    '#include\r"/etc/passwd"\n',
    '%:\\\ninclude "/etc/passwd"\n',
    'int a = 1\'2; /*\n*/ #include "/etc/passwd"\n',
    '# 1 "/etc/passwd"\n',
    '#line 1 "/etc/passwd"\n',
    'R"x(\n)x" \n#include "/etc/passwd"\n',
])
def test_carriage_return_and_lexer_tricks_leak_nothing(text):
    # Each is refused, or (a lone CR becomes a line end, so `#\r/**/include` is a null directive and a
    # stray `include` token) compiles to an error that holds no line of the file.
    assert leaks("#define CAP(...) static_assert(false, #__VA_ARGS__);\n" + text + KERNEL, "s.cu") == ""


@pytest.mark.parametrize("text", [
    "// No #include needed: NVRTC has erff built in\n",
    "/* #include <stdio.h> is not available here */\n",
    "// ??= is a trigraph, off in C++17\n",
    'const char* s = "#include <x>";\n',
    "#include <cuda_runtime.h> /* runtime */\n",
    "#include <cuda_runtime.h>\r\n#define N 4\r\n",
    "\ufeff#include <cstdint>\n",
    "int big = 1'000'000;\n",
    'const char* r = R"raw(#include "/etc/passwd")raw";\n',
    "#pragma unroll\n#if 0\n#endif\n",
])
def test_ordinary_code_is_not_refused(text):
    out = prepare_for_nvrtc(text + KERNEL, "s.cu")
    assert out.endswith(KERNEL)


def test_normalized_text_keeps_line_numbers():
    text = "// a\r\n// b\r// c\n#include <cuda_runtime.h>\nint x;\n"
    result = scan(text)
    assert result.normalized.split("\n")[4] == "int x;"
    assert result.blanked == [4]
    assert normalize("\ufeffa\r\nb\rc") == "a\nb\nc"


def test_crlf_file_compiles_with_student_line_numbers():
    text = "#include <cuda_runtime.h>\r\n\r\n__global__ void biasGeluFused(const float* x, const float* b, " \
           "float* o, size_t c) { int y = ; }\r\n"
    with pytest.raises(SubmissionError) as err:
        compile_kernels(prepare_for_nvrtc(text, "s.cu"), "s.cu", (exercise.KERNEL_NAME,), "sm_90")
    assert "s.cu:3: error" in err.value.details
