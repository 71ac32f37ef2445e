"""The harness takes its exercise from its caller (issue 32): the student's row and sentence and their byte-count
flags (grader.source.claims), a whole program's kernel (grader.source.program), the static launch facts
(grader.feedback.launch_facts), the hints from the machine code with the exercise's own among them
(grader.feedback.hints, Exercise.code_hints) and the class page (grader.batch.classpage, classplots) read the
exercise they are given: here the RoPE exercise's ropeInterleaved, or an exercise with another byte model, never
biasGeluFused's values. No GPU needed (the one disassembler check skips without one)."""

from __future__ import annotations

import pytest

from class_fixture import realistic_rows
from grader import exercises
from grader.batch import classpage as cp
from grader.batch import classplots as plots
from grader.batch import gradebook as gb
from grader.core.errors import NoGpuError, SubmissionError
from grader.core.exercise import Exercise
from grader.core.launch import LaunchSpec
from grader.feedback import sass
from grader.feedback.hint import HintKind
from grader.feedback.hints import FROM_PTX, CodeSigns, code_hints
from grader.feedback.launch_facts import launch_hints
from grader.source.claims import byte_count_flags, find_claim, find_row, parse_claim, parse_row
from grader.source.contract import parse_contract
from grader.source.program import extract

ROPE = exercises.get("rope")
BIAS_GELU = exercises.get("bias_gelu")


class WideRope(type(ROPE)):
    """RoPE with another byte model (the tables counted too: 3 floats per element), so that a value taken from the
    exercise can be told from biasGeluFused's 2."""

    floats_per_element = 3
    bytes_text = "in, one table entry and out once each"


WIDE = WideRope()


# --- the row, the sentence and their flags (grader.source.claims) -------------------------------------------------
def test_the_row_is_the_one_labelled_with_the_exercise_s_kernel():
    text = ("// biasGeluFused 1 2 0.5000 4000.0\n"
            "// ropeInterleaved | 1 | 2 | 0.4881 | 4124.5 | 0.97\n"
            "__global__ void ropeInterleaved() {}\n")
    row = find_row(text, ROPE.kernel_name)
    assert (row.version, row.ms, row.where) == ("ropeInterleaved", 0.4881, "comment, line 2")
    assert find_row("// biasGeluFused 1 2 0.4881 4124.5\n", ROPE.kernel_name) is None
    assert find_row(text, BIAS_GELU.kernel_name).version == "biasGeluFused"  # the control
    contract = parse_contract(text, "s.cu", ROPE)
    assert contract.row.version == "ropeInterleaved"


def test_a_line_that_starts_like_the_exercise_s_row_is_no_sentence():
    line = "// ropeInterleaved 1 2 reached 0.97 of the copy floor\n"
    assert find_claim(line, ROPE.kernel_name) is None  # the row's start, not prose
    assert find_claim(line, BIAS_GELU.kernel_name).fraction == 0.97  # another kernel's name: a sentence


def flags_of(row: str | None, ex: Exercise, **measured):
    timing = dict(rows=None, cols=None, floor_gbs=None, measured_gbs=None, measured_ms=None) | measured
    return byte_count_flags(parse_row(row) if row is not None else None,
                            parse_claim("It reached 0.5 of the copy floor."), ex=ex, **timing)


def test_the_flags_name_the_exercise_s_kernel_and_its_byte_model():
    [missing] = flags_of(None, WIDE)
    assert missing.kind == "row-missing" and "`// ropeInterleaved 1 3 MS GB/S X_COPY`" in missing.message
    assert missing.grader == "ropeInterleaved | 1 | 3 | (not timed here)"
    assert flags_of("ropeInterleaved | 1 | 3 | 1.0 | 100", WIDE) == []  # 3 is this byte model's count
    [low] = flags_of("ropeInterleaved | 1 | 2 | 1.0 | 100", WIDE)
    assert low.kind == "low-byte-count" and "1.5x too low" in low.message
    assert low.grader == "3 floats/elem = 12 bytes (in, one table entry and out once each)"
    [gbs] = flags_of("ropeInterleaved | 1 | 3 | 1.0 | 9000", WIDE, floor_gbs=4000.0)
    assert gbs.kind == "impossible-gbs" and "(in, one table entry and out once each)" in gbs.message
    [missing] = flags_of(None, BIAS_GELU)  # the control: the page's own
    assert "`// biasGeluFused 1 2 MS GB/S X_COPY`" in missing.message
    assert missing.grader.startswith("biasGeluFused | 1 | 2")


