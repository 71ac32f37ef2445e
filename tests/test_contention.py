"""The shared-GPU guard (grader.timing.contention) with no GPU: interference read from timing data, the per-GPU
lock, the bounded wait for other processes, and a withheld verdict's report and exit code."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from grader import cli
from grader.core.errors import Busy
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.exercises.bias_gelu.exercise import EXERCISE as _BG  # noqa: E402
from grader.gpu.device import GpuLoad
from grader.output.report import GradeReport, render_text
from grader.source.contract import parse_contract as _parse  # noqa: E402
from grader.timing import contention
from grader.timing.contention import disturbed, gpu_turn, wait_for_quiet

PAGE_CONTRACT = _parse("", "page.cu", _BG)
"""The page's launch: nothing declared."""


def quiet(rounds: int = 40, seed: int = 0) -> dict[str, list[float]]:
    rng = np.random.default_rng(seed)
    base = {"copy": 0.47, "biasGeluFused": 0.49, "cuMemcpyDtoD": 0.47}
    return {k: list(v * (1 + 0.002 * rng.standard_normal(rounds))) for k, v in base.items()}


def test_a_quiet_timing_is_trusted():
    assert disturbed(quiet(), floor_gbs=4267, peak_gbs=4915) == []


def test_a_row_with_a_wide_spread_is_not():
    t = quiet()
    t["biasGeluFused"][::2] = [3.3 * v for v in t["biasGeluFused"][::2]]
    reasons = disturbed(t, 4267, 4915)
    assert len(reasons) == 1 and "biasGeluFused row's spread was" in reasons[0]


def test_rounds_where_everything_slowed_are_not():
    t = quiet()
    for name in t:
        for k in range(0, 40, 5):  # 8 of 40 rounds, every launch 30% slower: a neighbour's bursts
            t[name][k] *= 1.3
    reasons = disturbed(t, 4267, 4915)
    assert any("in 8 of 40 rounds every launch ran 10% or more slower" in r for r in reasons)
    t = quiet()
    for k in range(0, 40, 20):  # 2 of 40 rounds: within what a quiet GPU shows
        for name in t:
            t[name][k] *= 1.3
    assert disturbed(t, 4267, 4915) == []


def test_a_floor_far_below_the_card_is_not():
    reasons = disturbed(quiet(), floor_gbs=1100, peak_gbs=4915)
    assert reasons == ["the copy floor reached only 1100 GB/s, 0.22 of this card's peak 4915 GB/s"]
    assert disturbed(quiet(), floor_gbs=1100, peak_gbs=None) == []  # no peak known: no such check


class FakeClock:
    """Stands in for the `time` module: monotonic() is the sum of the sleeps so far."""

    def __init__(self):
        self.now, self.sleeps = 0.0, 0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
        self.sleeps += 1


class StubGpu:
    def __init__(self, loads=()):
        self.loads = list(loads)

    def uuid(self):
        return "GPU-1234/../x"

    def load_now(self):
        return self.loads.pop(0) if len(self.loads) > 1 else (self.loads[0] if self.loads else None)


def test_gradings_on_one_gpu_take_turns(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(contention, "LOCK_DIR", str(tmp_path))
    gpu, events = StubGpu(), []

    def other():
        with gpu_turn(gpu):
            events.append("other in")
            time.sleep(0.5)
            events.append("other out")

    t = threading.Thread(target=other)
    t.start()
    time.sleep(0.1)
    with gpu_turn(gpu):
        events.append("me in")
    t.join()
    assert events == ["other in", "other out", "me in"]
    assert "waiting for its turn" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["biasgelu-grader-GPU-1234____x.lock"]


def test_a_turn_that_never_comes_withholds(tmp_path, monkeypatch):
    monkeypatch.setattr(contention, "LOCK_DIR", str(tmp_path))
    gpu = StubGpu()
    with gpu_turn(gpu):
        with pytest.raises(Busy, match="another grading held this GPU for over 0 s"):
            with gpu_turn(gpu, wait_s=0.3):
                pass


def test_wait_for_quiet_is_bounded_and_says_so(monkeypatch, capsys):
    monkeypatch.setattr(contention, "POLL_S", 0.01)
    busy = GpuLoad(processes=["pid 7 (stream, 4.0 GiB)"], utilization=100)
    assert wait_for_quiet(StubGpu([busy, busy, GpuLoad()]), wait_s=5).processes == []
    assert "in use by pid 7 (stream, 4.0 GiB) (100% utilization)" in capsys.readouterr().err
    clock = FakeClock()  # the wait is bounded by its own clock, checked without a clock limit on the test
    monkeypatch.setattr(contention, "time", clock)
    assert wait_for_quiet(StubGpu([busy]), wait_s=0.2) is busy
    assert clock.sleeps in (20, 21) and clock.now == pytest.approx(0.2, abs=0.011)  # 0.2 s of 0.01 s polls
    assert wait_for_quiet(StubGpu([]), wait_s=5) is None  # no NVML: no wait


def test_a_withheld_verdict_shows_no_number_and_exits_5(monkeypatch, capsys):
    from grader.core.errors import Busy
    from grader.pipeline.grade import Outcome, assemble
    from grader.source.read import read_submission
    from grader.timing.measure import busy_reason

    why = busy_reason(["the copy row's spread was 330% (a quiet GPU gives under 5%)"],
                      GpuLoad(processes=["pid 7 (stream, 4.0 GiB)"], utilization=97))
    r = assemble(Outcome(file="s.cu", sub=read_submission("submissions/gold_float4.cu", BIAS_GELU), seed=1,
                         stopped=Busy(why)))
    assert r.verdict == "busy" and r.fraction is None and r.table == [] and r.floor_gbs is None
    assert r.reason.startswith("not graded: the GPU was busy (the copy row's spread was 330%")
    assert "other processes: pid 7 (stream, 4.0 GiB) (97% utilization)" in r.reason and "run again" in r.reason
    assert "0.14" not in render_text(r) and "330%" in render_text(r)
    import grader.pipeline.grade as g

    monkeypatch.setattr(g, "grade_file", lambda *a, **k: r)
    assert cli.main(["submissions/gold_float4.cu"]) == 5
    assert "Verdict: BUSY: not graded" in capsys.readouterr().out


def test_a_block_larger_than_the_kernel_allows_is_explained():
    from types import SimpleNamespace

    from grader.core.errors import SubmissionError
    from grader.pipeline.grade import _compile_summary, check_launch_fits

    limits = {"max_threads_per_block": 128, "num_regs": 40, "local_size_bytes": 0}
    with pytest.raises(SubmissionError) as err:
        check_launch_fits(limits, PAGE_CONTRACT)
    assert err.value.stage == "launch"
    assert "allows at most 128 threads per block" in str(err.value) and "uses 256" in str(err.value)
    assert "`// grade: block = 128`" in str(err.value)
    silent = SimpleNamespace(registers=None, spill_stores=None, spill_loads=None, stack_frame=None)
    compiled = SimpleNamespace(kernels={"biasGeluFused": silent}, warnings=[], warnings_dropped=0, log="")
    r = GradeReport(file="s.cu", verdict="error", reason="", compile=_compile_summary(compiled, "sm_90", limits))
    assert r.compile.registers == 40 and r.compile.local_bytes == 0  # from the driver, ptxas said nothing
    check_launch_fits({"max_threads_per_block": 1024}, PAGE_CONTRACT)  # fits: no error
    assert "40 registers" in render_text(r) and "None" not in render_text(r)
