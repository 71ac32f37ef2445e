"""The NVRTC sandbox (grader.compile.sandbox): with the include filter bypassed, Landlock alone keeps every leak case
of tests/data/leaks from reading a file, while the same cases, compiled unconfined, do read it.

The target is a canary file made for the test (never a real system file): its unique text must not reach
any output. Skipped, with the reason, where Landlock is not available (CI and the GPU machine have ABI 7).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from grader.compile import sandbox
from grader.compile.nvrtc import _compile, compile_kernels
from grader.core.errors import SandboxError, SubmissionError
from grader.exercises import bias_gelu as exercise
from grader.source.prelude import PRELUDE

LEAKS = sorted((Path(__file__).parent / "data" / "leaks").glob("*.cu"))
CANARY = "CANARY_5f1d0c_do_not_print"
KERNEL = "__global__ void biasGeluFused(const float* x, const float* b, float* o, size_t c) {}\n"

needs_landlock = pytest.mark.skipif(not sandbox.state().available,
                                    reason=f"no Landlock here: {sandbox.state().reason}")


@pytest.fixture
def canary(tmp_path: Path) -> Path:
    path = tmp_path / "canary.h"
    path.write_text(f"{CANARY} line one\nint {CANARY}_two;\n")
    return path


def _raw(case: Path, canary: Path) -> str:
    """The leak case aimed at the canary, as NVRTC would get it with no include filter at all."""
    text = case.read_bytes().decode("utf-8", "replace").replace("/etc/passwd", str(canary))
    return PRELUDE + '#line 1 "s.cu"\n' + text + ("" if exercise.KERNEL_NAME in text else KERNEL)


def _output(run, text: str) -> str:
    try:
        compiled = run(text, "s.cu", (exercise.KERNEL_NAME,), "sm_90")
        return compiled.log + "\n".join(compiled.warnings)
    except SubmissionError as err:
        return str(err) + "\n" + err.details


@needs_landlock
def test_the_sandbox_alone_stops_every_leak_case(canary):
    leaked = [c.name for c in LEAKS if CANARY in _output(compile_kernels, _raw(c, canary))]
    assert leaked == []


@needs_landlock
def test_without_the_sandbox_the_same_cases_do_leak(canary):
    # The control: the canary is readable and these cases do reach it when NVRTC is unconfined, so the test
    # above can fail.
    def unconfined(*job):
        return sandbox._run_in_thread(_compile, None, *job)

    leaked = [c.name for c in LEAKS if CANARY in _output(unconfined, _raw(c, canary))]
    assert leaked


@needs_landlock
@pytest.mark.parametrize("include", ['#include "{p}"', "#include <{p}>", '#include "canary.h"',
                                     '#define F "{p}"\n#include F'])
def test_a_stopped_include_names_the_file_never_its_content(canary, include, monkeypatch):
    monkeypatch.chdir(canary.parent)  # a relative name must not be found in the working folder either
    with pytest.raises(SubmissionError) as err:
        compile_kernels(PRELUDE + '#line 1 "s.cu"\n' + include.format(p=canary) + "\n" + KERNEL, "s.cu",
                        (exercise.KERNEL_NAME,), "sm_90")
    shown = str(err.value) + err.value.details
    assert CANARY not in shown
    assert "s.cu:" in shown and "may not open" in shown and "remove the #include" in shown


@needs_landlock
def test_state_names_only_nvrtc_builtins():
    st = sandbox.state()
    assert st.abi >= 1 and st.allowed
    assert all(Path(p).name.startswith("libnvrtc-builtins") for p in st.allowed)
    assert st.describe().startswith(f"landlock ABI {st.abi}: NVRTC may read only libnvrtc-builtins")


@needs_landlock
def test_confinement_ends_with_its_thread(canary):
    def read_inside():
        return canary.read_text()

    with pytest.raises(PermissionError):
        sandbox.confined(read_inside)
    assert CANARY in canary.read_text()  # this thread, and every later one, is not confined
    box = []
    t = threading.Thread(target=lambda: box.append(canary.read_text()))
    t.start()
    t.join()
    assert CANARY in box[0]


def test_confined_returns_the_result_and_raises_the_error():
    assert sandbox.confined(lambda a, b=0: a + b, 2, b=3) == 5
    with pytest.raises(ZeroDivisionError):
        sandbox.confined(lambda: 1 / 0)


def test_without_landlock_require_refuses_and_confined_runs_unconfined(monkeypatch):
    off = sandbox.SandboxState(False, 0, "Landlock is Linux-only (this is test)")
    monkeypatch.setattr(sandbox, "state", lambda: off)
    monkeypatch.setattr(sandbox, "_required", False)
    assert sandbox.confined(lambda: 7) == 7
    assert off.describe() == "off: Landlock is Linux-only (this is test)"
    with pytest.raises(SandboxError, match="not available: Landlock is Linux-only"):
        sandbox.require()
    monkeypatch.setattr(sandbox, "_required", True)
    with pytest.raises(SandboxError):
        sandbox.confined(lambda: 7)
