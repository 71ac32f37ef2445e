"""Static facts that hold on the path a launch takes (issue 39): shared memory that caps the warps in flight, ...
Compiled here with NVRTC; no GPU needed."""

from __future__ import annotations

import pytest

from grader.compile.nvrtc import compile_kernels
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.feedback.hint import HintKind
from grader.feedback.launch_facts import launch_hints, shared_limited_blocks, warps_per_sm
from grader.source.read import read_submission

STAGED = """// grade: params = x, bias, out, cols
// grade: grid = row
// grade: block = {block}
// grade: elems_per_thread = 4
__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias, float* __restrict__ out,
                              size_t cols) {{
    __shared__ float tile[{floats}];
    const size_t col = 4 * (blockIdx.x * (size_t)blockDim.x + threadIdx.x);
    for (unsigned i = threadIdx.x; i < {floats} && i < cols; i += blockDim.x) tile[i] = bias[i];
    __syncthreads();
    if (col + 3 < cols) {{
        float4 v = *reinterpret_cast<const float4*>(x + blockIdx.y * cols + col);
        v.x = erff(v.x + tile[col % {floats}]);
        *reinterpret_cast<float4*>(out + blockIdx.y * cols + col) = v;
    }}
}}
"""


def facts_of(tmp_path, block: int, floats: int):
    path = tmp_path / "staged.cu"
    path.write_text(STAGED.format(block=block, floats=floats))
    sub = read_submission(path, BIAS_GELU)
    c = compile_kernels(sub.compile_text, sub.name, ("biasGeluFused",), "sm_90", lineinfo=True)
    info = c.kernels["biasGeluFused"]
    return sub.contract.launch_spec(tuple(p.size for p in info.params)), info


def test_the_shared_memory_of_a_block_is_read_from_ptxas_report(tmp_path):
    _, info = facts_of(tmp_path, 128, 11000)
    assert info.shared_bytes == 44000
    assert compile_kernels("__global__ void biasGeluFused(float* o) { o[0] = 1; }", "k.cu", ("biasGeluFused",),
                           "sm_90").kernels["biasGeluFused"].shared_bytes == 0


def test_shared_memory_that_caps_the_warps_is_a_fact_with_its_numbers(tmp_path):
    spec, info = facts_of(tmp_path, 128, 11000)
    hints = launch_hints(spec, None, "sm_90", ex=BIAS_GELU, sms=132, shape=(61440, 4096), shared=info.shared_bytes)
    shared = [h for h in hints if h.kind == HintKind.SHARED]
    assert len(shared) == 1 and shared[0].facts == {"warps_now": 20.0, "warps_fixed": 64.0}
    assert "44,000 bytes of shared memory per block" in shared[0].text and "hold 5 blocks, 20 warps" in shared[0].text


@pytest.mark.parametrize("block, floats", [(256, 11000), (128, 2000)])
def test_shared_memory_that_leaves_half_the_warps_or_more_is_no_fact(tmp_path, block, floats):
    # 256 threads: 5 blocks of 8 warps hold 40 of 64; 8 KB blocks: the warp slots, not the shared memory, set it
    spec, info = facts_of(tmp_path, block, floats)
    hints = launch_hints(spec, None, "sm_90", ex=BIAS_GELU, sms=132, shape=(61440, 4096), shared=info.shared_bytes)
    assert not [h for h in hints if h.kind == HintKind.SHARED]


def test_the_shared_memory_limit_by_architecture():
    assert shared_limited_blocks(44000, "sm_90") == 5 and shared_limited_blocks(44000, "sm_75") == 1
    assert shared_limited_blocks(44000, "sm_100") == 5  # 228 KiB, 1 KiB reserved from sm_80 on
    assert shared_limited_blocks(0, "sm_90") is None and shared_limited_blocks(4096, "sm_999") is None
    assert warps_per_sm(128, "sm_90", shared=44000) == 20 and warps_per_sm(128, "sm_90") == 64


def test_double_math_is_named_with_its_lines_and_its_time_on_the_fp64_pipe():
    from pathlib import Path

    from grader.feedback import sass

    root = Path(__file__).resolve().parent.parent
    if sass.find_disassembler() is None:
        pytest.skip("no CUDA disassembler: pip install \".[sass]\"")
    sub = read_submission(root / "tests" / "data" / "causes" / "double_math.cu", BIAS_GELU)
    c = compile_kernels(sub.compile_text, sub.name, ("biasGeluFused",), "sm_90", lineinfo=True)
    info = c.kernels["biasGeluFused"]
    facts = sass.sass_facts(c.cubin, info.mangled)
    spec = sub.contract.launch_spec(tuple(p.size for p in info.params))
    hints = launch_hints(spec, facts, "sm_90", ex=BIAS_GELU, sms=132, shape=(61440, 4096), sm_mhz=1980)
    double = next(h for h in hints if h.kind == HintKind.DOUBLE)
    total = sum(n for _, n in facts.fp64)
    assert total > 30 and double.lines and all(10 <= line <= 12 for line in double.lines)
    assert double.facts["fp64_per_float"] == total  # one float stored per thread
    # elements x instructions per element / 32 per warp, over 132 SMs x 64 / 32 warp results per clock at 1980 MHz
    assert double.facts["fp64_ms"] == pytest.approx(61440 * 4096 * total / 32 / (132 * 2 * 1980e6) * 1e3)
    assert "computes in double (from the machine code)" in double.text and "64 results per clock" in double.text
    gold = read_submission(root / "submissions" / "gold_float4.cu", BIAS_GELU)
    g = compile_kernels(gold.compile_text, gold.name, ("biasGeluFused",), "sm_90", lineinfo=True)
    gi = g.kernels["biasGeluFused"]
    assert sass.sass_facts(g.cubin, gi.mangled).fp64 == ()
