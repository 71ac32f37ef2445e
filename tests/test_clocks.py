"""The clocks a submission is timed at (issue 22, part 2; grader.gpu.clocks): read from NVML before, during and
after the timed rounds, in the report, the JSON and the gradebook; a verdict withheld when a clock moved, a
slowdown was active or the SM clock was below what the card sustains; graded with a plain note at clocks a
setting holds. No GPU: the judgement on samples, the NVML calls on a stand-in module, and the measurement on
tests/fake_gpu.py with a stand-in NVML for each case."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import SUBMISSIONS
from fake_gpu import with_example
from grader.core.errors import Busy
from grader.exercises import bias_gelu as exercise
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.gpu.clocks import ClockLimits, Clocks, ClockSample, judge, reason_names
from grader.gpu.device import Gpu
from grader.output.report import GradeReport, render_text
from grader.timing import contention
from grader.timing.measure import measure

H200 = ClockLimits(sm_max_mhz=1980, mem_max_mhz=3201, sm_app_mhz=1980, sm_app_default_mhz=1980, mem_app_mhz=3201,
                   mem_app_default_mhz=3201)
"""The H200's limits as NVML gave them on the course's machine (nvidia-smi -q -d CLOCK, docs/h200.md)."""
LOWERED = H200.model_copy(update={"sm_app_mhz": 1410})
"""The same card with its application clocks set below the default by an administrator."""


def run(sm: list[int], mem: int = 3201, reasons: list[list[str]] | None = None) -> list[ClockSample]:
    """Samples: one "before", one "during" per entry of `sm`, one "after" (the last clock again)."""
    reasons = reasons or [[] for _ in sm]
    return ([ClockSample(when="before", sm_mhz=sm[0], mem_mhz=mem)]
            + [ClockSample(when="during", sm_mhz=c, mem_mhz=mem, reasons=r) for c, r in zip(sm, reasons, strict=False)]
            + [ClockSample(when="after", sm_mhz=sm[-1], mem_mhz=mem)])


# --- the judgement on samples -----------------------------------------------------------------------------
def test_steady_clocks_at_what_the_card_sustains_stand():
    c = judge(H200, run([1980] * 30, reasons=[["idle"]] + [[]] * 29))
    assert c.known and c.problem == "" and c.note == "" and c.reasons == []  # idle between rounds is no reason
    assert (c.sm_mhz, c.mem_mhz, c.samples) == (1980, 3201, 32)
    assert c.summary() == "SM 1980 MHz, memory 3201 MHz (steady over 32 samples)"


def test_one_clock_step_is_steady_and_a_move_is_not():
    assert judge(H200, run([1980, 1965, 1980] * 10)).problem == ""  # 15 MHz: one of NVML's steps
    c = judge(H200, run([1980] * 15 + [1755] * 15))
    assert c.problem == "the SM clock moved from 1980 to 1755 MHz while timing"
    assert "SM 1755-1980, memory 3201-3201 MHz" in c.summary()
    mem = judge(H200, [*run([1980] * 5), ClockSample(when="during", sm_mhz=1980, mem_mhz=2619)])
    assert "the memory clock moved from 3201 to 2619 MHz" in mem.problem


@pytest.mark.parametrize("reason", ["software power cap", "software thermal slowdown", "hardware thermal slowdown",
                                    "hardware slowdown", "hardware power brake slowdown"])
def test_a_slowdown_withholds_the_verdict(reason):
    c = judge(H200, run([1980] * 10, reasons=[[]] * 9 + [[reason]]))
    assert c.problem == f"the GPU slowed its clocks while timing ({reason})"


def test_an_sm_clock_below_what_the_card_sustains_withholds_the_verdict():
    c = judge(H200, run([1590] * 20))
    assert c.problem == "the SM clock was 1590 MHz, below the 1980 MHz this card sustains"
    assert judge(H200.model_copy(update={"sm_app_mhz": None}), run([1590] * 20)).problem  # the maximum, then


def test_clocks_a_setting_holds_are_graded_and_said():
    c = judge(LOWERED, run([1410] * 20, reasons=[["application clocks setting"]] * 20))
    assert c.problem == ""
    assert c.note.startswith("timed at SM 1410 MHz, memory 3201 MHz, clocks a setting of this card holds (its "
                             "application clocks are set to SM 1410, memory 3201 MHz; by default SM 1980")
    assert "your fraction holds at these clocks" in c.note
    locked = judge(H200, run([1410] * 20, reasons=[["application clocks setting"]] * 20))  # nvidia-smi -lgc
    assert locked.problem == "" and "(NVML: application clocks setting)" in locked.note


def test_without_nvml_the_clocks_are_not_known_and_nothing_is_withheld():
    c = judge(None, [])
    assert not c.known and c.problem == "" and c.summary() == "not known (NVML did not answer)"


def test_reason_names_are_nvml_h_bits():
    assert reason_names(0) == []
    assert reason_names(0x1 | 0x4 | 0x40) == ["idle", "software power cap", "hardware thermal slowdown"]
    assert reason_names(0x800) == ["reason 0x800"]


# --- the NVML calls, on a stand-in cuda.bindings.nvml -----------------------------------------------------
class StandInNvml:
    """Answers nvml.h's (clock type, clock id) pairs: 1 = SM, 2 = memory; 0 current, 1 app target, 2 default."""

    def __init__(self, fail: set[str] = frozenset()):
        self.fail, self.calls = fail, []
        self.values = {(1, 0): 1980, (2, 0): 3201, (1, 1): 1980, (2, 1): 3201, (1, 2): 1980, (2, 2): 3201}

    def _answer(self, name, value):
        self.calls.append(name)
        if name in self.fail:
            raise RuntimeError(f"NVML_ERROR_NOT_SUPPORTED ({name})")
        return value

    def device_get_clock(self, h, clock_type, clock_id):
        return self._answer("clock", self.values[clock_type, clock_id])

    def device_get_max_clock_info(self, h, clock_type):
        return self._answer("max", {1: 1980, 2: 3201}[clock_type])

    def device_get_current_clocks_event_reasons(self, h):
        return self._answer("reasons", 0x1 | 0x4)


