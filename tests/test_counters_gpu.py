"""Counters and the exercise's chain on a GPU: Nsight Compute's DRAM bytes for the 16-byte examples sit within
2% of the byte model (8 per element), and a graded report carries the student's part-3 chain rows."""

import pytest

from grader.counters import find_ncu, submission_counters
from grader.grade import grade_file

from conftest import SUBMISSIONS

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", ["gold_float4.cu", "page_scalar.cu"])
def test_dram_bytes_per_element_match_the_model(gpu, name):
    if find_ncu() is None:
        pytest.skip("no Nsight Compute (ncu) here")
    c = submission_counters(str(SUBMISSIONS / name))
    if "ERR_NVGPUCTRPERM" in c.unavailable:
        pytest.skip(c.unavailable)
    assert not c.unavailable, c.unavailable
    yours, copy = c.kernels
    assert yours.dram_per_elem == pytest.approx(8.0, rel=0.02), c.findings
    assert copy.dram_per_elem == pytest.approx(8.0, rel=0.02), c.findings
    assert not any("exceed" in f or "fewer bytes" in f for f in c.findings), c.findings


def test_a_graded_report_has_the_students_chain_rows(gpu):
    report = grade_file(str(SUBMISSIONS / "gold_float4.cu"))
    assert report.verdict in ("gold", "silver", "fail") and report.chain is not None, report.chain_note
    rows = {r.version: r for r in report.chain.rows}
    assert rows["biasGeluFused"].floats_per_elem == 2 and rows["biasGeluFused + addResidual"].floats_per_elem == 5
    assert rows["staged chain<4>"].floats_per_elem == 7 and rows["fused chain<4>"].floats_per_elem == 3
    # deleting a store and a load: the student's chain beats the staged one
    assert rows["biasGeluFused + addResidual"].ms < rows["staged chain<4>"].ms
