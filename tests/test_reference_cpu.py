"""CPU tests of the reference-kernel suite: known values, bf16 rounding, NVRTC compiles, the byte model, the
no-GPU exit, and the whole self-check path on a numpy stand-in for the GPU (tests/fake_gpu.py)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from fake_gpu import FakeGpu
from grader.exercises.bias_gelu.page_kernels import FUSED, MODEL_ANSWER, STAGED, WIDTHS, chain_versions
from grader.exercises.bias_gelu.reference import gelu_erf, gelu_tanh
from grader.timing.timer import Table, TimedRow
from reference_kernels import expected as ref
from reference_kernels.selfcheck_report import predictions
from reference_kernels.suite import BF16_VERSION, SOURCES, all_kernels, compile_suite
from reference_kernels.timed import QUICK

SMALL = {"rope": 65536, "chain": (8, 1024), "bf16": 4096}


@pytest.fixture(scope="module")
def compiled():
    return compile_suite("sm_90")


# --- known values ----------------------------------------------------------------------------------
def _rope_at_position_2(pairing: str, layout: str) -> np.ndarray:
    x = np.zeros((1, 3, 1, 4))
    x[0, 2, 0] = [1.0, 2.0, 3.0, 4.0]
    if layout == "bhsd":
        x = x.transpose(0, 2, 1, 3)
    out = ref.rope_reference(x, layout, pairing, base=100.0)
    return out[0, 2, 0] if layout == "bshd" else out[0, 0, 2]


@pytest.mark.parametrize("layout", ref.LAYOUTS)
def test_rope_worked_example_interleaved(layout):
    got = _rope_at_position_2("interleaved", layout)
    assert got == pytest.approx([-2.234742, 0.077004, 2.145522, 4.516274], abs=5e-7)


@pytest.mark.parametrize("layout", ref.LAYOUTS)
def test_rope_worked_example_half_split(layout):
    got = _rope_at_position_2("half", layout)
    assert got == pytest.approx([-3.144039, 1.165456, -0.339143, 4.317605], abs=5e-7)


def test_rope_tables_are_float64_angles_rounded_once():
    cos, sin = ref.rope_tables(17, 64, 10000.0)
    assert cos.dtype == np.float32 and cos.shape == (17, 32) and cos.flags.c_contiguous
    a = ref.rope_angles(17, 64, 10000.0)
    assert a[2, 1] == pytest.approx(2 * 10000.0 ** (-2 / 64), rel=1e-15)
    assert np.array_equal(cos, np.cos(a).astype(np.float32)) and np.array_equal(sin, np.sin(a).astype(np.float32))
    assert not np.array_equal(ref.rope_tables(17, 64, 500000.0)[0], cos)
    with pytest.raises(ValueError):
        ref.rope_angles(4, 5)


def test_rope_bound_rejects_the_other_pairing():
    rng = np.random.default_rng(0)
    x = rng.uniform(-4, 4, (3, 17, 5, 64)).astype(np.float32)
    inter, half = (ref.rope_reference(x, "bshd", p) for p in ref.PAIRINGS)
    assert np.mean(np.abs(half - inter) > ref.rope_error_bound(x, "interleaved")) > 0.9


def test_gelu_known_values():
    assert gelu_erf(np.array([1.0]))[0] == pytest.approx(0.8413447461, abs=1e-10)
    assert gelu_tanh(np.array([1.0]))[0] == pytest.approx(0.8411919906, abs=1e-10)
    assert gelu_erf(np.array([-3.0]))[0] == pytest.approx(-4.049694e-3, abs=1e-9)
    assert gelu_tanh(np.array([-3.0]))[0] == pytest.approx(-3.637392e-3, abs=1e-9)


# --- bf16 ------------------------------------------------------------------------------------------
def test_bf16_round_trip_and_nearest_even():
    bits = np.arange(0, 65536, dtype=np.uint32).astype(np.uint16)
    finite = np.isfinite(ref.bf16_to_f32(bits))
    assert np.array_equal(ref.f32_to_bf16(ref.bf16_to_f32(bits))[finite], bits[finite])
    one = np.float32(1.0).view(np.uint32)
    halfway_even = np.uint32(one + 0x8000).view(np.float32)          # between 0x3F80 (even) and 0x3F81
    halfway_odd = np.uint32(one + 0x18000).view(np.float32)          # between 0x3F81 (odd) and 0x3F82
    above = np.uint32(one + 0x8001).view(np.float32)
    assert ref.f32_to_bf16(np.array([halfway_even, halfway_odd, above])).tolist() == [0x3F80, 0x3F82, 0x3F81]
    assert ref.f32_to_bf16(np.array([-halfway_even])).tolist() == [0xBF80]


def test_bf16_specials():
    got = ref.f32_to_bf16(np.array([np.inf, -np.inf, np.nan, 3.4e38, -0.0], dtype=np.float32))
    assert got[0] == 0x7F80 and got[1] == 0xFF80 and got[3] == 0x7F80 and got[4] == 0x8000
    assert (got[2] & 0x7F80) == 0x7F80 and (got[2] & 0x0040)  # a quiet NaN
    assert ref.bf16_to_f32(np.array([0x3FC0], dtype=np.uint16))[0] == 1.5


def test_f64_to_bf16_rounds_once():
    rng = np.random.default_rng(1)
    x = rng.uniform(-1e3, 1e3, 100_000) * np.exp2(rng.integers(-60, 60, 100_000))
    # float64s a hair off a bf16 tie: rounding through float32 first would land on the tie and go to even
    tie = float(np.uint32(0x3F808000).view(np.float32))
    x = np.concatenate([x, [tie + 2.0**-40, tie - 2.0**-40, tie, -tie - 2.0**-40]])
    frac, e = np.frexp(np.abs(x))  # |x| = frac 2^e, frac in [0.5, 1): 8 significant bits are frac * 256
    want = np.sign(x) * np.ldexp(np.round(frac * 256.0), e - 8)  # np.round: halves to even, exact here
    got = ref.bf16_to_f32(ref.f64_to_bf16(x)).astype(np.float64)
    assert np.array_equal(got, want)


def test_bf16_tolerance_accepts_float32_emulation_and_rejects_truncation():
    rng = np.random.default_rng(2)
    bits = ref.f32_to_bf16(rng.uniform(-4, 4, 200_003).astype(np.float32))
    x = ref.bf16_to_f32(bits)
    r32 = (np.float32(0.5) * x * (np.float32(1) + np.tanh(np.float32(0.7978845608028654)
                                                          * (x + np.float32(0.044715) * x * x * x))))
    want = ref.gelu_tanh_bf16_reference(bits)
    tol = ref.gelu_bf16_tolerance(x, want)
    rounded = ref.bf16_to_f32(ref.f32_to_bf16(r32))
    truncated = ref.bf16_to_f32((r32.view(np.uint32) >> np.uint32(16)).astype(np.uint16))
    assert np.all(np.abs(rounded - want) <= tol)
    assert np.mean(np.abs(truncated - want) > tol) > 0.1
    assert np.mean(ref.f32_to_bf16(r32) != ref.f64_to_bf16(want)) < ref.BF16_MAX_ROUNDING_MISMATCH
    assert np.mean(ref.f32_to_bf16(truncated) != ref.f64_to_bf16(want)) > ref.BF16_MAX_ROUNDING_MISMATCH


# --- compile, parameters, byte model -------------------------------------------------------------------
def test_every_source_compiles_for_sm90(compiled):
    assert set(compiled) == set(SOURCES)
    for c in compiled.values():
        assert c.arch == "sm_90" and c.cubin and not c.warnings
        for info in c.kernels.values():
            assert info.spill_stores == 0, info.name


def test_declared_parameters_match_ptx(compiled):
    for k in all_kernels():
        ptx = [p.size for p in compiled[k.source].kernels[k.expr].params]
        assert ptx == [p.size for p in k.spec.params], k.expr


def test_rope_rounding_is_pinned_so_interleaved_kernels_agree_bitwise(compiled):
    """Every f32 operation of the RoPE kernels has its rounding spelled out (mul.rn, fma.rn): ptxas cannot
    contract them differently in two kernels, so Vec2 and FusedQK compute ropeInterleaved's bits."""
    ptx = compiled["rope.cu"].ptx
    for name, info in compiled["rope.cu"].kernels.items():
        start = ptx.index(f".entry {info.mangled}")
        end = ptx.find(".entry", start + 1)
        ops = re.findall(r"^\s*((?:mul|fma|sub|add|neg|div)\S*\.f32)\s", ptx[start:end if end > 0 else None], re.M)
        assert ops and set(ops) <= {"mul.rn.f32", "fma.rn.f32", "neg.f32"}, (name, set(ops))