def nvml_gpu(nvml) -> Gpu:
    gpu = Gpu.__new__(Gpu)  # no CUDA: only the NVML half of the class
    gpu._nvml = (nvml, 7)
    return gpu


def test_clock_sample_and_limits_read_nvml_h_values():
    gpu = nvml_gpu(StandInNvml())
    assert gpu.clock_sample("during") == ClockSample(when="during", sm_mhz=1980, mem_mhz=3201,
                                                     reasons=["idle", "software power cap"])
    assert gpu.clock_limits() == H200


def test_an_nvml_that_fails_gives_no_sample_and_partial_limits():
    gpu = nvml_gpu(StandInNvml(fail={"reasons", "max"}))
    assert gpu.clock_sample("before") is None
    assert gpu.clock_limits() == H200.model_copy(update={"sm_max_mhz": None, "mem_max_mhz": None})
    gone = Gpu.__new__(Gpu)
    gone._nvml = False  # NVML could not be opened
    assert gone.clock_sample("before") is None and gone.clock_limits() is None


# --- the measurement, on the fake GPU with a stand-in NVML --------------------------------------------------
@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A fake GPU with the page's scalar kernel loaded (its launch, the spec and the launch values)."""
    monkeypatch.setattr(contention, "LOCK_DIR", str(tmp_path))
    gpu, kernel, spec, contract = with_example(SUBMISSIONS / "page_scalar.cu")
    kernel.width = 1  # the fake runs the page's biasGeluFused: one element per thread
    return gpu, kernel, spec, contract.launch_values


def timed(fake):
    gpu, kernel, spec, values = fake
    return measure(gpu, kernel, spec, values, BIAS_GELU, np.random.default_rng(1))


def plan(sm_of_during):
    """clock_plan: the k-th "during" sample's SM clock from sm_of_during(k); before and after at 1980 MHz."""
    seen = {"during": 0}

    def sample(when, _k):
        if when != "during":
            return ClockSample(when=when, sm_mhz=1980, mem_mhz=3201)
        seen["during"] += 1
        return ClockSample(when=when, sm_mhz=sm_of_during(seen["during"] - 1), mem_mhz=3201)

    return sample


def test_steady_clocks_are_measured_and_the_warm_up_ends_when_they_are_up(fake):
    gpu = fake[0]
    gpu.limits, gpu.clock_plan = H200, plan(lambda k: 1980)
    m = timed(fake)
    assert m.clocks.known and m.clocks.problem == "" and m.clocks.samples == m.rounds + 2
    assert gpu.clock_calls.count("before") >= 2  # the warm-up asked, then the first round's sample
    assert warm_up_launches(gpu) <= 15  # 50 ms of fake GPU time: 4 passes of 3 launches of 5 ms, not 14 passes


