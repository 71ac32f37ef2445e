"""Include forms that got past the first text filters (each was checked with NVRTC: it read the file or
evaluated `__has_include`), and file names that would inject text into the `#line` directive."""

import pytest

from grader.core.errors import SubmissionError
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.source.read import prepare_for_nvrtc, read_submission, safe_source_name

KERNEL = "__global__ void biasGeluFused(const float* x, const float* b, float* o, size_t c) {}\n"


@pytest.mark.parametrize(
    "text, token, line",
    [
        # A string holding `/*` made the comment filter swallow the `#`: NVRTC included the file.
        ('const char* s = "/*";\n#/**/include "/etc/passwd"\n// */\n', "#include", 2),
        ("char c = '\"'; const char* s = \"/*\";\n#/**/include \"/etc/passwd\"\n// */\n", "#include", 2),
        ('const char* s = "/*";\n%:/**/include_next "/etc/passwd"\n// */\n', "%:include_next", 2),
        ('const char* s = "/*";\n#/**/inc\\\nlude "/etc/passwd"\n// */\n', "#include", 2),
        # Token pasting builds a working __has_include (NVRTC evaluated CAT(__has_,include)(...)).
        ('#define CAT(a,b) a##b\n#if CAT(__has_,include)("/etc/passwd")\n#endif\n', "##", 1),
        ('#define CAT(a,b) a%:%:b\n', "%:%:", 1),
        ('#define CAT(a,b) a /* x\n */ ## b\n', "##", 2),
        ('#define S "//" ## x\n', "##", 1),
        ('#define CAT(a,b) a\\\n##b\n', "##", 2),
        ('#if __has_embed("/etc/passwd")\n#endif\n', "__has_embed", 1),
    ],
)
def test_bypasses_are_refused(text, token, line):
    with pytest.raises(SubmissionError, match="refused") as err:
        prepare_for_nvrtc(text + KERNEL, "s.cu", BIAS_GELU.kernel_name)
    assert err.value.stage == "source"
    assert f"s.cu:{line}: refused `{token}`" in str(err.value)


@pytest.mark.parametrize("text", ['#/* a\ncomment */include "/etc/passwd"\n', '#\t/**/ /**/\vembed "/etc/passwd"\n'])
def test_comments_between_hash_and_name_are_refused(text):
    with pytest.raises(SubmissionError, match="refused"):
        prepare_for_nvrtc(text + KERNEL, "s.cu", BIAS_GELU.kernel_name)


def test_ordinary_sources_still_pass():
    text = ('#include <cuda_runtime.h>\n#define ELEMS 4\n#define IDX(r, c) ((r) * cols + (c))\n'
            'const char* s = "# not a directive";  // a comment\n' + KERNEL)
    assert KERNEL in prepare_for_nvrtc(text, "s.cu", BIAS_GELU.kernel_name)


@pytest.mark.parametrize("name", ['x".cu', 'a\n#include "/etc/passwd"\n.cu', "a b\\c.cu", "\x1b[31mred.cu"])
def test_file_name_cannot_inject_into_line_directive(tmp_path, name):
    assert safe_source_name(name).replace("_", "").replace(".", "").isalnum()
    out = prepare_for_nvrtc(KERNEL, name, BIAS_GELU.kernel_name)
    assert "/etc/passwd" not in out and '"' not in out.split("#line 1 ", 1)[1][1:].split("\n")[0][:-1]
    p = tmp_path / name.replace("/", "_")
    p.write_text(KERNEL)
    sub = read_submission(p, BIAS_GELU)
    assert sub.name == safe_source_name(p.name)
    assert f'#line 1 "{sub.name}"\n' in sub.compile_text