def test_byte_model_is_the_pages():
    for w in WIDTHS:
        v = chain_versions(w)
        assert v[STAGED].values_per_elem == 7 and len(v[STAGED].kernels) == 3
        assert v[FUSED].values_per_elem == 3 and len(v[FUSED].kernels) == 1
        assert v[MODEL_ANSWER].values_per_elem == 5
        assert v["biasGeluFused"].values_per_elem == 2
    assert BF16_VERSION.bytes_per_elem == 4


def test_wide_half_split_moves_16_bytes_and_page_kernels_do_not(compiled):
    """ropeHalfSplit<4> reads a head's two halves, cos and sin as float4 quads and writes float4s; the page's
    <1> kernels keep their scalar and float2 accesses."""
    ptx = compiled["rope.cu"].ptx
    for name, info in compiled["rope.cu"].kernels.items():
        start = ptx.index(f".entry {info.mangled}")
        end = ptx.find(".entry", start + 1)
        body = ptx[start:end if end > 0 else None]
        loads, stores = body.count("ld.global.nc.v4.f32"), body.count("st.global.v4.f32")
        if name == "ropeHalfSplit<4>":
            assert loads == 4 and stores == 2, (name, loads, stores)
        elif name.endswith("<1>"):
            assert loads == 0 and stores == 0, name