# --- a whole program (grader.source.program) ------------------------------------------------------------------------
ROPE_KERNEL = ("__global__ void ropeInterleaved(const float* in, const float* cosTab, const float* sinTab, float* out, "
               "size_t pairs, int halfDim, int heads, int seq) {\n"
               "  size_t p = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n"
               "  if (p < pairs) { out[2 * p] = twice(in[2 * p]); out[2 * p + 1] = in[2 * p + 1]; }\n}\n")
PROGRAM = ("#include <cstdio>\n__device__ float twice(float v) { return 2.0f * v; }\n" + ROPE_KERNEL +
           "__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {}\n"
           'int main() { printf("host\\n"); return 0; }\n')


def test_a_whole_program_is_reduced_to_the_exercise_s_kernel():
    ex = extract(PROGRAM, "s.cu", ROPE.kernel_name)
    assert ex.whole_program and ex.kernel == "ropeInterleaved" and ex.kept == ("twice",)
    assert set(ex.ignored) == {"biasGeluFused", "main"}
    assert ex.summary().startswith("graded ropeInterleaved from your program; kept twice")
    assert "ropeInterleaved(" in ex.text and "biasGeluFused" not in ex.text
    with pytest.raises(SubmissionError, match="defines no kernel `__global__ void ropeInterleaved"):
        extract(PROGRAM.replace("void ropeInterleaved(", "void rope("), "s.cu", ROPE.kernel_name)


# --- the static launch facts (grader.feedback.launch_facts) -------------------------------------------------------
def test_a_stride_grid_with_no_graded_shape_is_counted_at_the_exercise_s_first_size():
    """A capped stride grid (no more blocks than the problem needs) at the first verified size: RoPE's 3 x 17 x 5 x
    64 is 8160 pairs, 32 blocks of 256; biasGeluFused's 101 x 97 would be 39."""
    spec = LaunchSpec(params=(), grid="stride", cap=True)
    [grid] = launch_hints(spec, None, "sm_90", ex=ROPE, sms=132)
    assert grid.kind == HintKind.GRID and "32 blocks of 256 threads for 132 SMs" in grid.text
    [grid] = launch_hints(spec, None, "sm_90", ex=BIAS_GELU, sms=132)
    assert "39 blocks of 256 threads" in grid.text  # the control


# --- the hints from the code, and the exercise's own (grader.feedback.hints, Exercise.code_hints) -----------------
PTX = """.visible .entry k(\n.param .u64 k_param_0\n)\n{\n\tld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];
\trem.u64 %rd3, %rd1, %rd2;\n\ttanh.approx.f32 %f5, %f1;\n\tret;\n}\n"""
"""A kernel `k` with a 64-bit remainder and a hardware tanh, as PTX."""


def test_the_tanh_gelu_hint_is_the_page_exercise_s_own():
    def hints(ex: Exercise):
        return code_hints(PTX, "k", scalar_copy_gbs=None, floor_gbs=None, kernel=ex.kernel_name,
                          texts=ex.hint_texts(), exercise_hints=ex.code_hints)

    rope = hints(ROPE)
    assert [h.kind for h in rope] == [HintKind.DIVISION]  # RoPE gives no hint of its own for a tanh
    assert "ropeInterleaved" in rope[0].text and "biasGeluFused" not in rope[0].text
    page = hints(BIAS_GELU)
    assert [h.kind for h in page] == [HintKind.DIVISION, HintKind.TANH]
    assert page[1].text.startswith("biasGeluFused looks like the tanh GELU (from the PTX; found: tanh.approx.f32)")
    assert "4.73e-04 at |v| = 2.699" in page[1].text
    assert Exercise().code_hints(CodeSigns("k", FROM_PTX, ("tanh.approx.f32",))) == []  # the default: none
    assert code_hints(PTX, "k", scalar_copy_gbs=None, floor_gbs=None, kernel="k")[-1].kind == HintKind.DIVISION


ROPE_MIX = ROPE_KERNEL.replace("twice(in[2 * p])", "tanhf(in[2 * p] * cosTab[p % halfDim])").replace(
    "out[2 * p] = ", "atomicExch(&out[2 * p], ").replace("]); out[2 * p + 1]", "])); out[2 * p + 1]")
"""A RoPE kernel (no GPU runs it here) with a remainder, a tanhf and an atomic store."""


