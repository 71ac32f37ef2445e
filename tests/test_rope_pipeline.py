"""The harness grading the RoPE exercise end to end on the CPU stand-in GPU (tests/rope_twins.py's RopeFakeGpu runs
the page's ropeInterleaved and checkRope as numpy code): the contract, the verification at every size with its
fenced reruns, and the timed launches checked on the (stand-in) GPU, all through the same code as biasGeluFused.
The stand-in computes the right RoPE whatever the source says, so wrong kernels are tested by their numpy twins
(tests/test_rope_exercise.py) and on the GPU (tests/test_rope_gpu.py)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import SUBMISSIONS
from grader import exercises
from grader.check.verify import fences, verify
from grader.compile.nvrtc import compile_kernels
from grader.source.read import read_submission
from grader.timing import contention
from grader.timing.measure import measure
from rope_twins import RopeFakeGpu

ROPE = exercises.get("rope")


def loaded(name: str, width: int):
    """(gpu, kernel, spec, contract) of submissions/rope/`name` on a RopeFakeGpu; the stand-in kernel takes `width`
    pairs per thread (the example's elems_per_thread)."""
    sub = read_submission(SUBMISSIONS / "rope" / name, ROPE)
    compiled = compile_kernels(sub.compile_text, sub.name, (ROPE.kernel_name,), "sm_90")
    gpu = RopeFakeGpu(l2_bytes=1 << 14)
    gpu.launch_ms = 5.0
    kernel = gpu.load(compiled)[ROPE.kernel_name]
    kernel.width = width
    spec = sub.contract.launch_spec(tuple(p.size for p in compiled.kernels[ROPE.kernel_name].params))
    return gpu, kernel, spec, sub.contract


@pytest.mark.parametrize("name, width", [("page_scalar.cu", 1), ("gold_wide.cu", 4)])
def test_a_right_rope_verifies_at_every_size_with_its_reads_fenced(name, width):
    gpu, kernel, spec, contract = loaded(name, width)
    rng = np.random.default_rng(1)
    for dims in ROPE.verify_dims:
        v = verify(gpu, kernel, spec, contract, ROPE, ROPE.problem(dims), rng)
        assert v.passed, v.message
        assert v.fenced and v.tolerance == ROPE.tolerance_text
        assert "x".join(map(str, dims)).replace("x", " x ") in v.message
    assert fences(ROPE) == (("in", "end"), ("cosTab", "end"), ("sinTab", "end"),
                            ("in", "start"), ("cosTab", "start"), ("sinTab", "start"))


def test_a_right_rope_is_timed_beside_the_copy_floor_and_every_launch_checked(tmp_path, monkeypatch):
    monkeypatch.setattr(contention, "LOCK_DIR", str(tmp_path))
    gpu, kernel, spec, contract = loaded("gold_wide.cu", 4)
    m = measure(gpu, kernel, spec, contract.launch_values, ROPE, np.random.default_rng(2))
    assert m.table.rows[0].version == ROPE.kernel_name and m.fraction > 0
    assert len(m.dims) == 4 and m.rows * m.cols == int(np.prod(m.dims))
    assert "checkRope" in gpu.launches and "fillDraw" in gpu.launches