# --- the self-check without a GPU ------------------------------------------------------------------
def _has_gpu() -> bool:
    from grader.core.errors import NoGpuError
    from grader.gpu.device import open_gpu

    try:
        open_gpu()
    except NoGpuError:
        return False
    return True


def test_selfcheck_without_gpu_exits_3_after_compiling(capsys):
    if _has_gpu():
        pytest.skip("a GPU is present: the no-GPU exit is not reachable")
    from reference_kernels.selfcheck import main

    assert main([]) == 3
    out, err = capsys.readouterr()
    assert "compiled" in out and "Byte counts" in out and "float64" in out
    assert "float32 (device geluErf/geluTanh): not run" in out
    assert len(err.strip().splitlines()) == 1 and err.startswith("grade selfcheck: no GPU")


def test_selfcheck_usage_error_is_exit_2():
    from reference_kernels.selfcheck import main

    with pytest.raises(SystemExit) as exc:
        main(["--layout", "nope"])
    assert exc.value.code == 2


# --- the device path on the numpy stand-in --------------------------------------------------------------
def test_device_path_end_to_end_on_fake_gpu(compiled, tmp_path):
    from reference_kernels.selfcheck import run_selfcheck

    texts = []
    result = run_selfcheck(FakeGpu(), compiled, settings=QUICK, emit=texts.append, sizes=SMALL)
    assert result.passed, [g for g in result.gates if not g.passed]
    assert [t.name for t in result.tables] == ["RoPE", "chain", "bf16 GELU"]
    assert len(result.predictions) == 8 and result.gap_float32 is not None
    joined = "\n".join(texts)
    assert joined.index("RoPE table") < joined.index("chain table") < joined.index("Staged vs fused") \
        < joined.index("GELU gap") < joined.index("four predictions")
    (tmp_path / "r.json").write_text(result.model_dump_json())


def test_a_table_faster_than_physics_allows_is_not_shown(compiled, monkeypatch):
    # At the benchmark's sizes a row above the bound (grader.timing.timer.over_bound) keeps its table off the report.
    import reference_kernels.selfcheck as selfcheck

    monkeypatch.setattr(selfcheck, "over_bound", lambda table, peak: ["fused chain<4> measured 1.200 x the copy floor"]
                        if table.name == "chain" else [])
    texts = []
    gpu = FakeGpu(l2_bytes=1 << 12)  # benchmark-sized buffers of 16 KiB: a quick default
    gpu.launch_ms = 1.0
    result = selfcheck.run_selfcheck(gpu, compiled, settings=QUICK, emit=texts.append)
    assert [t.name for t in result.tables] == ["RoPE", "bf16 GELU"]
    assert result.refused == ["chain: not shown: fused chain<4> measured 1.200 x the copy floor"]
    assert result.refused[0] in texts and not any("chain table" in t for t in texts)


def test_gates_fail_when_half_split_computes_interleaved(compiled, monkeypatch):
    from reference_kernels.selfcheck import run_selfcheck

    monkeypatch.setattr(FakeGpu, "_k_ropeHalfSplit", FakeGpu._k_ropeInterleaved)
    result = run_selfcheck(FakeGpu(), compiled, timing=False)
    failed = [g.name for g in result.gates if not g.passed]
    assert not result.passed and not result.tables
    assert any("differs from" in name for name in failed)


def test_gates_fail_on_truncating_bf16_and_short_grid(compiled, monkeypatch):
    from reference_kernels.selfcheck import run_selfcheck

    def truncating(self, k, grid, block, src, out, n):
        v = ref.bf16_to_f32(self.arr(src, n, np.uint16))
        r = ref.gelu_tanh(v).astype(np.float32)
        self.arr(out, n, np.uint16)[:] = (r.view(np.uint32) >> np.uint32(16)).astype(np.uint16)

    def short_grid(self, k, grid, block, *a):  # one block too few: the last elements are never written
        FakeGpu._rope(self, k, (max(grid[0] - 1, 0), 1, 1), block, *a, split=False)

    monkeypatch.setattr(FakeGpu, "_k_geluTanhBf16", truncating)
    monkeypatch.setattr(FakeGpu, "_k_ropeInterleavedVec2", short_grid)
    result = run_selfcheck(FakeGpu(), compiled, timing=False)
    failed = [g.name for g in result.gates if not g.passed]
    assert any("geluTanhBf16" in name for name in failed)
    assert any("ropeInterleavedVec2" in name and "float64" in name for name in failed)


