"""The grader's input generator: the numpy twin (grader.check.draws) against the GPU's own (draws.cuh) compiled for
the host, the mix each draw gives, and the packing of a mix into the kernels' two parameters. No GPU needed; the GPU
test of the same equality is in tests/test_exploits_gpu.py."""

from __future__ import annotations

import shutil
import subprocess
from importlib.resources import files

import numpy as np
import pytest

from grader.check import draws
from grader.exercises import bias_gelu as exercise
from grader.exercises.bias_gelu import reference as bg_reference
from grader.exercises.bias_gelu.reference import bias_gelu

HOST_PRELUDE = """#include <cstdio>
#include <cstdlib>
#include <cstring>
#define __device__
#define __forceinline__ inline
static inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline float __int_as_float(int u) { float f; std::memcpy(&f, &u, 4); return f; }
"""
HOST_MAIN = """
int main(int argc, char** argv) {
    const unsigned long long seed = std::strtoull(argv[1], 0, 10), shares = std::strtoull(argv[3], 0, 10);
    const long n = std::atol(argv[2]);
    const DrawMix m = unpackMix(shares, std::atoi(argv[4]));
    for (long i = 0; i < n; ++i) {
        const float v = drawValue(seed, i, m);
        std::fwrite(&v, 4, 1, stdout);
    }
}
"""


@pytest.fixture(scope="module")
def host_generator(tmp_path_factory):
    """The GPU's generator (draws.cuh, which inputs.cu and every check kernel include) compiled for the host with
    the system's C++."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler (g++ or c++) on PATH to build draws.cuh's generator for the host")
    text = files("grader.gpu.kernels").joinpath("draws.cuh").read_text()
    source = tmp_path_factory.mktemp("gen") / "gen.cpp"
    source.write_text(HOST_PRELUDE + text + HOST_MAIN)
    exe = source.with_suffix("")
    subprocess.run([cxx, "-O2", "-std=c++17", "-ffp-contract=off", str(source), "-o", str(exe)], check=True,
                   timeout=120)
    return exe


@pytest.mark.parametrize("mix", [bg_reference.X_MIX, bg_reference.BIAS_MIX], ids=["x", "bias"])
@pytest.mark.parametrize("seed", [0, 1234567, 2**63 + 99, 2**64 - 5])
def test_the_numpy_twin_is_the_cuda_generator_bit_for_bit(host_generator, mix, seed):
    n = 50_000
    shares, shape = mix.packed()
    out = subprocess.run([str(host_generator), str(seed), str(n), str(shares), str(shape)], capture_output=True,
                         check=True, timeout=60).stdout
    want = np.frombuffer(out, dtype=np.uint32)
    got = draws.draw(seed, n, mix).view(np.uint32)
    assert np.array_equal(got, want), np.flatnonzero(got != want)[:5]


def test_a_slice_of_a_draw_is_the_same_elements():
    whole = draws.draw(77, 1000, bg_reference.X_MIX)
    assert np.array_equal(draws.draw(77, 10, bg_reference.X_MIX, start=500).view(np.uint32),
                          whole[500:510].view(np.uint32))


def test_packing_round_trips():
    for mix in (bg_reference.X_MIX, bg_reference.BIAS_MIX):
        assert draws.unpack(*mix.packed()) == mix


def test_x_draws_mix_the_page_range_with_tails_zeros_subnormals_and_nan():
    x = draws.draw(5, 1 << 20, bg_reference.X_MIX)
    bits = x.view(np.uint32)
    share = {k: v / 65536 for k, v in exercise.X_DRAW_SHARES.items() if k in ("nan", "zero", "subnormal", "wide")}
    assert np.isnan(x).mean() == pytest.approx(share["nan"], rel=0.1)
    assert (bits & 0x7FFFFFFF == 0).mean() == pytest.approx(share["zero"], rel=0.1)
    assert (np.signbit(x) & (x == 0)).any() and (~np.signbit(x) & (x == 0)).any()
    sub = (x != 0) & (np.abs(x) < np.finfo(np.float32).tiny)
    assert sub.mean() == pytest.approx(share["subnormal"], rel=0.1)
    wide = np.abs(x) >= 4
    assert wide.mean() == pytest.approx(share["wide"], rel=0.1)
    assert np.nanmax(np.abs(x)) > 1e4 and np.nanmin(np.abs(x[wide])) >= 4
    page = ~np.isnan(x) & ~wide
    assert np.abs(x[page]).max() < 4 and page.mean() > 0.9


def test_the_reference_has_no_overflow_and_nan_only_from_nan_inputs():
    x, bias = bg_reference.draw_inputs(9, 10, 1000, 257)
    with np.errstate(all="raise"):
        ref = bias_gelu(x, bias)
    assert np.array_equal(np.isnan(ref), np.isnan(x))
    big = (x.astype(np.float64) + bias) > 100
    assert np.allclose(ref[big], (x.astype(np.float64) + bias)[big])


def test_a_mix_must_be_exact_and_leave_room_for_the_page_range():
    with pytest.raises(ValueError, match="power of two"):
        draws.DrawMix(half_range=3.0)
    with pytest.raises(ValueError, match="uniform"):
        draws.DrawMix(half_range=4.0, wide=65536)
