"""Timing without a GPU (grader.timing.timer): the benchmark shape, effective bandwidth, the statistics."""

import math

import pytest

from grader.core import exercise as course
from grader.core.errors import GraderFault
from grader.core.launch import LaunchSpec, Param
from grader.exercises import bias_gelu as exercise
from grader.gpu.device import GpuInfo
from grader.timing.timer import Timed, bench_shape, gbs, stats_of


def info(l2_mib: int, free_gib: float) -> GpuInfo:
    return GpuInfo(name="test", compute_capability="9.0", arch="sm_90", multiprocessors=132,
                   threads_per_multiprocessor=2048, l2_bytes=l2_mib * 2**20, total_bytes=int(141e9),
                   free_bytes=int(free_gib * 2**30), driver_cuda="13.0")


def test_bench_shape_on_an_h200():
    rows, cols = bench_shape(info(60, 139))
    assert (rows, cols) == (61440, 4096)
    assert rows * cols * 4 >= course.BENCH_L2_MULTIPLE * 60 * 2**20


@pytest.mark.parametrize("l2, free", [(60, 139), (6, 15), (40, 1.0), (96, 80), (128, 7)])
def test_bench_shape_limits(l2, free):
    rows, cols = bench_shape(info(l2, free))
    assert rows <= course.MAX_GRID_Y and cols % course.BENCH_COL_MULTIPLE == 0
    per_buffer = rows * cols * 4
    assert per_buffer * course.BENCH_BUFFERS <= course.BENCH_FREE_MEMORY_SHARE * free * 2**30
    assert per_buffer >= min(course.BENCH_L2_MULTIPLE * l2 * 2**20,
                             course.BENCH_FREE_MEMORY_SHARE * free * 2**30 / course.BENCH_BUFFERS) - cols * 4


def test_gbs_is_bytes_read_plus_written_over_time():
    assert gbs(8 * 10**9, 1000.0) == pytest.approx(8.0)
    assert gbs(2 * 4 * 61440 * 4096, 0.4881) == pytest.approx(4124.7, abs=0.1)


def test_stats_median_spread_and_standard_error():
    s = stats_of("k", [1.0, 1.1, 0.9, 1.0, 1.0])
    assert (s.median_ms, s.min_ms, s.reps) == (1.0, 0.9, 5)
    assert s.spread == pytest.approx(0.0)  # quartiles 1.0 and 1.0
    mad = 0.0
    assert s.rse == pytest.approx(1.2533 * 1.4826 * mad / math.sqrt(5))
    noisy = stats_of("k", [1.0, 1.2, 0.8, 1.1, 0.9, 1.0])
    assert noisy.rse > 0 and noisy.q1_ms < noisy.median_ms < noisy.q3_ms


def test_a_card_too_small_is_the_machines_fault_not_a_traceback():
    with pytest.raises(GraderFault, match="too little for 3 benchmark buffers"):
        bench_shape(info(60, 0.00001))


def test_a_timed_version_reads_its_byte_model_from_its_launch_specs():
    ion = (Param("in", "ptr"), Param("out", "ptr"), Param("n", "u64"))
    two, three = LaunchSpec(ion), LaunchSpec(ion, values_per_elem=3)
    staged = Timed("staged", lambda: None, (two, two, three), per_thread=4)
    assert (staged.kernels, staged.values_per_elem, staged.value_bytes, staged.per_thread) == (3, 7, 4, 4)
    bf16 = Timed("bf16", lambda: None, (LaunchSpec(ion, elems_per_thread=8, value_bytes=2),))
    assert (bf16.kernels, bf16.values_per_elem, bf16.value_bytes) == (1, exercise.FLOATS_PER_ELEMENT, 2)
    with pytest.raises(ValueError, match="one value width"):
        Timed("mixed", lambda: None, (two, LaunchSpec(ion, value_bytes=2)))
    with pytest.raises(ValueError):
        Timed("none", lambda: None, ())
