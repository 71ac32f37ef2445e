"""Counters per instruction (grader.feedback.source_counters, issue 29): Nsight Compute's source page read per SASS
instruction, joined with the student's lines and buffers, judged each against its own width.

Two kinds of tests. On a stand-in: a source page written here in the format the NVIDIA documentation gives
(module docstring of source_counters: the column names are not yet confirmed on this project's ncu), from the
machine code NVRTC compiles here, with counts a scattered or a coalesced kernel would give. On the H200's
recordings (tests/data/ncu/h200_source_*.csv and h200_details_*.csv, recorded by benchmarks/ncu_record.py): each
skips, naming that script, until they are committed; then they check the readers on ncu's own output and compare
the grader's hints with Nsight Compute's own guided-analysis rules."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from grader.compile.nvrtc import compile_kernels
from grader.exercises import bias_gelu as exercise
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.feedback import sass
from grader.feedback.counters import InstructionCounters
from grader.feedback.launch_facts import pointer_roles
from grader.feedback.sass_access import width
from grader.feedback.source_counters import SOURCE_COLUMNS, join, parse_rules, parse_source
from grader.feedback.worth import Times, measured, scattered_hint, scattered_instructions
from grader.source.read import read_submission

ROOT = Path(__file__).resolve().parent.parent
CAUSES = ROOT / "tests" / "data" / "causes"
NCU = ROOT / "tests" / "data" / "ncu"
RECORD = "benchmarks/ncu_record.py"
needs_tool = pytest.mark.skipif(sass.find_disassembler() is None, reason="no CUDA disassembler (nvdisasm or "
                                "cuobjdump): pip install \".[sass]\"")


def listing(stem: str):
    """(the kernel's instructions with their lines, the parameter roles) of tests/data/causes/STEM.cu."""
    sub = read_submission(CAUSES / f"{stem}.cu", BIAS_GELU)
    c = compile_kernels(sub.compile_text, sub.name, (exercise.KERNEL_NAME,), "sm_90", lineinfo=True)
    info = c.kernels[exercise.KERNEL_NAME]
    tool = sass.find_disassembler()
    parsed = sass.parse(sass.disassemble(c.cubin, tool), tool.tool)
    roles = pointer_roles(sub.contract.launch_spec(tuple(p.size for p in info.params)))
    return parsed.functions[info.mangled], roles


def stand_in_page(body, sectors_per_request) -> str:
    """A source page in the documented format for `body`: every global access executed 1000 times, touching
    sectors_per_request(instruction) sectors each time, ideally its width's."""
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(["Kernel Name", "biasGeluFused"])
    w.writerow([SOURCE_COLUMNS[k] for k in ("address", "source", "executed", "sectors", "ideal", "excessive")])
    for ins in body:
        text = f"{ins.predicate + ' ' if ins.predicate else ''}{ins.opcode} {ins.operands}".strip()
        global_access = ins.root in ("LDG", "STG")
        n = 1000 if global_access else 0
        ideal = n * width(ins.opcode) if global_access else 0
        got = n * sectors_per_request(ins) if global_access else 0
        w.writerow([hex(0x7F0000001000 + ins.offset), text, n, got, ideal, max(0, got - ideal)])
    return "==PROF== a line ncu prints\n" + out.getvalue()


@needs_tool
def test_a_transposed_store_is_named_with_its_line_and_buffer():
    body, roles = listing("transposed")
    page = stand_in_page(body, lambda i: 32)  # a warp's 32 accesses, each in its own sector
    rows = parse_source(page)[0]
    found = join(rows, {i.offset: i.line for i in body}, roles, "sm_90")
    assert {(i.op, i.buffer, i.line) for i in found} >= {("st", "out", 13), ("ld", "x", 12), ("ld", "bias", 12)}
    bad = scattered_instructions(found, BIAS_GELU.cached)
    assert {(i.op, i.buffer) for i in bad} == {("st", "out"), ("ld", "x")}  # the bias load is left out
    store = next(i for i in bad if i.op == "st")
    assert store.per_request(store.sectors) == 32 and store.per_request(store.ideal) == 4


@needs_tool
def test_a_cached_scalar_bias_load_is_no_scattered_traffic():
    body, roles = listing("grid16")  # its bias loads: 4 bytes, 16 bytes apart across a warp: 16 sectors, ideal 4
    page = stand_in_page(body, lambda i: 16 if i.line in (23, 24, 25, 26) and i.root == "LDG" else width(i.opcode))
    found = join(parse_source(page)[0], {i.offset: i.line for i in body}, roles, "sm_90")
    bias = [i for i in found if i.buffer == "bias" and i.line in (23, 24, 25, 26)]
    assert len(bias) == 4 and all(i.sectors > 1.5 * i.ideal for i in bias)
    assert scattered_instructions(found, BIAS_GELU.cached) == []  # so no scattered hint, whatever the aggregate says


def test_the_hint_names_each_scattered_instruction():
    from test_worth import GRADINGS, recorded

    g = GRADINGS["col_major"]
    ms = {r["version"]: r["ms"] for r in g["table"]}
    m = measured(recorded("col_major"), Times(ms["biasGeluFused"], ms[g["floor_version"]], ms["copy, 1 float/thread"]))
    cols = g["bench_cols"]
    found = [InstructionCounters(offset=0x190, sass="LDG.E R3, desc[UR4][R8.64]", line=11, buffer="x", op="ld",
                                 nbytes=4, executed=1000, sectors=16500, ideal=4000),
             InstructionCounters(offset=0x1a0, sass="LDG.E R6, desc[UR4][R6.64]", line=11, buffer="bias", op="ld",
                                 nbytes=4, executed=1000, sectors=4000, ideal=4000),
             InstructionCounters(offset=0x3b0, sass="STG.E desc[UR4][R2.64], R5", line=12, buffer="out", op="st",
                                 nbytes=4, executed=1000, sectors=32000, ideal=4000)]
    h = scattered_hint(m, cols, found, BIAS_GELU)
    assert h.kind == "scattered" and h.lines == [11, 12]
    assert ("line 11, the load from x (LDG.E, 4 bytes per thread): each warp's loads touch 16.5 sectors where 4 "
            "would do") in h.text
    assert "line 12, the store to out (STG.E, 4 bytes per thread): each warp's stores touch 32.0 sectors" in h.text
    assert scattered_hint(m, cols, found[1:2], BIAS_GELU) is None  # judged per instruction: none scattered, no hint


def test_rules_are_read_from_the_details_page():
    text = ('"ID","Kernel Name","Section Name","Rule Name","Rule Type","Rule Description"\n'
            '"0","biasGeluFused","Launch Statistics","LaunchConfiguration","WRN","The grid for this launch is '
            'configured to execute only 16 blocks, which is less than the GPU\'s 132 multiprocessors."\n'
            '"0","biasGeluFused","Launch Statistics","LaunchConfiguration","WRN","The grid for this launch is '
            'configured to execute only 16 blocks, which is less than the GPU\'s 132 multiprocessors."\n')
    rules = parse_rules(text)
    assert rules == [("LaunchConfiguration", "WRN", rules[0][2])] and "132 multiprocessors" in rules[0][2]
    assert parse_rules('"ID","Kernel Name"\n"0","k"\n') == []


# --- the H200's recordings (benchmarks/ncu_record.py) -----------------------------------------------------------
NOT_RECORDED = (f"no source-level recordings yet: run `python {RECORD}` on the H200 and commit "
                "tests/data/ncu/h200_source_*.csv and h200_details_*.csv")
RECORDED = [p.stem.removeprefix("h200_source_") for p in sorted(NCU.glob("h200_source_*.csv"))
            if (CAUSES / f"{p.stem.removeprefix('h200_source_')}.cu").exists()]
CAUSE_STEMS = RECORDED or [pytest.param(None, marks=pytest.mark.skip(reason=NOT_RECORDED))]


def recording(stem: str) -> tuple[str, str]:
    src, det = NCU / f"h200_source_{stem}.csv", NCU / f"h200_details_{stem}.csv"
    return src.read_text(), det.read_text() if det.exists() else ""


@needs_tool
@pytest.mark.parametrize("stem", CAUSE_STEMS)
def test_the_recorded_source_page_is_read_per_instruction(stem):
    source, _ = recording(stem)
    blocks = parse_source(source)
    assert blocks and blocks[0], "no instruction rows: the column names of source_counters.SOURCE_COLUMNS differ"
    body, roles = listing(stem)
    found = join(blocks[0], {i.offset: i.line for i in body}, roles, "sm_90")
    assert found and all(i.executed is not None and i.sectors is not None for i in found)
    assert {i.sass.split(" ")[0] for i in found} <= {i.opcode for i in body}  # ncu's rows line up with ours


def _rules(stem: str) -> list[str]:
    return [" ".join(r).lower() for r in parse_rules(recording(stem)[1])]


@needs_tool
@pytest.mark.parametrize("stem", CAUSE_STEMS)
def test_the_hints_agree_with_nsight_computes_rules_or_say_why_not(stem):
    """Where ncu's rules say the grid is small, so does the grader; where they say uncoalesced, the grader's
    scattered instructions are the ones on x or out, and any other is a bias load (cached: why the grader does
    not call it scattered)."""
    source, details = recording(stem)
    if not details:
        pytest.skip(f"no details page recorded for {stem}: run `python {RECORD}` on the H200")
    rules = _rules(stem)
    kind = (CAUSES / f"{stem}.cu").read_text().split("Expected first hint: ", 1)[1].split(" ", 1)[0]
    if any("multiprocessors" in r and "grid" in r for r in rules):  # LaunchStats: "only 16 blocks, less than ..."
        assert kind == "grid", f"ncu says the grid is too small for {stem}: {rules}"
    if any("limited by the number of blocks" in r for r in rules):  # Occupancy: the per-SM block limit
        assert kind in ("blocks", "grid"), f"ncu says the block limit caps {stem}'s occupancy: {rules}"
    body, roles = listing(stem)
    found = join(parse_source(source)[0], {i.offset: i.line for i in body}, roles, "sm_90")
    excessive = [i for i in found if i.excessive]
    if any("uncoalesced" in r for r in rules):
        assert excessive, f"ncu calls {stem}'s accesses uncoalesced, its source page shows no excessive sectors"
        assert all(i.buffer == "bias" for i in excessive if i not in scattered_instructions(found, BIAS_GELU.cached))


def test_each_exercise_leaves_out_its_own_cached_inputs_and_says_its_own_fix():
    from grader.exercises import get
    from test_worth import GRADINGS, recorded

    rope = get("rope")
    tables = [InstructionCounters(offset=0x100 + 16 * k, sass="LDG.E R3, desc[UR4][R8.64]", line=9, buffer=b, op="ld",
                                  nbytes=4, executed=1000, sectors=16000, ideal=4000) for k, b in
              enumerate(("cosTab", "sinTab", "bias"))]
    assert [i.buffer for i in scattered_instructions(tables, rope.cached)] == ["bias"]
    assert [i.buffer for i in scattered_instructions(tables, BIAS_GELU.cached)] == ["cosTab", "sinTab"]
    g = GRADINGS["col_major"]
    ms = {r["version"]: r["ms"] for r in g["table"]}
    m = measured(recorded("col_major"), Times(ms["biasGeluFused"], ms[g["floor_version"]], ms["copy, 1 float/thread"]))
    said = {ex.name: scattered_hint(m, g["bench_cols"], None, ex).text for ex in (rope, BIAS_GELU)}
    assert said["rope"].endswith(rope.counter_texts.scatter_fix) and "row grid" not in said["rope"]
    assert said["bias_gelu"].endswith(BIAS_GELU.counter_texts.scatter_fix) and "row grid" in said["bias_gelu"]


def test_a_pair_read_as_two_4_byte_loads_is_not_scattered():
    # the H200's counters of the RoPE page kernel (submissions/rope/page_scalar.cu): in[2p] and in[2p + 1] each
    # touch 8 sectors per warp request where a 4-byte access's ideal is 4, but the second load's sectors are the
    # first's, served by the L1: its L2 bytes per element are the page's answer's (13.24 against 13.19)
    from grader.exercises import get
    from grader.feedback.counters import Counters, KernelCounters
    from grader.feedback.worth import access_suspect

    n = 1 << 20

    def launch(label, l2, ld, st, ms):
        return KernelCounters(label=label, kernel=label, elements=n, dram_read=4.125 * n, dram_write=3.93 * n,
                              l2_bytes=l2 * n, duration_ns=ms * 1e6, ld_sectors=ld * n, ld_requests=n / 32,
                              st_sectors=0.25 * n, st_requests=n / 32, instructions=1.9 * n, issue_pct=68.0)

    c = Counters(kernels=[launch("ropeInterleaved", 13.235, 0.375, 0.25, 0.688),
                          launch("model answer, 8 B/thread", 12.567, 0.33, 0.25, 0.476),
                          launch("page's answer, 4 B/thread", 13.191, 0.375, 0.25, 0.678)])
    pair = [InstructionCounters(offset=0x100 + 16 * k, sass="LDG.E.CONSTANT R3, desc[UR4][R8.64]", line=15 + k,
                                buffer="in", op="ld", nbytes=4, executed=n / 32, sectors=n / 4, ideal=n / 8)
            for k in range(2)]
    rope = get("rope")
    assert len(scattered_instructions(pair, rope.cached)) == 2  # each instruction alone is 2 x its ideal
    m = measured(c, Times(0.688, 0.468, 0.735))
    assert m.ref.label.startswith("page's answer")
    assert scattered_hint(m, 128, pair, rope) is None and scattered_hint(m, 128, None, rope) is None
    assert not access_suspect(c)
    c.kernels[0] = launch("ropeInterleaved", 3 * 13.235, 0.375, 0.25, 0.688)  # were they missing the L1, the L2
    m = measured(c, Times(0.688, 0.468, 0.735))  # would carry the extra sectors: then they are scattered
    assert scattered_hint(m, 128, pair, rope).kind == "scattered" and access_suspect(c)
