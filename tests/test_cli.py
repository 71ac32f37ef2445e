"""The `grade` command's exit codes and messages on a machine without a GPU (CI)."""

import json

import pytest

from grader.cli import main
from grader.device import open_gpu
from grader.errors import EXIT_FAIL, EXIT_INPUT, EXIT_NO_GPU, NoGpuError

from conftest import SUBMISSIONS


def has_gpu() -> bool:
    try:
        open_gpu()
        return True
    except NoGpuError:
        return False


no_gpu_only = pytest.mark.skipif(has_gpu(), reason="checks the no-GPU path; this machine has a GPU")


def test_missing_file_is_input_error(capsys):
    assert main(["does/not/exist.cu"]) == EXIT_INPUT
    assert "no such file" in capsys.readouterr().err


def test_no_arguments_is_usage_error(capsys):
    assert main([]) == EXIT_INPUT
    assert "give a .cu file" in capsys.readouterr().err


def test_bad_grade_block_is_input_error(tmp_path, capsys):
    p = tmp_path / "s.cu"
    p.write_text("// grade: block = 100\n__global__ void biasGeluFused() {}\n")
    assert main([str(p)]) == EXIT_INPUT
    assert "s.cu:1: block: 100 is not a multiple of 32" in capsys.readouterr().err


def test_compile_error_is_a_fail_with_file_line(capsys):
    assert main([str(SUBMISSIONS / "compile_error.cu")]) == EXIT_FAIL
    out = capsys.readouterr().out
    assert "Verdict: ERROR" in out and "compile_error.cu:6: error:" in out


def test_parameter_mismatch_prints_both_lists(tmp_path, capsys):
    p = tmp_path / "s.cu"
    p.write_text("__global__ void biasGeluFused(const float* x, float* out, size_t cols) {}\n")
    assert main([str(p)]) == EXIT_FAIL
    out = capsys.readouterr().out
    assert "kernel:   biasGeluFused(const float* x, float* out, size_t cols)" in out
    assert "expected: biasGeluFused(const float* x, const float* bias, float* out, int|size_t cols)" in out


@no_gpu_only
def test_no_gpu_gives_exit_3_and_one_line_reason(capsys):
    assert main([str(SUBMISSIONS / "gold_float4.cu")]) == EXIT_NO_GPU
    verdict = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Verdict:")]
    assert len(verdict) == 1 and "no GPU" in verdict[0]


@no_gpu_only
def test_json_output_is_one_report(capsys):
    assert main([str(SUBMISSIONS / "gold_float4.cu"), "--json"]) == EXIT_NO_GPU
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "no-gpu" and report["compile"]["arch"] == "sm_90"
    assert report["contract"]["row"]["gbs"] == 4124.5


def test_json_schema(capsys):
    assert main(["--json-schema"]) == 0
    assert "GradeReport" in json.loads(capsys.readouterr().out)["title"]



def test_gradescope_format(capsys):
    assert main([str(SUBMISSIONS / "compile_error.cu"), "--format", "gradescope"]) == EXIT_FAIL
    results = json.loads(capsys.readouterr().out)
    assert results["score"] == 0 and results["tests"][0]["status"] == "failed"
    assert "compile_error.cu:6" in results["tests"][0]["output"]


def test_gradescope_refusal_for_unreadable_input(capsys):
    assert main(["missing.cu", "--format", "gradescope"]) == EXIT_INPUT
    results = json.loads(capsys.readouterr().out)
    assert results["score"] == 0 and "no such file" in results["output"]


def test_refused_include_is_a_report_with_verdict_error(tmp_path, capsys):
    p = tmp_path / "s.cu"
    p.write_text('#include "/etc/passwd"\n__global__ void biasGeluFused(const float* x, const float* b, float* o, '
                 'size_t c) {}\n')
    assert main([str(p), "--json"]) == EXIT_FAIL
    report = json.loads(capsys.readouterr().out)
    assert (report["verdict"], report["stage"]) == ("error", "source")
    assert "s.cu:1: refused `#include`" in report["reason"]


@pytest.mark.parametrize("arch", ["sm90", "90", "compute_90", "sm_9", "sm_1000", "SM_90", "sm_90 ", "sm_90ab"])
def test_bad_arch_is_a_usage_error(arch, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["x.cu", "--arch", arch])
    assert exit_.value.code == EXIT_INPUT and "--arch" in capsys.readouterr().err


@pytest.mark.parametrize("arch", ["sm_90", "sm_90a", "sm_100a", "sm_120"])
def test_good_arch_reaches_the_grader(arch, capsys):
    assert main(["does/not/exist.cu", "--arch", arch]) == EXIT_INPUT
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize("seed", ["-1", str(2**63), "1.5", "abc"])
def test_bad_seed_is_a_usage_error(seed, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["x.cu", f"--seed={seed}"])
    assert exit_.value.code == EXIT_INPUT and "--seed" in capsys.readouterr().err


@pytest.mark.parametrize("seed", ["0", str(2**63 - 1)])
def test_seed_range_ends_are_accepted(seed, capsys):
    assert main(["does/not/exist.cu", "--seed", seed]) == EXIT_INPUT


def test_json_format_reports_an_input_error_as_one_json_object(capsys):
    assert main(["does/not/exist.cu", "--format", "json"]) == EXIT_INPUT
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["verdict"] == "error" and report["stage"] == "input" and report["file"] == "does/not/exist.cu"
    assert "no such file" in report["reason"] and "no such file" in captured.err


def test_json_format_reports_a_malformed_grade_block(tmp_path, capsys):
    p = tmp_path / "s.cu"
    p.write_text("// Grade: grid = flat\n__global__ void biasGeluFused() {}\n")
    assert main([str(p), "--json"]) == EXIT_INPUT
    report = json.loads(capsys.readouterr().out)
    assert report["stage"] == "input" and "s.cu:1:" in report["reason"]


def test_text_format_input_error_prints_nothing_on_stdout(capsys):
    assert main(["does/not/exist.cu"]) == EXIT_INPUT
    assert capsys.readouterr().out == ""


def _closed_reader(*args):
    """Run `grade ARGS` with a stdout pipe whose reader is gone before anything is written (`| head -0`)."""
    import subprocess
    import sys

    code = "import sys; from grader.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=120), err


def test_closed_pipe_is_not_a_traceback():
    rc, err = _closed_reader("--json-schema")
    assert rc == 0 and "BrokenPipe" not in err and "Traceback" not in err, err
    rc, err = _closed_reader(str(SUBMISSIONS / "compile_error.cu"))
    assert rc == EXIT_FAIL and "BrokenPipe" not in err and "Traceback" not in err, err


def test_open_pipe_still_gets_the_output():
    import subprocess
    import sys

    code = "import sys; from grader.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run([sys.executable, "-c", code, "--json-schema"], capture_output=True, timeout=120)
    assert done.returncode == 0 and "GradeReport" in json.loads(done.stdout)["title"]
