"""Byte-count flags (grader.source.claims) and hints from the compiled code (grader.feedback.hints): each flag and each
hint has a case that triggers it and one that does not. Hints compile the kernels in tests/data/hints/ with
NVRTC for sm_90 (no GPU needed)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from conftest import SUBMISSIONS, hint_texts
from grader.compile.nvrtc import compile_kernels
from grader.exercises import bias_gelu as exercise
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.feedback.hints import code_hints, ptx_facts
from grader.source.claims import PAGE_COLS, PAGE_ROWS, byte_count_flags, find_claim, implied_gbs, parse_claim, parse_row
from grader.source.read import read_submission

HINTS = Path(__file__).resolve().parent / "data" / "hints"
NAME = BIAS_GELU.kernel_name
"""The kernel whose row and sentence are read here: the course page's exercise's (the only one asking for them)."""
PAGE = {"kernel": BIAS_GELU.kernel_name, "exercise_hints": BIAS_GELU.code_hints, "texts": BIAS_GELU.hint_texts()}
"""What grader.pipeline.grade.hints_for gives grader.feedback.hints for the course page's exercise: its kernel's
name and its own hint producer (the tanh GELU hint)."""

# The graded shape and copy numbers of an H200 (issue 2): 61440 x 4096 floats (16 x its 60 MiB L2 per buffer),
# one-float copy 2684 GB/s, floor 4232 GB/s (cuMemcpyDtoD).
ROWS, COLS = 61440, 4096
SCALAR, FLOOR = 2684.0, 4232.0
N = ROWS * COLS


def ms_for(gbs: float, floats: float = 2, rows: int = ROWS, cols: int = COLS) -> float:
    return floats * 4 * rows * cols / (gbs * 1e9) * 1e3


def good_row(gbs: float = 4105.2, floats: float = 2) -> str:
    return f"biasGeluFused | 1 | {floats:g} | {ms_for(gbs, floats):.4f} | {gbs:.1f} | {gbs / FLOOR:.2f}"


GOOD_CLAIM = "It reached 0.97 of the copy floor; it cannot exceed 1 because it moves exactly what the copy moves."


def flags(row: str | None = good_row(), claim: str | None = GOOD_CLAIM, *, rows=ROWS, cols=COLS,
          floor=FLOOR, gbs=4105.2, ms=None):
    ms = ms if ms is not None else (ms_for(gbs) if gbs else None)
    return byte_count_flags(parse_row(row) if row is not None else None,
                            parse_claim(claim) if claim is not None else None,
                            rows=rows, cols=cols, floor_gbs=floor, measured_gbs=gbs, measured_ms=ms,
                            floor_name="cuMemcpyDtoD", ex=BIAS_GELU)


def kinds(fs) -> list[str]:
    return [f.kind for f in fs]


def one(fs, kind):
    found = [f for f in fs if f.kind == kind]
    assert len(found) == 1, kinds(fs)
    return found[0]


# --- flags -------------------------------------------------------------------------------------------

def test_an_honest_row_and_claim_raise_no_flag():
    assert flags() == []


def test_every_flag_shows_both_numbers():
    fs = flags("biasGeluFused | 1 | 3 | 0.5 | 9000 | 2.1", "It reached 130% of the floor.")
    assert set(kinds(fs)) == {"inflated-byte-count", "row-inconsistent", "impossible-gbs", "impossible-fraction"}
    for f in fs:
        assert f.student and f.grader and f.message


def test_missing_row_is_reported_with_the_graders_own_row():
    f = one(flags(row=None), "row-missing")
    assert f.student == "no row"
    assert f.grader.startswith("biasGeluFused | 1 | 2 | ") and "4105.2" in f.grader and "0.97" in f.grader
    assert "row-missing" not in kinds(flags())


def test_missing_row_without_timing_shows_the_byte_model():
    f = one(flags(row=None, rows=None, cols=None, floor=None, gbs=None), "row-missing")
    assert f.grader == "biasGeluFused | 1 | 2 | (not timed here)"


@pytest.mark.parametrize("raw", ["biasGeluFused | 1 | 2 | fast | 4105", "biasGeluFused | 1 | 2", "just words",
                                 "biasGeluFused | 1 | 2 | 0 | 4105.2"])
def test_malformed_row_is_reported_not_fatal(raw):
    f = one(flags(raw), "row-malformed")
    assert f.student == raw and f.grader.startswith("biasGeluFused | 1 | 2")


def test_a_row_with_spaces_instead_of_bars_is_not_malformed():
    assert flags(good_row().replace(" | ", " ")) == []


def test_three_floats_gets_the_bias_explanation():
    row = good_row(gbs=4105.2 * 1.5, floats=3)  # consistent with itself: GB/s inflated by the 3rd float
    fs = flags(row, "It reached 0.97 of the floor.")
    f = one(fs, "inflated-byte-count")
    assert "4 KiB on the page's 1024 columns" in f.message and "16 KiB at the graded 4096 columns" in f.message
    assert "once per row from cache" in f.message and "not 4 bytes per element" in f.message
    assert f.student == "3 floats/elem" and f.grader.startswith("2 floats/elem = 8 bytes")
    assert "row-inconsistent" not in kinds(fs)
    assert "impossible-gbs" in kinds(fs)  # 6158 GB/s is above the 4232 GB/s floor


def test_four_floats_names_the_staged_kernels():
    f = one(flags(good_row(gbs=8000, floats=4)), "inflated-byte-count")
    assert "staged kernels" in f.message and "2x" in f.message


def test_other_inflated_count_is_flagged_generically():
    f = one(flags(good_row(gbs=5000, floats=2.5)), "inflated-byte-count")
    assert "1.25x" in f.message and "bias as 4 bytes" not in f.message


def test_two_floats_is_not_an_inflated_count():
    assert "inflated-byte-count" not in kinds(flags(good_row(floats=2)))


def test_one_float_is_a_low_byte_count():
    f = one(flags(good_row(gbs=2000, floats=1)), "low-byte-count")
    assert f.student == "1 floats/elem" and "2x too low" in f.message
    assert "low-byte-count" not in kinds(flags())


def test_page_table_rows_are_consistent_at_the_page_shape():
    # The page's own part-3 table (Tesla T4, 16384 x 1024): each GB/s is computed from its ms.
    for row in ("addBiasRow | 1 | 2 | 0.5796 | 231.6", "applyGeluErf | 1 | 2 | 0.6236 | 215.2",
                "addResidual | 1 | 3 | 0.7696 | 261.6", "staged chain | 3 | 7 | 1.9798 | 237.3",
                "fused chain | 1 | 3 | 0.7825 | 257.3", "copyFloor | 1 | 2 | 0.5601 | 239.6"):
        assert "row-inconsistent" not in kinds(flags(row)), row
    assert implied_gbs(2, 0.5796, PAGE_ROWS, PAGE_COLS) == pytest.approx(231.6, rel=2e-4)


def test_row_consistent_at_the_graded_shape_only_is_fine():
    assert "row-inconsistent" not in kinds(flags(good_row(gbs=4000)))


def test_row_consistent_at_neither_shape_is_flagged():
    # 0.5232 ms and 4105.2 GB/s at 2 floats imply 2^28 elements (1 GiB buffers): neither 61440 x 4096 nor the page's.
    f = one(flags("biasGeluFused | 1 | 2 | 0.5232 | 4105.2 | 0.97"), "row-inconsistent")
    assert f"{4105.2e9 * 0.5232e-3 / 8:,.0f} elements (1,024.2 MiB per buffer)" in f.message
    assert "61440 x 4096" in f.grader and f"{PAGE_ROWS} x {PAGE_COLS}" in f.grader
    assert f.student == "2 floats/elem, 0.5232 ms, 4105.2 GB/s"


def test_gib_per_second_is_inconsistent():
    gib = 4105.2 * 1e9 / 2**30  # the same run written in GiB/s: 7.4% off
    assert "row-inconsistent" in kinds(flags(f"biasGeluFused | 1 | 2 | {ms_for(4105.2):.4f} | {gib:.1f}"))


def test_without_timing_consistency_is_not_judged():
    # With no GPU the graded shape is unknown: a row timed on the grading card must not be flagged there.
    assert "row-inconsistent" not in kinds(flags(good_row(), rows=None, cols=None, floor=None, gbs=None))
    assert "row-inconsistent" not in kinds(flags("v | 1 | 2 | 0.50 | 9999.0", rows=None, cols=None, floor=None,
                                                 gbs=None))


def test_rounding_of_short_numbers_is_allowed_for():
    # 0.54 ms written as 0.5 (one decimal: anything from 0.45 to 0.55) is 8% off, inside its rounding;
    # written as 0.50 it claims two decimals and is flagged.
    gbs = implied_gbs(2, 0.54, PAGE_ROWS, PAGE_COLS)
    assert "row-inconsistent" not in kinds(flags(f"v | 1 | 2 | 0.5 | {gbs:.1f}"))
    assert "row-inconsistent" in kinds(flags(f"v | 1 | 2 | 0.50 | {gbs:.1f}"))


def test_gbs_above_the_measured_floor_is_impossible():
    f = one(flags(good_row(gbs=4500)), "impossible-gbs")
    assert f.student == "4500 GB/s" and "4232.0" in f.grader and "4105.2" in f.grader
    assert "exactly what the copy moves" in f.message


def test_gbs_at_the_floor_within_slack_is_not_impossible():
    assert "impossible-gbs" not in kinds(flags(good_row(gbs=4250)))  # 0.4% above: another run's noise


def test_gbs_is_not_judged_without_a_measured_floor():
    assert "impossible-gbs" not in kinds(flags(good_row(gbs=9000), floor=None, gbs=None))


def test_claimed_fraction_above_one_is_impossible():
    f = one(flags(claim="It reached 1.3 of the copy floor."), "impossible-fraction")
    assert f.student == "1.3" and f.grader == "0.970 of the copy floor"
    assert "exactly what the copy moves" in f.message
    f = one(flags(claim="It reached 112% of the copy floor."), "impossible-fraction")
    assert f.student == "1.12"


@pytest.mark.parametrize("sentence, student", [
    ("It reached 2.83 of the copy floor.", "2.83"), ("It reached 283% of the copy floor.", "2.83"),
    ("It reached 2.83x copy.", "2.83"), ("It reached 12.5 times the copy floor.", "12.5"),
    ("At 0.1 ms it reached 4.2 of copyFloor, above what it can.", "4.2"),
])
def test_a_claim_of_any_size_is_read_and_flagged(sentence, student):
    # A fraction above 2 was not read at all ("no sentence found"), while 283% got the flag (issue 19).
    claim = find_claim(f"// {sentence}\n", NAME)
    assert claim is not None and claim.where == "comment, line 1"
    assert one(flags(claim=sentence), "impossible-fraction").student == student


@pytest.mark.parametrize("sentence", ["The copy floor is 4224.7 here; my kernel is at 0.94 of it.",
                                      "With CUDA 12.4 it reached 0.94 of the copy floor."])
def test_a_number_above_2_is_a_claim_only_as_a_fraction(sentence):
    # a GB/s written without its unit, a version: not the claim
    assert parse_claim(sentence).fraction == 0.94


def test_claimed_fraction_of_one_or_less_is_fine():
    assert "impossible-fraction" not in kinds(flags(claim="It reached 100% of the copy floor."))
    assert "impossible-fraction" not in kinds(flags(claim="It reached 0.56 of the floor."))


def test_x_copy_column_above_one_is_impossible():
    f = one(flags(good_row().rsplit("|", 1)[0] + "| 1.05"), "impossible-fraction")
    assert "x copy" in f.message and f.student == "1.05"


def test_claim_without_timing_shows_that_nothing_was_measured():
    f = one(flags(claim="It reached 1.2 of the floor.", floor=None, gbs=None), "impossible-fraction")
    assert f.grader == "not measured here (no timing)"


def test_missing_claim_is_reported():
    f = one(flags(claim=None), "claim-missing")
    assert f.student == "no sentence" and f.grader == "0.970 of the copy floor"
    assert "claim-missing" not in kinds(flags())


def test_claim_with_no_fraction_is_reported():
    f = one(flags(claim="It is fast because it is fused."), "claim-no-fraction")
    assert f.student == "It is fast because it is fused." and "0.970" in f.grader
    assert "claim-no-fraction" not in kinds(flags())


# --- hints -------------------------------------------------------------------------------------------

@cache
def compiled(name: str):
    c = compile_kernels((HINTS / name).read_text(), name, (exercise.KERNEL_NAME,), "sm_90")
    return c.ptx, c.kernels[exercise.KERNEL_NAME].mangled


def hints(name: str, scalar=SCALAR, floor=FLOOR) -> list[str]:
    ptx, mangled = compiled(name)
    return hint_texts(code_hints(ptx, mangled, scalar_copy_gbs=scalar, floor_gbs=floor,
                                 floor_name="cuMemcpyDtoD", **PAGE))


def has(hs, text) -> bool:
    return any(text in h for h in hs)


BIAS, LOADS, TANH = "look at your bias index first", "is 4 bytes wide", "is a different function"


def test_size_t_mod_cols_is_a_64_bit_remainder_and_gets_the_bias_hint():
    ptx, mangled = compiled("mod_cols.cu")
    assert ptx_facts(ptx, mangled).int_divisions == ("rem.u32", "rem.u64")  # rem.u64 with a 32-bit fast path
    hs = hints("mod_cols.cu")
    assert has(hs, BIAS) and has(hs, "rem.u64") and has(hs, "64-bit")


def test_int_mod_cols_is_a_32_bit_remainder_and_gets_the_bias_hint():
    ptx, mangled = compiled("mod_cols_int.cu")
    assert ptx_facts(ptx, mangled).int_divisions == ("rem.s32",)
    assert has(hints("mod_cols_int.cu"), BIAS)


@pytest.mark.parametrize("name", ["scalar.cu", "float4.cu", "tanh.cu", "erf.cu"])
def test_row_grid_kernels_get_no_bias_hint(name):
    assert not has(hints(name), BIAS)


def test_scalar_loads_on_a_card_with_a_slow_scalar_copy_get_both_bandwidths():
    ptx, mangled = compiled("scalar.cu")
    assert [g.opcode for g in ptx_facts(ptx, mangled).global_loads] == ["ld.global.nc.f32"]
    [h] = [h for h in hints("scalar.cu") if LOADS in h]
    assert "2684 GB/s" in h and "4232 GB/s" in h and "cuMemcpyDtoD" in h and "0.63" in h


def test_scalar_loads_on_a_card_whose_scalar_copy_is_the_floor_get_no_hint():
    assert not has(hints("scalar.cu", scalar=239.6, floor=244.7), LOADS)  # the page's T4: 0.98


def test_scalar_load_hint_needs_both_measurements():
    assert not has(hints("scalar.cu", scalar=None, floor=None), LOADS)
    assert not has(hints("scalar.cu", scalar=SCALAR, floor=None), LOADS)


@pytest.mark.parametrize("name", ["float4.cu", "erf.cu"])
def test_16_byte_loads_get_no_load_hint(name):
    assert not has(hints(name), LOADS)


@pytest.mark.parametrize("name", ["tanh.cu", "tanh_only.cu", "tanh_sigmoid.cu", "tanh_asm.cu", "tanh_noinline.cu",
                                  "tanh_double.cu"])
def test_tanh_forms_get_the_tanh_hint(name):
    [h] = [h for h in hints(name) if TANH in h]
    assert "4.73e-04" in h and "2.699" in h


def test_tanh_signatures():
    facts = {n: ptx_facts(*compiled(n)).tanh
             for n in ("tanh.cu", "tanh_only.cu", "tanh_sigmoid.cu", "tanh_asm.cu", "tanh_double.cu")}
    assert any("tanhf's inline expansion" in s for s in facts["tanh.cu"])
    assert any("0.044715" in s for s in facts["tanh.cu"])
    assert [s.split(" (")[0] for s in facts["tanh_only.cu"]] == ["tanhf's inline expansion"]
    assert any("0.0713548" in s for s in facts["tanh_sigmoid.cu"])
    assert "tanh.approx.f32" in facts["tanh_asm.cu"] and any("0.0356774" in s for s in facts["tanh_asm.cu"])
    assert facts["tanh_double.cu"] == ("tanh(double)'s inline expansion",)


@pytest.mark.parametrize("name", ["scalar.cu", "float4.cu", "mod_cols.cu", "erf.cu"])
def test_erf_kernels_get_no_tanh_hint(name):
    assert not has(hints(name), TANH)


def test_helpers_called_from_the_kernel_are_read():
    hs = hints("tanh_noinline.cu")
    assert has(hs, BIAS) and has(hs, TANH)


def test_other_kernels_in_the_file_are_not_read():
    ptx, mangled = compiled("erf.cu")
    assert "rem.u64" in ptx and "0f41102CB4" in ptx  # the other kernel has both
    assert hints("erf.cu") == []


def test_unknown_entry_gives_no_hints():
    ptx, _ = compiled("mod_cols.cu")
    assert code_hints(ptx, "_Z5otherv", scalar_copy_gbs=SCALAR, floor_gbs=FLOOR, **PAGE) == []


def test_fast_math_tanh_instruction_in_ptx_text():
    ptx = """.visible .entry k(\n.param .u64 k_param_0\n)\n{\n\tld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];
