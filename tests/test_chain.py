"""The exercise's chain (grader.exercises.bias_gelu.chain) on the CPU stand-in GPU: the student's two part-3 rows beside
the page's staged and fused chains and the copies, with their byte counts; the report shows them, never grades them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_gpu import FakeGpu  # noqa: E402
from grader.compile.nvrtc import compile_kernels  # noqa: E402
from grader.exercises.bias_gelu.chain import YOURS, YOURS_CHAIN, chain_table  # noqa: E402
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.exercises.bias_gelu.exercise import EXERCISE as _BG  # noqa: E402
from grader.output.report import GradeReport, render_text  # noqa: E402
from grader.source.contract import parse_contract as _parse  # noqa: E402
from grader.source.read import read_submission  # noqa: E402
from grader.timing import contention  # noqa: E402
from grader.timing.timer import TimerSettings  # noqa: E402

PAGE_CONTRACT = _parse("", "page.cu", _BG)
"""The page's launch: nothing declared."""
PAGE_VALUES = lambda ptrs, rows, cols: PAGE_CONTRACT.launch_values(ptrs, _BG.problem((rows, cols)))  # noqa: E731

QUICK = TimerSettings(warmup_ms=0.0, min_reps=3, target_rse=1.0, cap_s=0.5)


@pytest.fixture
def gpu(tmp_path, monkeypatch):
    monkeypatch.setattr(contention, "LOCK_DIR", str(tmp_path))
    fake = FakeGpu(l2_bytes=1 << 16, free_bytes=1 << 28)
    fake.uuid = lambda: "GPU-fake"
    return fake


def test_the_students_rows_sit_beside_the_pages_chains(gpu, monkeypatch):
    import grader.exercises.bias_gelu.chain as chain

    monkeypatch.setattr(chain, "disturbed", lambda *a: [])  # the stand-in's clock is not a GPU's
    sub = read_submission("submissions/gold_float4.cu", BIAS_GELU)
    kernel = gpu.load(compile_kernels(sub.compile_text, sub.name, ("biasGeluFused",), "sm_90"))["biasGeluFused"]
    spec = PAGE_CONTRACT.launch_spec((8, 8, 8, 8))
    table = chain_table(gpu, kernel, spec, PAGE_VALUES, BIAS_GELU, QUICK)
    model = {r.version: (r.kernels, r.floats_per_elem, r.is_floor) for r in table.rows}
    assert model[YOURS] == (1, 2, False) and model[YOURS_CHAIN] == (2, 5, False)
    assert model["staged chain<4>"] == (3, 7, False) and model["fused chain<4>"] == (1, 3, False)
    assert sum(r.is_floor for r in table.rows) == 3 and table.matrix is not None
    assert "addResidual<4>" in gpu.launches and "biasGeluResidualFused<4>" in gpu.launches
    report = GradeReport(file="s.cu", verdict="gold", stage="grade", reason="0.96", chain=table)
    text = render_text(report)
    assert "Your part-3 rows" in text and "biasGeluFused + addResidual" in text and "not graded" in text


def test_a_disturbed_chain_is_a_note_not_a_table(gpu, monkeypatch):
    import grader.exercises.bias_gelu.chain as chain
    from grader.core.errors import Busy

    monkeypatch.setattr(chain, "disturbed", lambda *a: ["the copy row's spread was 40%"])
    sub = read_submission("submissions/gold_float4.cu", BIAS_GELU)
    kernel = gpu.load(compile_kernels(sub.compile_text, sub.name, ("biasGeluFused",), "sm_90"))["biasGeluFused"]
    with pytest.raises(Busy, match="chain's timing was disturbed"):
        chain_table(gpu, kernel, PAGE_CONTRACT.launch_spec((8, 8, 8, 8)), PAGE_VALUES, BIAS_GELU, QUICK)
    text = render_text(GradeReport(file="s.cu", verdict="gold", stage="grade", reason="0.96",
                                   chain_note="the exercise's chain is not shown: busy"))
    assert "Note: the exercise's chain is not shown" in text and "Your part-3 rows" not in text


def test_the_students_chain_rows_are_checked_every_round(gpu, monkeypatch):
    # Its part-3 rows are printed as its measurement: a kernel that skips work in the chain fails the submission.
    import numpy as np

    import grader.exercises.bias_gelu.chain as chain
    from grader.core.errors import WrongOutput

    monkeypatch.setattr(chain, "disturbed", lambda *a: [])
    sub = read_submission("submissions/gold_float4.cu", BIAS_GELU)
    kernel = gpu.load(compile_kernels(sub.compile_text, sub.name, ("biasGeluFused",), "sm_90"))["biasGeluFused"]
    spec = PAGE_CONTRACT.launch_spec((8, 8, 8, 8))
    real = gpu._k_biasGeluFused

    def lazy_in_front_of_the_residual(k, grid, block, x, bias, out, cols):
        if out != chain_out["y_t1"]:  # only the row's own launch does the work
            real(k, grid, block, x, bias, out, cols)

    chain_out = {}
    original_alloc = gpu.alloc

    def remember(nbytes):
        buf = original_alloc(nbytes)
        chain_out.setdefault("order", []).append(buf.ptr)
        if len(chain_out["order"]) == 7:  # x, r, t1, t2, out, y_out, y_t1
            chain_out["y_t1"] = buf.ptr
        return buf

    monkeypatch.setattr(gpu, "alloc", remember)
    monkeypatch.setattr(gpu, "_k_biasGeluFused", lazy_in_front_of_the_residual)
    with pytest.raises(WrongOutput,
                       match=r"wrong output of the chain's round \d+ \(row biasGeluFused \+ addResidual\)"):
        chain_table(gpu, kernel, spec, PAGE_VALUES, BIAS_GELU, QUICK, rng=np.random.default_rng(1))