# --- predictions ----------------------------------------------------------------------------------
def _row(version, ms, x_copy, floor=False):
    return TimedRow(version=version, kernels=1, per_thread=1, values_per_elem=2, value_bytes=4, ms=ms, gbs=1.0,
                    x_copy=x_copy, reps=13, rse=0.001, is_floor=floor)


def test_predictions_resolve_the_pages_t4_run_as_the_page_does():
    """The page's T4 numbers: staged/fused 1.9798 / 0.7825 (refuted), chain rows 0.898 to 1.092 of the floor
    (held), RoPE 0.6081 / 0.5630 / 0.5681 ms (held), gap 4.735273e-4 at 2.701655 (held)."""
    chain_rows = [_row(f"{name}<{w}>", ms, xc) for w in WIDTHS for name, ms, xc in (
        ("addBiasRow", 0.5796, 0.967), ("applyGeluErf", 0.6236, 0.898), ("addResidual", 0.7696, 1.092),
        (STAGED, 1.9798, 0.990), (FUSED, 0.7825, 1.074))]
    chain = Table(name="chain", shape="", elements=1, floor_version="copy", floor_gbs=239.6,
                  rows=chain_rows + [_row("copy", 0.5601, 1.0, floor=True)])
    rope_rows = [_row(f"{name}<{w}>", ms, 0.9) for w in WIDTHS for name, ms in (
        ("ropeInterleaved", 0.6081), ("ropeInterleavedVec2", 0.5630), ("ropeHalfSplit", 0.5681))]
    rope = Table(name="RoPE", shape="", elements=1, floor_version="copy", floor_gbs=248.9, rows=rope_rows)
    preds = predictions(chain, rope, (4.7323552e-4, 2.6989414), (4.735273e-4, 2.701655))
    verdict = {(p.number, p.on): p.held for p in preds}
    assert verdict[(1, "<1> (page)")] is False and "2.530" in preds[0].measured
    assert verdict[(2, "<1> (page)")] is True
    assert verdict[(3, "<1> (page)")] is True
    assert verdict[(4, "float64 sweep")] is True and verdict[(4, "float32 device sweep")] is True


def test_predictions_without_timing_are_not_measured():
    preds = predictions(None, None, (4.7323552e-4, 2.6989414), None)
    assert [p.held for p in preds if p.number < 4] == [None] * 6
    assert [p.held for p in preds if p.number == 4] == [True, None]


def _benchmark_on_fake_gpu(name: str, monkeypatch):
    """benchmarks/{name}.py loaded as a module, with open_gpu giving a FakeGpu."""
    from conftest import load_benchmark

    module = load_benchmark(name)
    monkeypatch.setattr(module, "open_gpu", lambda: FakeGpu())
    return module


def test_benchmark_script_writes_fractions_on_fake_gpu(tmp_path, monkeypatch, capsys):
    perf = _benchmark_on_fake_gpu("reference_perf", monkeypatch)
    out = tmp_path / "perf.json"
    assert perf.main(["--quick", "--no-torch", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["quick"] is True
    assert {g["version"] for g in record["goals"]} == {"biasGeluFused<4>", "fused chain<4>", "ropeInterleaved<4>",
                                                      "ropeInterleavedVec2<4>", "ropeHalfSplit<4>", "ropeFusedQK<4>"}
    assert "staged chain<1>" in record["fractions"]["chain"] and "geluTanhBf16" in record["fractions"]["bf16 GELU"]
    assert "PyTorch comparison skipped" in capsys.readouterr().out


def test_rope_script_writes_fractions_on_fake_gpu(tmp_path, monkeypatch, capsys):
    perf = _benchmark_on_fake_gpu("rope_perf", monkeypatch)
    out = tmp_path / "rope.json"
    assert perf.main(["--quick", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert set(record["layouts"]) == set(ref.LAYOUTS)
    assert {g["version"] for g in record["layouts"]["bhsd"]["goals"]} == {
        "ropeInterleaved<4>", "ropeInterleavedVec2<4>", "ropeHalfSplit<4>", "ropeFusedQK<4>"}
    assert "RoPE gates:" in capsys.readouterr().out
