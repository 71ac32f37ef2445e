"""The reference-kernel self-check on a real GPU: every gate passes, the timing path runs (on small buffers,
so the numbers mean nothing here; benchmarks/reference_perf.py is the timed run), and the CLI exits 0.
Skipped with the reason on a machine without a CUDA GPU."""

from __future__ import annotations

import pytest

from reference_kernels.selfcheck import main, run_selfcheck
from reference_kernels.suite import compile_suite
from reference_kernels.timed import QUICK

pytestmark = pytest.mark.gpu

SMALL = {"rope": 1 << 20, "chain": (64, 4096), "bf16": 1 << 20}


@pytest.fixture(scope="module")
def compiled(gpu):
    return compile_suite(gpu.info.arch)


def test_every_gate_passes(gpu, compiled):
    result = run_selfcheck(gpu, compiled, timing=False)
    assert result.passed, "\n".join(f"{g.name}: {g.detail}" for g in result.gates if not g.passed)
    gap, at = result.gap_float32
    assert 4.0e-4 < gap < 5.0e-4 and 2.5 < at < 2.9


def test_timing_path_runs(gpu, compiled):
    result = run_selfcheck(gpu, compiled, settings=QUICK, sizes=SMALL)
    assert result.passed
    assert [t.name for t in result.tables] == ["RoPE", "chain", "bf16 GELU"]
    for table in result.tables:
        assert all(r.ms > 0 and r.gbs > 0 for r in table.rows), table.name
        assert max(r.x_copy for r in table.rows if r.is_floor) == pytest.approx(1.0)
    assert all(p.held is not None for p in result.predictions)


def test_cli_no_timing_exits_0(gpu, capsys):
    assert main(["--no-timing"]) == 0
    out = capsys.readouterr().out
    assert out.index("Byte counts") < out.index("Gates:") < out.index("GELU gap") < out.index("four predictions")
    assert "float32 (device geluErf/geluTanh, chain.cu)" in out