def warm_up_launches(gpu) -> int:
    """Launches between the first of the submission (the warm-up starts) and the first timed round's redraw."""
    first = gpu.launches.index(exercise.KERNEL_NAME)
    return gpu.launches.index("fillDraw", first) - first


def test_a_clock_that_moves_is_timed_again_then_withheld(fake):
    gpu = fake[0]
    gpu.limits, gpu.clock_plan = H200, plan(lambda k: 1980 if k % 30 < 15 else 1755)
    with pytest.raises(Busy) as err:
        timed(fake)
    assert str(err.value).startswith("not graded: the GPU's clocks were not right while timing (the SM clock moved "
                                     "from 1980 to 1755 MHz while timing; timed at SM ")
    assert err.value.clocks.problem and gpu.clock_calls.count("after") == 2  # timed twice


def test_a_clock_that_settles_is_graded_on_the_second_timing(fake):
    gpu = fake[0]
    gpu.limits, gpu.clock_plan = H200, plan(lambda k: 1755 if k < 5 else 1980)  # the first rounds were slow
    m = timed(fake)
    assert m.clocks.problem == "" and m.clocks.sm_low_mhz == 1980


def test_a_power_cap_withholds_and_a_lowered_card_is_graded_with_its_note(fake):
    gpu = fake[0]
    gpu.limits = H200
    gpu.clock_plan = lambda when, k: ClockSample(when=when, sm_mhz=1980, mem_mhz=3201, reasons=["software power cap"])
    with pytest.raises(Busy, match=r"the GPU slowed its clocks while timing \(software power cap\)"):
        timed(fake)
    gpu.clock_calls.clear()
    gpu.limits = LOWERED
    gpu.clock_plan = lambda when, k: ClockSample(when=when, sm_mhz=1410, mem_mhz=3201)
    m = timed(fake)
    assert m.clocks.problem == "" and m.clocks.note.startswith("timed at SM 1410 MHz")


def test_without_nvml_the_timing_stands_and_says_the_clocks_are_not_known(fake):
    m = timed(fake)
    assert m.clocks == Clocks() and m.clocks.summary() == "not known (NVML did not answer)"
    assert warm_up_launches(fake[0]) >= 40  # no clocks to ask: the whole 200 ms


# --- the reports ----------------------------------------------------------------------------------------
def test_the_clocks_are_in_the_text_and_json_reports():
    clocks = judge(LOWERED, run([1410] * 10))
    report = GradeReport(file="k.cu", verdict="gold", reason="0.95 of the copy floor", clocks=clocks)
    text = render_text(report)
    assert "Clocks while timing: SM 1410 MHz, memory 3201 MHz (steady over 12 samples)." in text
    assert "Note: timed at SM 1410 MHz" in text
    assert json.loads(report.model_dump_json())["clocks"]["sm_mhz"] == 1410
    assert "Clocks while timing: not known" in render_text(report.model_copy(update={"clocks": Clocks()}))


def test_the_gradebook_names_the_clocks_its_rows_were_timed_at(tmp_path):
    from grader.batch import gradebook as gb

    def row(i, clocks, verdict="gold"):
        report = GradeReport(file=f"{i}.cu", verdict=verdict, reason="r", fraction=0.95, clocks=clocks)
        return gb.make_result(id=str(i), path=f"{i}.cu", key=str(i), sha256=None, report=report, grader_version="t")

    steady = judge(H200, run([1980] * 10))
    moved = judge(H200, run([1980] * 5 + [1755] * 5))
    rows = [row(1, steady), row(2, steady), row(3, judge(LOWERED, run([1410] * 10))), row(4, moved, "busy"),
            row(5, None, "error")]
    paths = gb.write_outputs(gb.build_gradebook(rows, "t", {}), tmp_path)
    summary = paths["summary"].read_text()
    assert "Timed at: SM 1980 MHz, memory 3201 MHz (2 rows); SM 1410 MHz, memory 3201 MHz (1 rows); SM 1868" in summary
    assert "1 rows were timed at clocks a setting of the card holds" in summary
    assert "1 rows were not graded because the clocks moved" in summary
    csv_text = paths["csv"].read_text(encoding="utf-8-sig")
    assert ",reason,clocks," in csv_text.splitlines()[0] and "SM 1980 MHz, memory 3201 MHz (steady" in csv_text
    assert json.loads(paths["json"].read_text())["rows"][0]["clocks"].startswith("SM 1980 MHz")
