"""Errors that blame the right party (issue 9, part 2), with no GPU needed: an install without its CUDA extra,
an architecture the installed NVRTC cannot compile for (or a GPU older than it supports), and a failure of a
CUDA call of the grader's own. None of them may be reported as the student's compile error or fault."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest
from cuda.bindings import driver, nvrtc

import grader.pipeline.grade
from conftest import ROOT, SUBMISSIONS
from fake_gpu import FakeGpu
from grader.batch import command as batch
from grader.batch import gpus, pool, worker
from grader.batch.protocol import Job
from grader.cli import main
from grader.compile import toolkit
from grader.core.errors import (
    EXIT_GRADER,
    EXIT_INPUT,
    GraderFault,
    InputError,
    InstallError,
    NoGpuError,
    SubmissionError,
)
from grader.gpu.device import KERNEL_FAULTS, Gpu, grader_call_failed

GOLD = str(SUBMISSIONS / "gold_float4.cu")
HIDE_BINDINGS = "import sys; sys.modules['cuda.bindings'] = None; "
"""Prefix of a `python -c` program that runs as on an install without cuda-bindings (`pip install .` with an
older cuda-core, or the extra's packages removed)."""


def run_python(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def no_nvrtc_library():
    raise RuntimeError('Failure finding "libnvrtc.so.13 or libnvrtc.so.12": No such file')


def assert_install_line(err: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert 'pip install ".[cu13]"' in lines[0] and '".[cu12]"' in lines[0] and "nvidia-smi" in lines[0]
    assert "Traceback" not in err and "compile error" not in err


# --- an install without its CUDA extra -------------------------------------------------------------------
def test_install_without_cuda_bindings_is_one_line_and_exit_4():
    r = run_python(HIDE_BINDINGS + "from grader.cli import main; sys.exit(main(sys.argv[1:]))", GOLD)
    assert r.returncode == EXIT_GRADER and r.stdout == ""
    assert_install_line(r.stderr)
    assert "cuda-bindings cannot be imported" in r.stderr


def test_install_without_the_nvrtc_library_is_one_line_and_exit_4(monkeypatch, capsys):
    monkeypatch.setattr(nvrtc, "nvrtcVersion", no_nvrtc_library)
    assert main([GOLD]) == EXIT_GRADER
    captured = capsys.readouterr()
    assert captured.out == ""
    assert_install_line(captured.err)
    assert "NVRTC library (libnvrtc.so.13 or libnvrtc.so.12) was not found" in captured.err


def test_selfcheck_without_cuda_bindings_is_one_line_and_exit_4():
    r = run_python(HIDE_BINDINGS + "from grader.cli import main; sys.exit(main(sys.argv[1:]))", "selfcheck")
    assert r.returncode == EXIT_GRADER and r.stdout == ""
    assert_install_line(r.stderr)
    assert r.stderr.startswith("grade selfcheck: ") and "cuda-bindings cannot be imported" in r.stderr


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_selfcheck_without_the_nvrtc_library_is_one_line_and_exit_4(json_flag, monkeypatch, capsys):
    monkeypatch.setattr(nvrtc, "nvrtcVersion", no_nvrtc_library)
    assert main(["selfcheck", *json_flag]) == EXIT_GRADER
    captured = capsys.readouterr()
    assert captured.out == ""
    assert_install_line(captured.err)
    assert "NVRTC library (libnvrtc.so.13 or libnvrtc.so.12) was not found" in captured.err


def test_install_error_in_json_and_gradescope_is_not_a_grade(monkeypatch, capsys):
    monkeypatch.setattr(nvrtc, "nvrtcVersion", no_nvrtc_library)
    assert main([GOLD, "--json"]) == EXIT_GRADER
    report = json.loads(capsys.readouterr().out)
    assert (report["verdict"], report["stage"]) == ("error", "install")
    assert main([GOLD, "--format", "gradescope"]) == EXIT_GRADER
    results = json.loads(capsys.readouterr().out)
    assert results["output"].startswith("not graded:") and results["extra_data"] == {"graded": False}
    assert all(t["max_score"] == 0 for t in results["tests"])


def test_the_api_raises_install_error(monkeypatch):
    monkeypatch.setattr(nvrtc, "nvrtcVersion", no_nvrtc_library)
    with pytest.raises(InstallError) as err:
        grader.pipeline.grade.grade_file(GOLD)
    assert err.value.exit_code == EXIT_GRADER and err.value.stage == "install"


def test_batch_on_an_incomplete_install_stops_with_exit_4_and_no_rows(tmp_path, monkeypatch, capsys):
    probe = HIDE_BINDINGS + "import json; from grader.batch.worker import probe; print(json.dumps(probe()))"
    monkeypatch.setattr(gpus, "PROBE_COMMAND", [sys.executable, "-c", probe])
    cls = tmp_path / "class"
    cls.mkdir()
    for name in ("alice", "bob"):
        (cls / f"{name}.cu").write_text((SUBMISSIONS / "gold_float4.cu").read_text())
    out = tmp_path / "out"
    assert batch.main(["batch", str(cls), "--out", str(out), "--quiet"]) == batch.EXIT_INCOMPLETE == EXIT_GRADER
    err = capsys.readouterr().err
    assert "install is incomplete" in err and 'pip install ".[cu13]"' in err and "nothing was graded" in err
    assert not out.exists() or not any(out.iterdir())  # no results.jsonl, no gradebook: no error rows


def test_a_worker_on_an_incomplete_install_never_becomes_ready(tmp_path, monkeypatch, capsys):
    code = HIDE_BINDINGS + "from grader.batch.worker import main; sys.exit(main(sys.argv[1:]))"
    monkeypatch.setattr(pool, "WORKER_COMMAND", [sys.executable, "-c", code])
    monkeypatch.setattr(gpus, "run_probe", lambda: {"count": 0, "names": [], "reason": "test: no GPU"})
    cls = tmp_path / "class"
    cls.mkdir()
    (cls / "alice.cu").write_text((SUBMISSIONS / "gold_float4.cu").read_text())
    out = tmp_path / "out"
    assert batch.main(["batch", str(cls), "--out", str(out), "--quiet"]) == batch.EXIT_INCOMPLETE
    err = capsys.readouterr().err
    assert "failed to start" in err and "install is incomplete" in err and "exit code 4" in err
    assert (out / "results.jsonl").read_text() == ""


# --- architectures the installed NVRTC cannot compile for ------------------------------------------------
@pytest.mark.parametrize("arch", ["sm_35", "sm_70", "sm_999", "sm_91"])
def test_unsupported_arch_is_a_usage_error_with_the_list(arch, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([GOLD, "--arch", arch])
    err = capsys.readouterr().err
    assert exit_.value.code == EXIT_INPUT
    supported = toolkit.supported_archs()
    assert f"sm_{supported[0]}" in err and f"sm_{supported[-1]}" in err and "compile error" not in err
    if int(arch[3:]) < supported[0] and int(toolkit.nvrtc_version().split(".")[0]) >= 13:
        assert 'pip install ".[cu12]"' in err


def test_unsupported_arch_is_refused_by_batch_too(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        batch.main(["batch", GOLD, "--arch", "sm_35", "--out", str(tmp_path / "out")])
    assert exit_.value.code == EXIT_INPUT and "sm_35" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_arch_variant_nvrtc_refuses_is_an_input_error():
    with pytest.raises(InputError, match=r"cannot compile for sm_80a.*plain sm_80"):
        toolkit.check_arch("sm_80a")
    toolkit.check_arch("sm_90a")  # a real variant passes


def test_the_api_refuses_an_unsupported_arch_before_compiling(monkeypatch):
    monkeypatch.setattr(grader.pipeline.grade, "compile_kernels", lambda *a: pytest.fail("compiled for a refused arch"))
    monkeypatch.setattr(grader.pipeline.grade, "open_gpu", _no_gpu)  # --arch is the target only where there is no GPU
    with pytest.raises(InputError, match="sm_70"):
        grader.pipeline.grade.grade_file(GOLD, arch="sm_70")


def _no_gpu(device_id: int = 0):
    raise NoGpuError("no NVIDIA driver on this machine (test)")


def old_gpu() -> FakeGpu:
    gpu = FakeGpu()
    gpu.info = gpu.info.model_copy(update={"name": "Tesla V100-SXM2-16GB", "compute_capability": "7.0",
                                           "arch": "sm_70"})
    return gpu


def test_a_gpu_older_than_nvrtc_supports_is_exit_2_before_compiling(monkeypatch, capsys):
    if toolkit.supported_archs()[0] <= 70:
        pytest.skip("this NVRTC (cu12) compiles for sm_70")
    monkeypatch.setattr(grader.pipeline.grade, "open_gpu", lambda device_id=0: old_gpu())
    monkeypatch.setattr(grader.pipeline.grade, "compile_kernels", lambda *a: pytest.fail("compiled for an old GPU"))
    assert main([GOLD]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert "this GPU (Tesla V100-SXM2-16GB, sm_70) is older than" in err and 'pip install ".[cu12]"' in err


def test_the_batch_probe_stops_on_a_gpu_nvrtc_cannot_compile_for(monkeypatch, tmp_path, capsys):
    if toolkit.supported_archs()[0] <= 70:
        pytest.skip("this NVRTC (cu12) compiles for sm_70")
    import grader.gpu.device

    monkeypatch.setattr(grader.gpu.device, "visible_gpus", lambda: ["Tesla V100-SXM2-16GB"])
    monkeypatch.setattr(grader.gpu.device, "visible_arches", lambda: ["sm_70"])
    info = worker.probe()
    assert info["count"] == 1 and info["exit"] == EXIT_INPUT and "sm_70" in info["problem"]
    monkeypatch.setattr(gpus, "run_probe", lambda: info)
    assert batch.main(["batch", GOLD, "--out", str(tmp_path / "out"), "--quiet"]) == EXIT_INPUT
    assert "is older than" in capsys.readouterr().err and not (tmp_path / "out").exists()


# --- the grader's own CUDA calls -------------------------------------------------------------------------
def bare_gpu() -> Gpu:
    gpu = Gpu.__new__(Gpu)  # no device: only _call is exercised
    gpu._driver = driver
    return gpu


def test_a_failed_driver_call_of_the_grader_is_the_graders_error():
    with pytest.raises(GraderFault) as err:
        bare_gpu()._call((driver.CUresult.CUDA_ERROR_OUT_OF_MEMORY, None), "cuMemGetInfo")
    assert err.value.exit_code == EXIT_GRADER and err.value.stage == "grader"
    assert "cuMemGetInfo" in str(err.value) and "CUDA_ERROR_OUT_OF_MEMORY" in str(err.value)
    assert "not the submission's doing" in str(err.value)
    assert bare_gpu()._call((driver.CUresult.CUDA_SUCCESS, 7), "x") == 7


def test_a_fault_the_kernel_left_behind_is_still_the_submissions():
    with pytest.raises(SubmissionError) as err:
        bare_gpu()._call((driver.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS, None), "cuMemcpyDtoHAsync")
    assert err.value.stage == "run" and "the kernel faulted on the GPU: CUDA_ERROR_ILLEGAL_ADDRESS" in str(err.value)
    assert all(name in driver.CUresult.__members__ for name in KERNEL_FAULTS)
    assert isinstance(grader_call_failed("allocating", RuntimeError("CUDA_ERROR_OUT_OF_MEMORY: out of memory")),
                      GraderFault)


def test_cli_reports_a_grader_fault_as_exit_4_not_a_fail(monkeypatch, capsys):
    def failing(*args, **kwargs):
        raise grader_call_failed("allocating 1 bytes", "CUDA_ERROR_OUT_OF_MEMORY")

    monkeypatch.setattr(grader.pipeline.grade, "grade_file", failing)
    assert main([GOLD, "--json"]) == EXIT_GRADER
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert (report["verdict"], report["stage"]) == ("error", "grader") and "not the submission" in captured.err


def _grade_job(tmp_path, monkeypatch, error: Exception) -> dict:
    """grader.batch.worker.grade_job on a copy of the gold example, grade_file raising `error`: the result message."""
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "s.cu"
    src.write_bytes((SUBMISSIONS / "gold_float4.cu").read_bytes())

    def failing(*args, **kwargs):
        raise error

    monkeypatch.setattr(grader.pipeline.grade, "grade_file", failing)
    r, w = os.pipe()
    job = Job(path=str(src), sha256=hashlib.sha256(src.read_bytes()).hexdigest(), name="s.cu", display="s.cu")
    worker.grade_job(job, worker.Channel(w))
    os.close(w)
    with os.fdopen(r) as f:
        return json.loads(f.readline())["report"]


def test_worker_rows_blame_the_grader_for_its_own_calls(tmp_path, monkeypatch):
    report = _grade_job(tmp_path, monkeypatch, grader_call_failed("cuMemsetD32Async", "CUDA_ERROR_OUT_OF_MEMORY"))
    assert (report["verdict"], report["stage"]) == ("error", "grader") and "faulted" not in report["reason"]
    report = _grade_job(tmp_path, monkeypatch, RuntimeError("CUDA_ERROR_OUT_OF_MEMORY: out of memory"))
    assert report["stage"] == "grader" and "please report it" in report["reason"]
    report = _grade_job(tmp_path, monkeypatch, RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal access"))
    assert report["stage"] == "run" and "the kernel faulted on the GPU: CUDA_ERROR_ILLEGAL_ADDRESS" in report["reason"]


def test_no_gpu_is_still_exit_3_not_a_grader_fault(monkeypatch):
    def no_gpu(device_id=0):
        raise NoGpuError("test: no driver")

    monkeypatch.setattr(grader.pipeline.grade, "open_gpu", no_gpu)
    assert grader.pipeline.grade.grade_file(GOLD).verdict == "no-gpu"
