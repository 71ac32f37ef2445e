"""Hardware counters (grader.feedback.counters) without a GPU: finding ncu, reading its CSV, the findings against the
byte model, the reasons given when counters cannot be read, and a stand-in ncu run end to end."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from conftest import ended
from grader.exercises import get
from grader.feedback import counters
from grader.feedback.counters import (
    MODEL,
    PAGE_ANSWER,
    CountersUnavailable,
    KernelCounters,
    counters_of,
    find_ncu,
    findings,
    kernel_base,
    parse_csv,
    run_ncu,
    submission_counters,
)
from grader.output.report import GradeReport, render_text

DATA = Path(__file__).parent / "data" / "ncu"
BIAS_GELU = get("bias_gelu")
N = 61440 * 4096


def test_ncus_raw_csv_is_read_with_its_units():
    rows = parse_csv((DATA / "raw.csv").read_text())
    assert [r["Kernel Name"] for r in rows] == ["biasGeluFused", "copyVec4"]
    k = counters.kernel_counters("biasGeluFused", rows[0], N)
    assert k.dram_read == 1_007_681_536 and k.dram_write == 983_040_000 and k.l2_bytes == pytest.approx(2.02e9)
    assert k.dram_per_elem == pytest.approx((1_007_681_536 + 983_040_000) / N)


def kc(read, write, l2=None, n=1000):
    return KernelCounters(label="k", kernel="k", elements=n, dram_read=read * n, dram_write=write * n,
                          l2_bytes=None if l2 is None else l2 * n)


def test_a_kernel_that_moves_the_model_has_no_complaint():
    out = findings(kc(4.0, 3.9, l2=8.1), kc(4.0, 4.0), BIAS_GELU)
    assert len(out) == 2 and "7.90 in all, against the model's 8 (0.988 of it)" in out[0]
    assert out[1].startswith("L2: 8.10 bytes per element")


@pytest.mark.parametrize("read, write, words", [
    (8.0, 4.0, "reads exceed the model"),
    (4.0, 6.0, "writes exceed the model"),
    (4.0, 2.0, "fewer bytes than a correct kernel must move"),
    (0.5, 4.0, "a kernel that skips work"),
])
def test_findings_name_the_side_and_the_causes(read, write, words):
    assert any(words in f for f in findings(kc(read, write), None, BIAS_GELU))


def test_no_ncu_is_one_line_not_an_error(monkeypatch):
    monkeypatch.setattr(counters, "find_ncu", lambda: None)
    c = submission_counters("s.cu", BIAS_GELU, 10, 1024)
    assert c.unavailable.startswith("no Nsight Compute here") and c.kernels == []
    from grader.feedback.counters import verdict_allows

    assert verdict_allows(GradeReport(file="s.cu", verdict="error", stage="compile", reason="x")).startswith(
        "the kernel did not run (compile")
    assert verdict_allows(GradeReport(file="s.cu", verdict="no-gpu", reason="x")) == "no GPU here"
    text = render_text(GradeReport(file="s.cu", verdict="gold", stage="grade", reason="0.96", counters=c))
    assert "Counters: not measured: no Nsight Compute here" in text


def test_ncu_is_found_on_path_and_under_cuda_home(tmp_path, monkeypatch):
    tool = fake_ncu(tmp_path / "bin", "exit 0")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert find_ncu() == str(tool)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert find_ncu() == str(tool)


def fake_ncu(folder: Path, body: str) -> Path:
    """A stand-in `ncu`: copies tests/data/ncu/raw.csv to its --log-file, or does `body`."""
    folder.mkdir(parents=True, exist_ok=True)
    tool = folder / "ncu"
    tool.write_text(f"""#!/bin/sh