\ttanh.approx.f32 %f5, %f1;\n\tret;\n}\n"""
    assert ptx_facts(ptx, "k").tanh == ("tanh.approx.f32",)
    assert hints_of(ptx) == 1


def hints_of(ptx: str) -> int:
    return len(code_hints(ptx, "k", scalar_copy_gbs=SCALAR, floor_gbs=FLOOR, **PAGE))


# The repository's examples: each gets the hints its comment implies.
@pytest.mark.parametrize("name, expected", [
    ("bias_index_bug.cu", {BIAS, LOADS}),
    ("tanh_gelu.cu", {TANH, LOADS}),
    ("page_scalar.cu", {LOADS}),
    ("gold_float4.cu", set()),
])
def test_examples_get_their_hints(name, expected):
    sub = read_submission(SUBMISSIONS / name, BIAS_GELU)
    c = compile_kernels(sub.compile_text, sub.name, (exercise.KERNEL_NAME,), "sm_90")
    mangled = c.kernels[exercise.KERNEL_NAME].mangled
    hs = hint_texts(code_hints(c.ptx, mangled, scalar_copy_gbs=SCALAR, floor_gbs=FLOOR, **PAGE))
    assert {t for t in (BIAS, LOADS, TANH) if has(hs, t)} == expected


# --- the row and the sentence as plain comments, in the page's own form -----------------------------------
from grader.source.claims import NOTE_KINDS, find_row  # noqa: E402
from grader.source.contract import parse_contract  # noqa: E402


@pytest.mark.parametrize("line", [
    "// biasGeluFused 1 2 0.4881 4124.5",
    "// biasGeluFused 1 2 0.4881 4124.5 0.96",
    "// biasGeluFused 1 2 0.4881 4124.5 0.96x copy",
    "// biasGeluFused 1 2 0.4881 ms 4124.5 GB/s 0.96 x copy",
    "// biasGeluFused | 1 | 2 | 0.4881 | 4124.5 | 0.96",
    "// | biasGeluFused | 1 | 2 | 0.4881 | 4124.5 | 0.96 |",
    "/* biasGeluFused 1 2 0.4881 4124.5 */",
    "/*\n * version kernels floats/elem ms GB/s\n * biasGeluFused 1 2 0.4881 4124.5\n */",
])
def test_the_pages_row_layouts_are_read_from_plain_comments(line):
    row = find_row(line + "\n__global__ void biasGeluFused() {}\n", NAME)
    assert (row.version, row.kernels, row.floats_per_elem, row.ms, row.gbs) == ("biasGeluFused", 1, 2, 0.4881, 4124.5)
    assert row.problem is None and row.where.startswith("comment, line ")


@pytest.mark.parametrize("text", [
    "// biasGeluFused is the kernel below\n",  # prose that names the kernel
    "// biasGeluFused + addResidual 2 5 1.02 330.1\n",  # the chain's row, not the kernel's
    'const char* s = "// biasGeluFused 1 2 0.4881 4124.5";\n',  # inside a string, not a comment
    "// grade: params = x, bias, out, cols\n",
])
def test_what_is_not_the_kernels_row(text):
    assert find_row(text, NAME) is None


def test_a_row_that_starts_right_but_does_not_parse_is_reported():
    row = find_row("// biasGeluFused 1 2 fast 4124.5\n", NAME)
    assert row.problem and "ms" in row.problem and row.where == "comment, line 1"


@pytest.mark.parametrize("text, fraction", [
    ("// It reached 0.96 of the copy floor; it cannot exceed 1 because it moves what copyFloor moves.\n", 0.96),
    ("// My kernel reached 93% of the 244.7 GB/s copy ceiling.\n", 0.93),
    ("/* Reached 0.88 of copyFloor:\n   the float4 loads are missing. */\n", 0.88),
    ("// It reached 0.97 of the\n// copy floor, and cannot exceed 1.\n", 0.97),
])
def test_the_sentence_is_read_from_a_comment_about_the_copy_floor(text, fraction):
    claim = find_claim(text, NAME)
    assert claim.fraction == pytest.approx(fraction) and claim.where.startswith("comment, line ")


@pytest.mark.parametrize("text", ["// 2 floats per element, 0.5 ms\n", "// biasGeluFused 1 2 0.4881 4124.5 0.96\n",
                                  "// grade: block = 256\n", "// the copy floor is the fastest copy\n"])
def test_comments_that_are_not_the_sentence(text):
    assert find_claim(text, NAME) is None


def test_grade_lines_win_and_plain_comments_fill_in():
    text = ("// grade: row = biasGeluFused | 1 | 2 | 0.5 | 4000\n// biasGeluFused 1 2 0.4881 4124.5\n"
            "// It reached 0.96 of the copy floor.\n__global__ void biasGeluFused() {}\n")
    c = parse_contract(text, "s.cu", BIAS_GELU)
    assert c.row.ms == 0.5 and c.row.where == "// grade: row"
    assert c.claim.fraction == 0.96 and c.claim.where == "comment, line 3"
    assert "row-missing" not in kinds(byte_count_flags(c.row, c.claim, rows=None, cols=None, floor_gbs=None,
                                                      measured_gbs=None, measured_ms=None, ex=BIAS_GELU))


def test_missing_row_and_sentence_are_notes_counted_once_in_the_summary(tmp_path):
    from grader.batch import gradebook as gb
    from grader.output.report import GradeReport, render_text

    fs = flags(row=None, claim=None)
    assert set(NOTE_KINDS) <= set(kinds(fs))
    report = GradeReport(file="s.cu", verdict="gold", stage="grade", reason="0.96", flags=fs)
    text = render_text(report)
    assert "Note: no table row found" in text and "Flag (row-missing)" not in text
    rows = [gb.make_result(id=f"s{i}", path="s.cu", key="k", sha256="0", report=report, grader_version="t")
            for i in range(3)]
    assert all(r.flags == [] and set(r.notes) == set(NOTE_KINDS) for r in rows)
    summary = gb.summary_markdown(gb.build_gradebook(rows, "t", {}))
    assert "Notes: 3 submissions gave no part-3 table row and 3 no sentence" in summary
    assert "## To look at\n\nNothing: no error of the input or the grader, no busy row, no flag." in summary


def test_a_raw_string_in_host_code_is_not_a_comment():
    text = ('const char* kHelp = R"(\n// biasGeluFused 1 3 0.1000 9999.0 1.50\n'
            '// It reached 1.5 of the copy floor.\n)";\n'
            'const char* kOther = u8R"x(a )" // biasGeluFused 1 3 0.2 1.0 1.2\n)x";\n'
            "int main() { return 0; }\n// biasGeluFused 1 2 0.4881 275.0 0.96\n"
            "// It reached 0.96 of the copy floor; it cannot exceed 1.\n")
    row, claim = find_row(text, NAME), find_claim(text, NAME)
    assert (row.floats_per_elem, row.where) == (2, "comment, line 8")
    assert (claim.fraction, claim.where) == (0.96, "comment, line 9")


def test_a_raw_string_whose_delimiter_holds_a_quote_is_not_a_comment():
    # `R"x"(` ... `)x""` is one raw string for NVRTC: the sentence in it is text, not the student's (issue 19:
    # it was read, and flagged as an impossible 1.5)
    text = ('const char* kHelp = R"x"(\n)"";\n// It reached 1.5 of the copy floor.\n)x"";\n'
            "// It reached 0.96 of the copy floor; it cannot exceed 1.\n")
    claim = find_claim(text, NAME)
    assert (claim.fraction, claim.where) == (0.96, "comment, line 5")


def test_a_comment_continued_by_a_line_splice_goes_on_on_the_next_line():
    from grader.source.claims import comment_lines

    text = "int a; // It reached 0.96 of the \\\ncopy floor.\nint b;\n/* one\n * two \\\nthree */\n"
    assert comment_lines(text) == [(1, " It reached 0.96 of the "), (2, "copy floor."), (4, " one"), (5, " two "),
                                   (6, "three ")]
    assert find_claim(text, NAME).fraction == 0.96


def test_a_pasted_table_is_neither_the_sentence_nor_part_of_it():
    text = ("// version    kernels  floats/elem  ms      GB/s   x copy\n"
            "// addBiasRow       1            2  1.4512   92.5    0.93\n"
            "// staged chain, one region 3 7 1.9798 237.3 0.97\n"
            "// biasGeluFused    1            2  1.4420   93.1    0.94\n"
            "// It reached 0.94 of the copy floor; it cannot exceed 1.\n")
    assert (find_claim(text, NAME).fraction, find_claim(text, NAME).where) == (0.94, "comment, line 5")
    assert find_row(text, NAME).ms == 1.442


@pytest.mark.parametrize("sentence", [
    "At 1.142 ms it reached 0.94 of the copy floor; it cannot exceed 1.",
    "It reached 0.94 of the copy floor; it cannot exceed 1.0 because it moves what the copy moves.",
    "In 1.1420 ms (117.5 GB/s) it reached 0.94 x copy.",
    "Fraction of the copy floor: 0.94.",
    "It reached 0.94 of the copy floor (0.5392 / 0.5601), and cannot exceed 1 because it moves what the copy does.",
    "It reached 0.94 of the copy floor; the number cannot exceed 1.0 x copy because copyFloor moves the same bytes.",
    "It cannot exceed 1.0 of the copy floor because it moves the same bytes; mine reached 0.94.",
    "biasGeluFused reached 94% of the 244.7 GB/s copy ceiling; it cannot exceed 100%.",
])
def test_the_fraction_is_the_number_that_goes_with_the_copy_floor(sentence):
    assert find_claim(f"// {sentence}\n", NAME).fraction == 0.94
    assert parse_claim(sentence).fraction == 0.94


def test_a_digit_separator_does_not_hide_the_comment_after_it():
    text = ("constexpr int kRows = 16'384;  // biasGeluFused 1 2 0.4881 275.0 0.96\n"
            "char c = 'x'; // It reached 0.96 x copy\n")
    assert find_row(text, NAME).where == "comment, line 1" and find_claim(text, NAME).where == "comment, line 2"


def test_line_numbers_after_a_string_continued_on_the_next_line():
    text = 'const char* s = "one \\\ntwo";\n// biasGeluFused 1 2 0.4881 275.0 0.96\n'
    assert find_row(text, NAME).where == "comment, line 3"


def test_a_worked_division_over_lines_is_one_sentence():
    text = ("// My kernel reached 239.6 GB/s of the 244.7 GB/s copy floor:\n// 239.6 / 244.7 = 0.979\n"
            "// and it cannot exceed 1 because it moves exactly what copyFloor moves.\n"
            "// biasGeluFused 1 2 0.5601 239.6 0.98\n")
    claim = find_claim(text, NAME)
    assert (claim.fraction, claim.where) == (0.979, "comment, line 1")
    assert parse_claim("It only says that it cannot exceed 1.0 x copy.").fraction is None  # a bound, no claim


# The corpus files whose comments hold a student's sentence on purpose, and its fraction.
CORPUS_SENTENCES = {"tests/data/programs/helper_math_style.cu": 0.96}


def test_no_corpus_description_is_taken_for_a_students_sentence():
    # A corpus file's first lines describe it for the repository ("Expected verdict: ..."); they were read as
    # the student's sentence ("about 0.56 of the floor on an H200"). They are written without a fraction of
    # the copy floor now: write a new one so too, or name the file here.
    from conftest import ROOT

    found = {}
    for path in sorted([*(ROOT / "tests" / "data").rglob("*.cu"), *SUBMISSIONS.glob("*.cu")]):
        claim = find_claim(path.read_bytes().decode("utf-8", "replace"), NAME)
        if claim is not None:
            found[path.relative_to(ROOT).as_posix()] = claim.fraction
    assert found == CORPUS_SENTENCES
