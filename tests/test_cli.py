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