if [ "$1" = "--version" ]; then echo "NVIDIA (R) Nsight Compute Command Line Profiler"; \
echo "Version 2025.3.1.0"; exit 0; fi
log=""
while [ $# -gt 0 ]; do if [ "$1" = "--log-file" ]; then log="$2"; fi; shift; done
{body}
""")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return tool


def test_a_stand_in_ncu_run_end_to_end(tmp_path):
    tool = fake_ncu(tmp_path, f'cp "{DATA / "raw.csv"}" "$log"; exit 0')
    version, rows = run_ncu([sys.executable, "-c", "pass"], kernels="biasGeluFused", ncu=str(tool))
    assert version == "ncu 2025.3.1.0" and len(rows) == 2


@pytest.mark.parametrize("body, words", [
    ('echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission" >&2; exit 1', "no permission"),
    ('echo "==ERROR== Failed to find any kernel" > "$log"; exit 0', "ncu: Failed to find any kernel"),
    ('echo "Traceback: boom" >&2; exit 3', r"the profiled run failed \(exit 3"),
])
def test_reasons_when_counters_cannot_be_read(tmp_path, body, words):
    tool = fake_ncu(tmp_path, body)
    with pytest.raises(CountersUnavailable, match=words):
        run_ncu([sys.executable, "-c", "pass"], ncu=str(tool))


def test_submission_counters_with_a_stand_in_ncu(tmp_path, monkeypatch):
    tool = fake_ncu(tmp_path, f'cp "{DATA / "raw.csv"}" "$log"; exit 0')
    monkeypatch.setattr(counters, "find_ncu", lambda: str(tool))
    c = submission_counters("submissions/gold_float4.cu", BIAS_GELU)  # the shape comes from the copy's grid
    assert [k.label for k in c.kernels] == ["biasGeluFused", "copy, 16 B/thread"] and not c.unavailable
    assert c.findings[0].startswith("DRAM: 4.00 bytes read and 3.91 written per element")
    text = render_text(GradeReport(file="s.cu", verdict="gold", stage="grade", reason="0.96", counters=c))
    assert "Counters (ncu 2025.3.1.0" in text and "DRAM total" in text


def test_the_self_checks_launches_are_matched_in_order_and_settle_the_assumptions():
    from reference_kernels.counted import counters_text, suite_counters_from

    def row(name, read, write, n):
        return {"Kernel Name": name, "dram__bytes_read.sum": str(read * n), "dram__bytes_write.sum": str(write * n),
                "lts__t_bytes.sum": str((read + write) * n)}

    n = 1000
    plan = [{"table": "RoPE", "label": "ropeInterleaved<4>", "kernels": 1, "elements": n, "modeled": 8},
            {"table": "RoPE long", "label": "ropeInterleaved<4>", "kernels": 1, "elements": n, "modeled": 8},
            {"table": "chain", "label": "addBiasRow<4>", "kernels": 1, "elements": n, "modeled": 8},
            {"table": "chain", "label": "staged chain<4>", "kernels": 3, "elements": n, "modeled": 28}]
    rows = [row("fillUniform", 0, 4, n), row("ropeInterleaved", 4, 4, n), row("fillUniform", 0, 4, n),
            row("ropeInterleaved", 5, 4, n), row("addBiasRow", 4, 4, n), row("addBiasRow", 4, 4, n),
            row("applyGeluErf", 4, 4, n), row("addResidual", 8, 4, n)]
    c = suite_counters_from("ncu 2025.3.1.0", rows, plan)
    assert [v.measured for v in c.versions] == [8, 9, 8, 28]
    assert c.get("chain", "staged chain<4>").kernels == ["addBiasRow", "applyGeluErf", "addResidual"]
    bias, tables = c.findings
    assert bias.held and tables.held and "the tables cost up to 1.00 bytes per element" in tables.measured
    assert "held: the bias row is not DRAM traffic" in counters_text(c)
    refuted = suite_counters_from("ncu", [row("ropeInterleaved", 4, 4, n), row("ropeInterleaved", 4, 4, n),
                                          row("addBiasRow", 8, 4, n)], plan[:3])
    assert not refuted.findings[0].held and "12.00 of 8" in refuted.findings[0].measured


def test_a_correct_kernel_beside_a_copy_that_left_dirty_lines_in_the_l2_is_not_flagged():
    # at a benchmark shape capped by free memory the L2 holds a larger share of out when the launch ends: the
    # copy's writes measure 3.75 per element, and so do a correct kernel's
    out = findings(kc(4.0, 3.75), kc(4.0, 3.75), BIAS_GELU)
    assert not any("fewer bytes" in f for f in out), out
    assert any("fewer bytes" in f for f in findings(kc(4.0, 3.3), kc(4.0, 3.75), BIAS_GELU))


def test_no_dram_bytes_at_all_is_a_finding_not_a_division_by_zero():
    out = findings(kc(0.0, 0.0, l2=12.0), kc(4.0, 3.9), BIAS_GELU)
    assert any("fewer bytes than a correct kernel must move" in f for f in out)
    assert any(f.startswith("L2: 12.00 bytes per element through the L2") for f in out)


def test_what_the_profiled_program_prints_is_never_read(tmp_path):
    # the kernel's printf reaches ncu's stdout: bytes that are not UTF-8, a forged permission error, forged CSV
    forged = '"ID","Kernel Name","dram__bytes_read.sum"\\n"0","biasGeluFused","1"'
    tool = fake_ncu(tmp_path, f"printf '\\377\\376 ERR_NVGPUCTRPERM\\n==ERROR== forged\\n{forged}\\n'; "
                              f'cp "{DATA / "raw.csv"}" "$log"; exit 0')
    version, rows = run_ncu([sys.executable, "-c", "pass"], ncu=str(tool))
    assert len(rows) == 2 and rows[0]["dram__bytes_read.sum"] != "1"


def test_an_ncu_that_hangs_is_stopped_with_everything_it_started(tmp_path):
    pid_file = tmp_path / "child.pid"
    tool = fake_ncu(tmp_path / "bin", f'sleep 3600 & echo $! > "{pid_file}"; sleep 3600')
    with pytest.raises(CountersUnavailable, match="ncu did not finish within 1 s"):
        run_ncu([sys.executable, "-c", "pass"], timeout_s=1, ncu=str(tool))
    child = int(pid_file.read_text())
    assert ended(child), "the profiled child outlived ncu's timeout"


def test_an_ncu_whose_version_hangs_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(counters, "VERSION_TIMEOUT_S", 0.5)
    tool = tmp_path / "ncu"
    tool.write_text("#!/bin/sh\nsleep 3600\n")
    tool.chmod(0o755)
    monkeypatch.setattr(counters, "find_ncu", lambda: str(tool))
    c = submission_counters("submissions/gold_float4.cu", BIAS_GELU, 10, 1024)
    assert c.unavailable == "ncu --version did not finish within 0.5 s"


def test_the_reference_launches_are_found_under_the_names_ncu_gives_templates():
    # ncu names the model answer and the page's answer, templates of the chain's source, "void biasGeluFused<4>(...)":
    # a prefix test on the name missed both on the H200, and every hint then lacked its reference.
    names = ["biasGeluFused(const float *, const float *, float *, unsigned long, unsigned long)",
             "void biasGeluFused<4>(const float *, const float *, float *, unsigned long)",
             "void biasGeluFused<1>(const float *, const float *, float *, unsigned long)",
             "copyVec4(const float4 *, float4 *, unsigned long)", "copyScalar(const float *, float *, unsigned long)"]
    rows = [{"Kernel Name": name, "Grid Size": "(64, 1, 1)", "dram__bytes_read.sum": "4096",
             "dram__bytes_write.sum": "4096", "gpu__time_duration.sum": "1000"} for name in names]
    c = counters_of("ncu 2025.3.1.0", rows, BIAS_GELU)
    # without store requests a reference's width is not measured: its label names its role alone
    assert [k.label for k in c.kernels] == ["biasGeluFused", "model answer", "page's answer", "copy, 16 B/thread",
                                            "copy, 1 float/thread"]
    assert c.get(MODEL) is c.kernels[1] and c.get(PAGE_ANSWER) is c.kernels[2] and c.yours is c.kernels[0]
    assert c.kernels[0].elements == 64 * 256 * 4
    assert [kernel_base(n) for n in names] == ["biasGeluFused"] * 3 + ["copyVec4", "copyScalar"]
    assert kernel_base("void ns::biasGeluFused<4, float>(const float *)") == "biasGeluFused"
    assert kernel_base("biasGeluFusedX(const float *)") != "biasGeluFused"


def test_ropes_launches_are_labelled_by_order_and_its_findings_speak_of_its_tables():
    # rope's child launches ropeInterleaved (the student's), then ropeInterleavedVec2<4> (the model answer) and
    # ropeInterleaved<1> (the page's answer): two names, told apart by the order of the launches
    rope = get("rope")
    names = ["ropeInterleaved(const float *, const float *, const float *, float *, unsigned long, int, int, int)",
             "void ropeInterleavedVec2<4>(const float *, const float *, const float *, float *, unsigned long, int, "
             "int, int)",
             "void ropeInterleaved<1>(const float *, const float *, const float *, float *, unsigned long, int, int, "
             "int)",
             "fillDraw(float *, unsigned long, unsigned long)",
             "copyVec4(const float4 *, float4 *, unsigned long)", "copyScalar(const float *, float *, unsigned long)"]
    n = 64 * 256 * 4  # the 16-byte copy's grid: 64 blocks of 256 threads, 4 floats each
    width = [4, 8, 4, 4, 16, 4]  # bytes each thread stores per store instruction
    rows = [{"Kernel Name": name, "Grid Size": "(64, 1, 1)", "dram__bytes_read.sum": str((8 if i == 0 else 4) * n),
             "dram__bytes_write.sum": str(4 * n), "gpu__time_duration.sum": "1000",
             "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": str(4 * n / width[i] / 32),
             "smsp__inst_executed.sum": str([1.95, 1.27, 1.91, 1, 0.3, 0.6][i] * n)}
            for i, name in enumerate(names)]
    c = counters_of("ncu 2025.3.1.0", rows, rope)
    # the labels give what each reference's stores measured: rope's model answer stores a float2 per pair
    assert [k.label for k in c.kernels] == ["ropeInterleaved", "model answer, 8 B/thread", PAGE_ANSWER,
                                            "copy, 16 B/thread", "copy, 1 float/thread"]
    assert c.get(MODEL).kernel.startswith("void ropeInterleavedVec2<4>")
    assert c.yours.label == "ropeInterleaved" and c.model_bytes_per_elem == 8
    over = next(f for f in c.findings if f.startswith("reads exceed"))
    assert "cos and sin tables" in over and "bias" not in over
    # the work finding names the references by role, whatever width their labels measured (the H200 found this
    # one raising KeyError on rope's "model answer, 8 B/thread")
    work = next(f for f in c.findings if f.startswith("work:"))
    assert "(the page's answer 1.91, the model answer 1.27)" in work
    assert counters.profiled_kernels(rope) == "ropeInterleaved|ropeInterleavedVec2|copyVec4|copyScalar"
    assert counters.profiled_kernels(BIAS_GELU) == "biasGeluFused|copyVec4|copyScalar"


def test_the_child_is_told_its_exercise():
    child = counters.profiled_child("submissions/rope/gold_wide.cu", get("rope"), 61440, 128)
    assert child[1:3] == ["-m", "grader.pipeline.profiled"]
    assert child[child.index("--exercise") + 1] == "rope" and child[-4:] == ["--rows", "61440", "--cols", "128"]
