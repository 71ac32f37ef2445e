"""Reading submissions: bad files are input errors (exit 2); include forms other than the allow-list are refused."""

import pytest

from grader.core.errors import EXIT_INPUT, InputError, SubmissionError
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.source.read import prepare_for_nvrtc, read_submission

KERNEL = "__global__ void biasGeluFused(const float* x, const float* b, float* o, size_t c) {}\n"


def write(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return p


@pytest.mark.parametrize(
    "data, words",
    [
        (b"", "empty"),
        (b"  \n\n", "empty"),
        (b"\x7fELF\x00\x01", "binary"),
        ("__global__ void f() {}\n// caf\xe9\n".encode("latin-1"), "UTF-8"),
        (b"//" + b"x" * (300 * 1024), "cap"),
    ],
)
def test_unreadable_files_are_input_errors(tmp_path, data, words):
    with pytest.raises(InputError, match=words) as err:
        read_submission(write(tmp_path, "s.cu", data), BIAS_GELU)
    assert err.value.exit_code == EXIT_INPUT


def test_missing_path_and_folder(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_submission(tmp_path / "nope.cu", BIAS_GELU)
    with pytest.raises(InputError, match="folder"):
        read_submission(tmp_path, BIAS_GELU)


def test_non_utf8_message_names_the_line(tmp_path):
    with pytest.raises(InputError, match=r"s\.cu:3: not UTF-8"):
        read_submission(write(tmp_path, "s.cu", b"a\nb\n\xff\n"), BIAS_GELU)


@pytest.mark.parametrize(
    "directive",
    [
        '#include "/etc/passwd"',
        "#include </etc/passwd>",
        # (`<vector>` is allowed now: a whole program may include it, grader.source.program)
        "  #  include <cublas_v2.h>",
        '%:include "/etc/passwd"',
        '#inc\\\nlude "/etc/passwd"',
        '#/**/include "/etc/passwd"',
        "#define H </etc/passwd>\n#include H",
        '#include_next "/etc/passwd"',
        '#import "/etc/passwd"',
        '#embed "/etc/passwd"',
        '#if __has_include("/etc/passwd")\n#endif',
        '??=include "/etc/passwd"',
        '#include "cuda_runtime.h" /* hidden */ "x"',
    ],
)
def test_include_forms_are_refused(directive):
    with pytest.raises(SubmissionError, match="refused") as err:
        prepare_for_nvrtc(directive + "\n" + KERNEL, "s.cu", BIAS_GELU.kernel_name)
    assert err.value.stage == "source"


def test_allowed_includes_are_blanked_and_lines_kept():
    text = "#include <cuda_runtime.h>\n#include <cstdint>\n" + KERNEL
    out = prepare_for_nvrtc(text, "s.cu", BIAS_GELU.kernel_name)
    body = out.split('#line 1 "s.cu"\n', 1)[1]
    assert "include" not in body
    assert body.splitlines()[2] == KERNEL.strip()


def test_submission_keeps_hash_and_contract(tmp_path):
    sub = read_submission(write(tmp_path, "s.cu", "// grade: block = 128\n" + KERNEL), BIAS_GELU)
    assert len(sub.sha256) == 64
    assert sub.contract.block == 128
    assert sub.name == "s.cu"


@pytest.mark.skipif(not hasattr(__import__("os"), "symlink"), reason="no symbolic links here")
@pytest.mark.parametrize("fmt", ["text", "json", "gradescope"])
def test_a_link_out_of_its_folder_is_refused_unread_in_every_format(tmp_path, capsys, fmt):
    from grader.cli import main

    secret = tmp_path / "staff" / "secret.cu"
    secret.parent.mkdir()
    secret.write_text("// root:x:0:0 the grading machine's own file\n" + KERNEL)
    upload = tmp_path / "submission"
    upload.mkdir()
    (upload / "kernel.cu").symlink_to(secret)  # what a zip or a Git repository can carry
    assert main([str(upload / "kernel.cu"), "--format", fmt]) == EXIT_INPUT
    out = capsys.readouterr()
    assert "a link to a file outside its folder; refused without reading it" in out.out + out.err
    assert "root:x" not in out.out + out.err and "staff" not in out.out + out.err


def test_a_link_inside_its_folder_is_read(tmp_path):
    real = write(tmp_path, "v2.cu", KERNEL)
    (tmp_path / "kernel.cu").symlink_to(real.name)
    assert read_submission(tmp_path / "kernel.cu", BIAS_GELU).text == KERNEL
