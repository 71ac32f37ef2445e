"""The RoPE exercise (grader/exercises/rope/) without a GPU: its sizes, inputs, float64 reference, tolerance, known
mistakes, check kernel (compiled with NVRTC, run by a numpy stand-in), benchmark size and examples
(submissions/rope/). The GPU side is tests/test_rope_gpu.py."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from conftest import ROOT, SUBMISSIONS
from grader.check import draws
from grader.core.errors import GraderFault, SubmissionError
from grader.core.exercise import BENCH_FREE_MEMORY_SHARE, BENCH_L2_MULTIPLE, POISON_WORD
from grader.exercises import get, names
from grader.exercises.rope import EXERCISE as E
from grader.exercises.rope import device as rope_device
from grader.exercises.rope.problem import IN_MIX
from grader.exercises.rope.reference import rope_tables
from rope_twins import RopeFakeGpu, judge, rope32

EXAMPLES = SUBMISSIONS / "rope"
SEEDS = range(6)
WRONG = {  # the wrong kernels' float32 twins and the mistake the grader must name for each
    "half_split": dict(pairing="half"),
    "backward": dict(sin_sign=-1),
    "cos_sin_swapped": dict(swap_tables=True),
    "bhsd_position": "bhsd",
}


def case(dims, seed):
    p = E.problem(dims)
    inputs = E.draw(E.seeds_from(np.random.default_rng(seed)), p)
    ref = E.reference(inputs, p)
    return p, inputs, ref, E.tolerance(inputs, ref, p)


def wrong32(name, inputs, p):
    kw = WRONG[name]
    if kw == "bhsd":
        return rope32(inputs, p.dims, pos=np.arange(p.rows) % p.dims[1])
    return rope32(inputs, p.dims, **kw)


# --- the exercise as the harness finds it ---------------------------------------------------------------
def test_the_exercise_is_found_by_name_and_declares_the_pages_kernel():
    assert "rope" in names() and get("rope") is E
    assert (E.name, E.kernel_name, E.default_grid, E.default_elems_per_thread) == ("rope", "ropeInterleaved", "flat", 1)
    assert [p.name for p in E.pointers] == ["in", "cosTab", "sinTab", "out"]
    assert [p.name for p in E.outputs] == ["out"] and E.inputs[0].name == "in"  # the copy floor copies from `in`
    assert E.default_params == ("in", "cosTab", "sinTab", "out", "pairs", "halfDim", "heads", "seq")
    assert set(E.default_params) <= set(E.roles) and E.floats_per_element == 2
    assert E.check_params(E.default_params, "flat") == ""


@pytest.mark.parametrize("params, grid, said", [
    (("in", "cosTab", "out", "pairs", "halfDim", "heads", "seq"), "flat", "missing sinTab"),
    (("in", "cosTab", "sinTab", "out", "halfDim", "heads", "seq"), "flat", "pairs or n or batch"),
    (("in", "cosTab", "sinTab", "out", "pairs", "heads", "seq"), "flat", "halfDim or dim"),
    (("in", "cosTab", "sinTab", "out", "pairs", "halfDim", "seq"), "flat", "heads"),
    (("in", "cosTab", "sinTab", "out", "pairs", "halfDim", "heads"), "stride", "seq"),
    (E.default_params, "row", "not a row grid"),
])
def test_check_params_says_what_is_missing(params, grid, said):
    assert said in E.check_params(params, grid)


def test_other_parameter_sets_that_can_launch_are_accepted():
    assert E.check_params(("out", "in", "sinTab", "cosTab", "dim", "seq", "heads", "n"), "stride") == ""
    assert E.check_params(("in", "cosTab", "sinTab", "out", "batch", "seq", "heads", "dim"), "flat") == ""


# --- sizes ------------------------------------------------------------------------------------------------
def test_verify_dims_start_with_the_pages_and_defeat_code_keyed_to_one_shape():
    dims = E.verify_dims
    assert dims[0] == (3, 17, 5, 64) and (1, 1, 1, 2) in dims
    assert any(d[3] // 2 % 2 for d in dims), "a head with an odd halfDim"
    assert any(d[3] // 2 > 256 for d in dims), "more pairs per head than a block has threads"
    for b, s, h, d in dims:
        if s > 1:
            assert b > 1 and h > 1, (b, s, h, d)  # % seq and the [B, S, H, D] position both matter


@pytest.mark.parametrize("dims", E.verify_dims)
def test_problem_sizes_and_integers(dims):
    b, s, h, d = dims
    p = E.problem(dims)
    pairs = b * s * h * d // 2
    assert (p.rows, p.cols, p.n, p.grid) == (b * s * h, d, 2 * pairs, (1, pairs))
    assert p.integers == dict(pairs=pairs, halfDim=d // 2, heads=h, seq=s, batch=b, dim=d, n=2 * pairs)
    assert p.floats == {"in": 2 * pairs, "out": 2 * pairs, "cosTab": s * d // 2, "sinTab": s * d // 2}
    assert set(p.integers) == set(E.integer_roles) and set(p.floats) == {q.name for q in E.pointers}
    assert p.label == f"B x S x H x D = {b} x {s} x {h} x {d}"


@pytest.mark.parametrize("dims", [(3, 17, 5), (0, 1, 1, 2), (1, 1, 1, 3), (1, -1, 1, 2)])
def test_problem_refuses_what_is_not_a_tensor(dims):
    with pytest.raises(ValueError, match="D even"):
        E.problem(dims)


def test_bench_problem_on_an_h200_like_card():
    l2 = 60 * 2**20
    p = E.bench_problem(140 * 10**9, l2)
    b, s, h, d = p.dims
    assert (s, h, d) == (2048, 32, 128) and b == 30, p.dims
    assert 4 * p.floats["in"] >= BENCH_L2_MULTIPLE * l2 and 4 * p.floats["out"] >= BENCH_L2_MULTIPLE * l2
    assert 4 * (b - 1) * s * h * d < BENCH_L2_MULTIPLE * l2  # the smallest batch that is
    total = 4 * (3 * p.n + 4 * p.floats["cosTab"])
    assert total <= BENCH_FREE_MEMORY_SHARE * 140 * 10**9
    assert p.n % 4 == 0 and p.integers["n"] < 2**31  # the copy floor's vec4 copy; an `int n` holds it


def test_bench_problem_shrinks_to_the_memory_and_refuses_a_tiny_card():
    p = E.bench_problem(2 * 10**9, 60 * 2**20)  # 1.2 GB for three tensors: 11 batches of 32 MiB, not 30
    assert p.dims[0] == 11 and 4 * 3 * p.n <= BENCH_FREE_MEMORY_SHARE * 2 * 10**9
    with pytest.raises(GraderFault, match="too little for 3 RoPE benchmark tensors"):
        E.bench_problem(64 * 2**20, 4 * 2**20)


# --- inputs and reference ---------------------------------------------------------------------------------
def test_draw_is_deterministic_and_is_the_grader_generators():
    p = E.problem((5, 33, 4, 128))
    seeds = E.seeds_from(np.random.default_rng(7))
    assert len(seeds) == 1 and seeds == E.seeds_from(np.random.default_rng(7))
    a, b = E.draw(seeds, p), E.draw(seeds, p)
    assert a["in"].dtype == np.float32 and a["in"].shape == (p.rows, p.cols)
    assert np.array_equal(a["in"].view(np.uint32), b["in"].view(np.uint32))
    assert np.array_equal(a["in"].reshape(-1).view(np.uint32), draws.draw(seeds[0], p.n, IN_MIX).view(np.uint32))
    cos, sin = rope_tables(33, 128)
    assert np.array_equal(a["cosTab"], cos) and np.array_equal(a["sinTab"], sin) and cos.shape == (33, 64)
    x = a["in"]
    tiny = (x != 0) & (np.abs(x) < np.finfo(np.float32).tiny)
    assert np.isnan(x).any() and (x == 0).any() and tiny.any() and (np.abs(x) >= 4).any()
    assert np.signbit(x[x == 0]).any() and (~np.signbit(x[x == 0])).any()


def test_reference_equals_a_plain_loop():
    b_, s_, h_, d_ = dims = (2, 3, 2, 6)
    p, inputs, ref, _ = case(dims, 3)
    x = inputs["in"].reshape(dims).astype(np.float64)
    for b in range(b_):
        for s in range(s_):
            for h in range(h_):
                for j in range(d_ // 2):
                    angle = s * 10000.0 ** (-2.0 * j / d_)
                    x0, x1 = x[b, s, h, 2 * j], x[b, s, h, 2 * j + 1]
                    row = (b * s_ + s) * h_ + h
                    want = (x0 * math.cos(angle) - x1 * math.sin(angle), x0 * math.sin(angle) + x1 * math.cos(angle))
                    got = ref[row, 2 * j: 2 * j + 2]
                    for g, w in zip(got, want, strict=True):
                        assert (math.isnan(g) and math.isnan(w)) or abs(g - w) <= 1e-12 * (1 + abs(w))


# --- the tolerance ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dims", E.verify_dims)
def test_the_tolerance_passes_the_pages_kernel_in_float32(dims):
    worst = 0.0
    for seed in SEEDS:
        p, inputs, ref, tol = case(dims, seed)
        for fma in (False, True):
            ok, share = judge(rope32(inputs, dims, fma=fma), ref, tol)
            assert ok.all(), (dims, seed, fma, np.argwhere(~ok)[:3])
            worst = max(worst, float(share.max()))
    assert worst < 0.5, worst  # a factor 2 of margin at least (the bound's derivation gives 3/8)


def test_the_tolerance_passes_subnormal_zero_wide_and_nan_pairs():
    p = E.problem((2, 4, 3, 8))
    rng = np.random.default_rng(0)
    bits = rng.integers(1, 1 << 23, size=(p.rows, p.cols), dtype=np.uint32)
    sign = rng.integers(0, 2, size=bits.shape, dtype=np.uint32) << np.uint32(31)
    x = (bits | sign).view(np.float32).copy()  # every value subnormal
    x[0] = 0.0
    x[1, ::2] = -0.0
    x[2] = np.float32(65536.0) * rng.uniform(1, 2, p.cols).astype(np.float32)  # wide beside subnormal pairs
    x[3, 1::2] = np.float32(2.0**-126)
    x[4, 0] = np.nan
    cos, sin = rope_tables(4, 8)
    inputs = {"in": x, "cosTab": cos, "sinTab": sin}
    ref = E.reference(inputs, p)
    tol = E.tolerance(inputs, ref, p)
    assert np.isnan(ref[4, :2]).all() and not np.isnan(ref[4, 2:]).any()
    for fma in (False, True):
        ok, share = judge(rope32(inputs, p.dims, fma=fma), ref, tol)
        assert ok.all() and share.max() < 0.5, (fma, share.max())
    flushed = rope32(inputs, p.dims)
    flushed[np.abs(flushed) < np.finfo(np.float32).tiny] = 0.0  # a kernel that flushes subnormal results to zero
    assert not judge(flushed, ref, tol)[0].all()


@pytest.mark.parametrize("name", sorted(WRONG))
def test_the_tolerance_fails_each_wrong_kernel_and_the_mistake_is_named(name):
    for dims in E.verify_dims:
        if dims[1] == 1:
            continue  # one position, angle 0: every rotation is the identity there
        p, inputs, ref, tol = case(dims, 1)
        got = wrong32(name, inputs, p)
        ok, share = judge(got, ref, tol)
        assert (~ok).mean() > 0.5 and share.max() > 1e3, (dims, (~ok).mean(), share.max())
        found = E.mistake(inputs, got, p)
        assert found is not None and found.name == name, (dims, found)
        assert found.share >= 0.99 and found.text.startswith("your output matches")


@pytest.mark.parametrize("dims", E.verify_dims)
def test_no_mistake_is_named_for_a_right_kernel(dims):
    for seed in SEEDS[:3]:
        p, inputs, ref, _ = case(dims, seed)
        assert E.mistake(inputs, rope32(inputs, dims, fma=bool(seed % 2)), p) is None


def test_the_half_split_mistake_quotes_the_pages_pitfall():
    p, inputs, _, _ = case(E.verify_dims[0], 2)
    text = E.mistake(inputs, wrong32("half_split", inputs, p), p).text
    assert "(2j, 2j+1)" in text and "if element 0 matches while element 1 does not" in text


def test_the_other_formulas_are_named():
    p, inputs, ref, _ = case(E.verify_dims[0], 4)
    out = rope32(inputs, p.dims)
    swapped = out.reshape(p.rows, -1, 2)[:, :, ::-1].reshape(out.shape)
    assert E.mistake(inputs, swapped, p).name == "outputs_swapped"
    assert E.mistake(inputs, inputs["in"].copy(), p).name == "no_rotation"
    for base, exponent, name in ((500000.0, 2.0, "base_500000"), (10000.0, 1.0, "theta_j"),
                                 (10000.0, 4.0, "theta_2j")):
        theta = base ** (-exponent * np.arange(32) / 64)
        ang = (np.arange(17)[:, None] * theta[None, :])
        own = {"in": inputs["in"], "cosTab": np.cos(ang).astype(np.float32), "sinTab": np.sin(ang).astype(np.float32)}
        assert E.mistake(inputs, rope32(own, p.dims), p).name == name


def test_a_position_without_wrap_is_named_from_garbage_or_from_its_own_angles():
    p, inputs, ref, _ = case(E.verify_dims[0], 5)
    b, s, h, d = p.dims
    got = rope32(inputs, p.dims)
    got[s * h:] = np.float32(np.nan)  # the tables read past their end: the guard's NaN pattern
    found = E.mistake(inputs, got, p)
    assert found.name == "no_seq_wrap" and "% seq" in found.text
    pos = np.arange(p.rows) // h
    ang = np.arange(b * s)[:, None] * (10000.0 ** (-2.0 * np.arange(d // 2) / d))[None, :]
    own = {"in": inputs["in"], "cosTab": np.cos(ang).astype(np.float32), "sinTab": np.sin(ang).astype(np.float32)}
    assert E.mistake(inputs, rope32(own, p.dims, pos=pos), p).name == "no_seq_wrap"


def _poisoned(got, where):
    got = got.copy()
    got.reshape(-1).view(np.uint32)[where] = np.uint32(POISON_WORD)
    return got


def test_unwritten_elements_are_named_by_their_pattern():
    p, inputs, _, _ = case(E.verify_dims[0], 6)
    right = rope32(inputs, p.dims)
    n = p.n
    tail = E.mistake(inputs, _poisoned(right, np.arange(n - 100, n)), p)
    assert tail.name == "unwritten" and "the last 100 of" in tail.text and "(the last 50 pairs)" in tail.text
    none = E.mistake(inputs, _poisoned(right, np.arange(n)), p)
    assert none.name == "unwritten" and none.text.startswith("no element of the output was written")
    odd = E.mistake(inputs, _poisoned(right, np.arange(1, n, 2)), p)
    assert "the second element of every pair (out[2p + 1]) was never written" in odd.text
    blocks = np.concatenate([np.arange(k + 512, k + 2048) for k in range(0, n, 2048)])
    some = E.mistake(inputs, _poisoned(right, blocks[blocks < n]), p)
    assert "were never written, the first in pair 256 (batch 0, pos 1, head 3, j 0)" in some.text
    assert "elems_per_thread" in some.text
    back = _poisoned(wrong32("backward", inputs, p), np.arange(n - 10, n))
    both = E.mistake(inputs, back, p)
    assert both.name == "unwritten" and "the rest matches a rotation by -angle" in both.text


def test_mistakes_refuse_shapes_that_do_not_fit():
    p, inputs, _, _ = case(E.verify_dims[0], 0)
    with pytest.raises(ValueError, match="must both be"):
        E.mistake(inputs, np.zeros((3, 3), np.float32), p)


# --- messages ---------------------------------------------------------------------------------------------
def test_where_and_given_name_the_pair_and_its_table_entry():
    p, inputs, _, _ = case(E.verify_dims[0], 0)
    assert E.where("out", 2 * (32 * 5 + 32 + 3) + 1, p) == "pair 195 (batch 0, pos 1, head 1, j 3), its second element"
    assert E.where("in", 2 * 32 * 5 * 17, p).startswith("pair 2720 (batch 1, pos 0, head 0, j 0), its first")
    assert E.where("sinTab", 3 * 32 + 5, p) == "pos 3, j 5"
    g = E.given(inputs, p, 32 + 5 * 4, 7)  # row 52: batch 0, pos 10, head 2; col 7: j 3, the second element
    x = inputs["in"]
    assert g == {"x0": float(x[52, 6]), "x1": float(x[52, 7]), "cos": float(inputs["cosTab"][10, 3]),
                 "sin": float(inputs["sinTab"][10, 3])}
    assert re.fullmatch(r"x0 = \S+, x1 = \S+, cos = \S+, sin = \S+", E.given_text(g))


def test_the_texts_teach_the_pages_lessons():
    assert E.bounds_test == "`if (p < pairs)`"
    # no premise it cannot know: the slow hint is given when nothing named a cause (issue 39)
    assert "name the cause" in E.slow_hint and "index arithmetic first" not in E.slow_hint
    assert E.slow_hint.index("64-bit division") < E.slow_hint.index("several pairs") < E.slow_hint.index("float2")
    assert "L2" in E.cached_text and "inflates GB/s" in E.cached_text and "in read once" in E.bytes_text
    texts = E.hint_texts()
    assert texts["division_lead"] == "look at your index arithmetic first" and "32-bit" in texts["division_tail"]
    assert "float2" in texts["width_tail"]
    said = E.counter_texts
    assert "cos and sin tables" in said.reread and "bias" not in " ".join(vars(said).values())
    assert E.cached == ("cosTab", "sinTab") and E.reference_names == ("ropeInterleaved", "ropeInterleavedVec2")
    assert "8 x 2^-24 (|x0| + |x1|) + 2^-147" in E.tolerance_text


# --- the check kernel ---------------------------------------------------------------------------------------
def _definition(text: str, start: str) -> str:
    i = text.index(start)
    return text[i: text.index("\n}", i) + 2]


def test_the_check_kernel_includes_the_grader_s_draw_and_holds_no_copy():
    """check.cu draws `in` with the grader's own generator: it includes draws.cuh (the same bits as
    grader.check.draws) and defines none of its functions itself."""
    raw = (ROOT / "grader" / "exercises" / "rope" / "check.cu").read_text()
    assert '#include "draws.cuh"' in raw and "splitmix64(unsigned long long z) {" not in raw
    assert "splitmix64(unsigned long long z) {" in rope_device.check_source()


def test_the_check_kernel_compiles_with_nvrtc():
    from grader.compile.nvrtc import compile_kernels

    compiled = compile_kernels(rope_device.check_source(), "rope_check.cu", ("checkRope",), "sm_90")
    params = compiled.kernels["checkRope"].params
    assert [p.size for p in params] == [q.size for q in rope_device.CHECK.params]


def _device(dims=(2, 5, 3, 8)):
    gpu = RopeFakeGpu()
    p = E.problem(dims)
    return gpu, p, E.device(gpu, p)


def test_the_device_side_draws_what_the_host_draws_and_accepts_a_right_output():
    gpu, p, dev = _device()
    assert set(dev.buffers) == {"in", "cosTab", "sinTab", "out"}
    dev.redraw(np.random.default_rng(11))
    inputs = E.draw(E.seeds_from(np.random.default_rng(11)), p)
    assert np.array_equal(gpu.download(dev.buffers["in"], p.n, np.float32).view(np.uint32),
                          inputs["in"].reshape(-1).view(np.uint32))
    gpu.upload(dev.buffers["out"], rope32(inputs, p.dims))
    v = dev.check("timed launch 1")
    assert v.passed and v.message == ("timed launch 1 correct at B x S x H x D = 2 x 5 x 3 x 8 "
                                      "(checked on the GPU in float64)")
    dev.close()
    assert not gpu.allocs


def test_the_device_check_names_the_first_bad_element_and_a_changed_input():
    gpu, p, dev = _device()
    dev.redraw(np.random.default_rng(12))
    inputs = E.draw(E.seeds_from(np.random.default_rng(12)), p)
    out = rope32(inputs, p.dims)
    out.reshape(-1)[37] += np.float32(1e-3) * (1 + abs(out.reshape(-1)[37]))
    gpu.upload(dev.buffers["out"], out)
    v = dev.check("timed launch 4")
    assert not v.passed and v.bad == 1 and (v.first_bad.row, v.first_bad.col) == (4, 5)
    assert v.message.startswith("wrong output of timed launch 4 at B x S x H x D = 2 x 5 x 3 x 8: first bad element "
                                "pair 18 (batch 0, pos 1, head 1, j 2), its second element: x0 = ")
    gpu.upload(dev.buffers["out"], rope32(inputs, p.dims))
    cos = gpu.download(dev.buffers["cosTab"], p.floats["cosTab"], np.float32)
    cos[9] = 0.5
    gpu.upload(dev.buffers["cosTab"], cos)
    v = dev.check("timed launch 5")
    assert not v.passed and v.inputs_changed == ["cosTab"] and v.first_changed == {"cosTab": 9}
    assert "changed its input cosTab (first changed element pos 2, j 1)" in v.message
    assert "output was right" in v.message


def test_the_device_check_refuses_a_changed_private_table():
    gpu, p, dev = _device()
    dev.redraw(np.random.default_rng(13))
    sin = gpu.download(dev.private["sinTab"], p.floats["sinTab"], np.float32)
    sin[3] = 2.0
    gpu.upload(dev.private["sinTab"], sin)
    with pytest.raises(SubmissionError, match="private copy of sinTab"):
        dev.check("timed launch 2")


# --- the examples -------------------------------------------------------------------------------------------
def _declared_params(text: str):
    m = re.search(r"^// grade: params = (.+)$", text, re.M)
    return tuple(v.strip() for v in m.group(1).split(",")) if m else E.default_params


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.cu")), ids=lambda p: p.name)
def test_every_example_states_its_verdict_compiles_and_declares_the_exercises_roles(path):
    from grader.compile.nvrtc import compile_kernels

    text = path.read_text()
    assert re.match(r"// Expected verdict: (GOLD|SILVER|FAIL)\b", text)
    params = _declared_params(text)
    assert set(params) <= set(E.roles) and E.check_params(params, "flat") == ""
    compiled = compile_kernels(text, path.name, (E.kernel_name,), "sm_90")
    sizes = [p.size for p in compiled.kernels[E.kernel_name].params]
    assert len(sizes) == len(params) and all(s == 8 for s, r in zip(sizes, params, strict=True) if r in ("in", "out"))


def test_the_examples_are_a_gold_one_the_pages_and_two_wrong_ones():
    verdicts = {p.name: re.match(r"// Expected verdict: (\w+ ?\w*)", p.read_text()).group(1)
                for p in EXAMPLES.glob("*.cu")}
    assert verdicts == {"gold_wide.cu": "GOLD on", "page_scalar.cu": "FAIL on", "half_split.cu": "FAIL verification",
                        "bhsd_position.cu": "FAIL verification"}
    assert "elems_per_thread = 4" in (EXAMPLES / "gold_wide.cu").read_text()


def test_the_benchmark_problem_is_found_again_from_its_output_shape():
    # the counters' child gets the graded shape as a report records it (bench_rows x bench_cols)
    bench = E.bench_problem(140 * 2**30, 60 * 2**20)
    assert E.problem(E.bench_dims(bench.rows, bench.cols)) == bench
    with pytest.raises(ValueError, match="whole number of RoPE benchmark batches"):
        E.bench_dims(bench.rows + 1, bench.cols)


def test_the_profiled_answers_compile_with_the_pages_signature():
    from grader.compile import kernel_cache
    from grader.exercises.rope import answers

    compiled = kernel_cache.compiled(answers.source_text(), answers.SOURCE, tuple(answers.ANSWERS.values()), "sm_90")
    for expr in answers.ANSWERS.values():
        info = compiled.kernels[expr]
        assert [p.size for p in info.params] == [8, 8, 8, 8, 8, 4, 4, 4], expr
        assert info.mangled.startswith("_Z") and expr.split("<")[0] in answers.NAMES
    assert [p.name for p in answers.PARAMS][:4] == ["in", "cos", "sin", "out"]
