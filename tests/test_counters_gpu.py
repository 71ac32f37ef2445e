"""Counters and the exercise's chain on a GPU: Nsight Compute's DRAM bytes for the examples and the launches
profiled beside them (the model answer, the page's answer, both copies) sit within 2% of the byte model (8 per
element), each coalesced (a warp's store touches as many sectors as its threads store 4-byte words), and a
graded report carries the student's part-3 chain rows."""

import pytest

from conftest import SUBMISSIONS
from grader.exercises import get
from grader.feedback.counters import COPY_SCALAR, COPY_VEC4, MODEL, PAGE_ANSWER, find_ncu, submission_counters
from grader.pipeline.grade import add_counters, grade_file

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", ["gold_float4.cu", "page_scalar.cu"])
def test_dram_bytes_per_element_match_the_model(gpu, name):
    if find_ncu() is None:
        pytest.skip("no Nsight Compute (ncu) here")
    c = submission_counters(str(SUBMISSIONS / name), get("bias_gelu"))
    if "ERR_NVGPUCTRPERM" in c.unavailable:
        pytest.skip(c.unavailable)
    assert not c.unavailable, c.unavailable
    assert [k.label for k in c.kernels] == ["biasGeluFused", MODEL, PAGE_ANSWER, COPY_VEC4, COPY_SCALAR]
    for k in c.kernels:  # every launch moves the model's bytes, coalesced
        assert k.dram_per_elem == pytest.approx(8.0, rel=0.02), c.findings
        assert k.sectors_per_request("st") == pytest.approx(k.bytes_per_thread_access, rel=0.01), k
    assert c.get(MODEL).bytes_per_thread_access == 16 and c.get(PAGE_ANSWER).bytes_per_thread_access == 4
    assert not any("exceed" in f or "fewer bytes" in f for f in c.findings), c.findings


def test_a_graded_report_has_the_students_chain_rows(gpu):
    report = grade_file(str(SUBMISSIONS / "gold_float4.cu"))
    assert report.verdict in ("gold", "silver", "fail") and report.chain is not None, report.chain_note
    rows = {r.version: r for r in report.chain.rows}
    assert rows["biasGeluFused"].floats_per_elem == 2 and rows["biasGeluFused + addResidual"].floats_per_elem == 5
    assert rows["staged chain<4>"].floats_per_elem == 7 and rows["fused chain<4>"].floats_per_elem == 3
    # deleting a store and a load: the student's chain beats the staged one
    assert rows["biasGeluFused + addResidual"].ms < rows["staged chain<4>"].ms


def test_a_column_major_kernel_gets_its_counters_unasked_and_its_scattered_accesses_first(gpu):
    path = str(SUBMISSIONS.parent / "tests" / "data" / "hints" / "col_major.cu")
    report = grade_file(path)
    assert report.verdict == "fail" and report.fraction_of_scalar_copy < 0.5, report.reason
    add_counters(report, path, asked=False)
    if find_ncu() is None or "ERR_NVGPUCTRPERM" in report.counters.unavailable:
        assert report.counters.unavailable and report.hints[0].kind == "scattered"  # from the machine code
        pytest.skip(report.counters.unavailable)
    assert report.counters.why.startswith("wanted because") and report.hints[0].kind == "scattered", report.hints


def test_ropes_counters_profile_its_kernel_beside_its_answers(gpu):
    # the counters take the exercise: the RoPE gold example is profiled beside rope.cu's model answer
    # (ropeInterleavedVec2<4>, 8-byte accesses) and the page's answer (ropeInterleaved<1>), all at 8 bytes per element
    if find_ncu() is None:
        pytest.skip("no Nsight Compute (ncu) here")
    c = submission_counters(str(SUBMISSIONS / "rope" / "gold_wide.cu"), get("rope"))
    if "ERR_NVGPUCTRPERM" in c.unavailable:
        pytest.skip(c.unavailable)
    assert not c.unavailable, c.unavailable
    assert [k.label for k in c.kernels] == ["ropeInterleaved", "model answer, 8 B/thread", PAGE_ANSWER, COPY_VEC4,
                                            COPY_SCALAR]
    for k in c.kernels:
        assert k.dram_per_elem == pytest.approx(8.0, rel=0.03), (k.label, c.findings)
    assert c.get(MODEL).bytes_per_thread_access == 8 and c.get(PAGE_ANSWER).bytes_per_thread_access == 4
    assert not any("exceed" in f or "fewer bytes" in f for f in c.findings), c.findings


def test_a_rope_grading_with_counters_ranks_its_hints_by_them(gpu):
    path = str(SUBMISSIONS / "rope" / "page_scalar.cu")
    report = grade_file(path, exercise_name="rope")
    assert report.verdict in ("gold", "silver", "fail") and report.kernel == "ropeInterleaved", report.reason
    add_counters(report, path, asked=True)
    if find_ncu() is None or "ERR_NVGPUCTRPERM" in report.counters.unavailable:
        pytest.skip(report.counters.unavailable or "no ncu")
    assert not report.counters.unavailable, report.counters.unavailable
    assert report.counters.yours.label == "ropeInterleaved"
    assert not any("bias" in h.text or "erff" in h.text for h in report.hints), [h.text for h in report.hints]
    # its two 4-byte loads of a pair touch 8 sectors each, but the L1 serves the second: not scattered
    kinds = [h.kind for h in report.hints]
    assert "scattered" not in kinds, report.hints
    # ranked by what the counters measured (H200: width +0.22, the division little on its own while the loads are
    # 4 bytes wide), not by the page's order of lessons
    assert kinds[:2] == ["width", "division"], report.hints
    assert report.hints[0].fraction_after - report.hints[0].fraction_now > 0.1, report.hints[0]