def test_a_rope_grading_names_ropeInterleaved_and_never_biasGeluFused(tmp_path, monkeypatch):
    from grader.pipeline import grade

    def no_gpu(_device=0):
        raise NoGpuError("no GPU in this test")

    monkeypatch.setattr(grade, "open_gpu", no_gpu)
    path = tmp_path / "rope_mix.cu"
    path.write_text(ROPE_MIX)
    report = grade.grade_file(str(path), exercise_name="rope")
    assert (report.exercise, report.kernel, report.verdict) == ("rope", "ropeInterleaved", "no-gpu")
    assert report.flags == []  # RoPE asks for no part-3 row
    kinds = [h.kind for h in report.hints]
    assert HintKind.DIVISION in kinds and HintKind.TANH not in kinds
    assert "biasGeluFused" not in report.model_dump_json()
    if sass.find_disassembler() is not None:  # the launch facts read the machine code
        [atomic] = [h for h in report.hints if h.kind == HintKind.ATOMIC]
        assert "ropeInterleaved writes through atomic instructions" in atomic.text


ROPE_WIDE = ROPE_KERNEL.replace(
    "if (p < pairs) { out[2 * p] = twice(in[2 * p]); out[2 * p + 1] = in[2 * p + 1]; }",
    "if (p < pairs) { float2 v = reinterpret_cast<const float2*>(in)[p]; "
    "reinterpret_cast<float2*>(out)[p] = make_float2(v.x * cosTab[0], v.y * sinTab[0]); }")
"""A RoPE kernel storing its pair as one float2 (8 bytes) per thread, one pair per thread: the page's launch."""


@pytest.mark.skipif(sass.find_disassembler() is None, reason="no CUDA disassembler (pip install '.[sass]')")
def test_a_pair_per_thread_is_two_floats_per_thread(tmp_path, monkeypatch):
    """The idle-threads fact counts an element of elems_per_thread as the exercise's floats of out (a RoPE pair is 2):
    a float2 store of one pair per thread leaves no thread idle; a float4 store (two pairs) does, half of them."""
    from grader.pipeline import grade

    def no_gpu(_device=0):
        raise NoGpuError("no GPU in this test")

    def idle(text: str):
        path = tmp_path / "rope_wide.cu"
        path.write_text(text)
        return [h for h in grade.grade_file(str(path), exercise_name="rope").hints if h.kind == HintKind.IDLE]

    monkeypatch.setattr(grade, "open_gpu", no_gpu)
    assert idle(ROPE_WIDE) == []
    [hint] = idle(ROPE_WIDE.replace("reinterpret_cast<float2*>(out)[p] = make_float2(v.x * cosTab[0], v.y * sinTab[0])",
                                    "reinterpret_cast<float4*>(out)[p / 2] = make_float4(v.x, v.y, cosTab[0], 0.f)"))
    assert hint.text.startswith("1 of every 2 threads exit at once")
    assert "the launch gives each thread 1 element" in hint.text and "elems_per_thread = 2`" in hint.text


# --- the class page (grader.batch.classpage, classplots) ----------------------------------------------------------
def rope_class() -> list[gb.BatchResult]:
    """The class fixture's rows as a RoPE class: every report names rope and ropeInterleaved, and the counters label
    the student's launch with it."""
    rows = realistic_rows()
    for r in rows:
        r.report.exercise, r.report.kernel = "rope", ROPE.kernel_name
        for k in r.report.counters.kernels if r.report.counters else []:
            k.label = ROPE.kernel_name if k.label == "biasGeluFused" else k.label
    return rows


def test_the_class_page_reads_the_exercise_its_reports_name(monkeypatch):
    monkeypatch.setattr(ROPE, "floats_per_element", 3)  # a byte model biasGeluFused's 2 cannot pass for
    rows = rope_class()
    book = gb.build_gradebook(rows, "0.1.0", {"arch": None, "seed": 7})
    page = cp.class_page(book)
    assert f"<title>ropeInterleaved: {len(rows)} submissions</title>" in page
    assert "bytes counted: 12 per element" in page
    assert "biasGeluFused" not in page
    profiled = [r for r in rows if r.report.counters]
    assert profiled and all(plots.dram_per_elem(r) is not None for r in profiled)
    assert "the model counts 12 bytes per element" in plots.dram_plot(rows)[0]


def test_a_counted_launch_of_another_kernel_is_not_the_student_s():
    rows = [r for r in realistic_rows() if r.report.counters]
    assert rows and all(plots.dram_per_elem(r) is not None for r in rows)  # the page's own class: found
    for r in rows:
        r.report.exercise, r.report.kernel = "rope", ROPE.kernel_name  # labels still biasGeluFused
    assert all(plots.dram_per_elem(r) is None for r in rows)


def test_a_class_whose_reports_name_no_exercise_is_the_default_one():
    rows = realistic_rows()
    assert all(r.report.exercise == "" for r in rows)
    assert [ex.name for ex in plots.class_exercises(rows)] == [exercises.DEFAULT]
    assert plots.class_exercises([]) == [exercises.get(exercises.DEFAULT)]
    assert plots.bytes_per_elem(rope_class() + rows) == "8"  # two exercises, one byte count
