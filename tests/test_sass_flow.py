"""The control flow of the machine code (grader.feedback.sass_flow): blocks, loops, paths, and what they say about the
accesses of grader.feedback.sass_access (the loop of an access, repeated stores on one path, two passes over a buffer,
compute loops, how often an instruction runs). Hand-written listings pin each rule; the kernels of tests/data/flow/
(written the way students write them) and tests/data/causes/ pin what NVRTC 13.5 emits for sm_90."""

from __future__ import annotations

import pytest

from conftest import assert_linear
from flow_kernels import kernel, needs_nvdisasm, parsed
from grader.feedback import sass
from grader.feedback.launch_facts import buffer
from grader.feedback.sass_access import accesses
from grader.feedback.sass_flow import compute_loops, flow, frequency, loop_of, passes

LOOP = ("S2R R0, SR_TID.X", ".L_x_0:", "IADD3 R0, R0, 0x1, RZ", "ISETP.GE.AND P0, PT, R0, 0x10, PT",
        "@!P0 BRA `(.L_x_0)", "EXIT")
ROLES = {0: "x", 8: "bias", 16: "out", 24: "n", 28: "cols"}
"""Parameter offsets of the kernels (x, bias, out, int n, int cols) in tests/data/flow/."""


def block_starts(fl) -> list[int]:
    return [b.start for b in fl.blocks]


# --- the graph, on hand-written listings ---------------------------------------------------------------------------

def test_labels_name_the_offset_of_the_instruction_after_them():
    body, labels = parsed(*LOOP)
    assert labels == {".L_x_0": 0x10} and [i.offset for i in body] == [0, 0x10, 0x20, 0x30, 0x40]


def test_blocks_split_at_targets_and_after_branches_exits_and_calls_but_not_at_reconvergence():
    body, labels = parsed("S2R R0, SR_TID.X", "BSSY B0, `(.L_x_1)", "@P0 BRA `(.L_x_0)", "MOV R6, 0x60",
                          "CALL.REL.NOINC `(f)", "IADD3 R0, R0, 0x1, RZ", ".L_x_0:", "BSYNC B0", ".L_x_1:",
                          "WARPSYNC 0xffffffff", "@P1 EXIT", "STG.E desc[UR4][R2.64], R0", "EXIT", ".L_x_2:",
                          "BRA `(.L_x_2)")
    fl = flow(body, labels)
    assert block_starts(fl) == [0, 3, 5, 6, 9, 11]  # not at BSSY's label (7): no branch goes there
    succ = {fl.blocks[k].start: sorted(fl.blocks[s].start for s in fl.successors(k)) for k in range(len(fl.blocks))}
    assert succ == {0: [3, 6], 3: [5], 5: [6], 6: [9], 9: [], 11: [11]}
    assert fl.complete and not fl.runs(11) and fl.runs(10) and fl.dominates(6, 10) and not fl.dominates(3, 6)


def test_a_branch_never_taken_and_a_predicate_operand():
    body, labels = parsed("@!PT BRA `(.L_x_0)", "IADD3 R0, R0, 0x1, RZ", ".L_x_0:", "BRA !P0, `(.L_x_0)",
                          "EXIT")
    fl = flow(body, labels)
    assert fl.runs(1) and fl.reaches(2, 3) and fl.reaches(2, 2)  # the branch with an operand can fall through


def test_a_loop_its_nest_and_reachability_through_its_back_edge():
    body, labels = parsed("S2R R0, SR_TID.X", ".L_x_0:", "line 5", "MOV R1, RZ", ".L_x_1:", "line 6",
                          "IADD3 R1, R1, 0x1, RZ", "ISETP.GE.AND P1, PT, R1, 0x8, PT", "@!P1 BRA `(.L_x_1)",
                          "IADD3 R0, R0, 0x1, RZ", "ISETP.GE.AND P0, PT, R0, 0x10, PT", "@!P0 BRA `(.L_x_0)", "EXIT")
    fl = flow(body, labels)
    assert len(fl.loops) == 2
    outer, inner = fl.loops
    assert (outer.depth, inner.depth, inner.parent, outer.parent) == (1, 2, 0, None)
    assert outer.natural and inner.size == 3 and outer.size == 7 and inner.lines == (6,)
    assert fl.loop_of(2) == 1 and fl.nest(2) == (0, 1) and fl.loop_of(5) == 0 and fl.loop_of(8) is None
    assert fl.reaches(6, 1) and fl.reaches(3, 3) and not fl.reaches(8, 0) and not fl.reaches(0, 0)
    assert fl.dominates(1, 8) and not fl.dominates(3, 1) and not fl.exclusive(2, 5)


def test_branches_of_an_if_are_exclusive_unless_a_loop_runs_both():
    if_else = ("S2R R0, SR_TID.X", "@P0 BRA `(.L_x_0)", "STG.E desc[UR4][R2.64], R0", "BRA `(.L_x_1)", ".L_x_0:",
               "STG.E desc[UR4][R4.64], R0", ".L_x_1:", "EXIT")
    fl = flow(*parsed(*if_else))
    assert fl.exclusive(2, 4) and not fl.dominates(2, 5) and fl.dominates(1, 5) and fl.reaches(2, 5)
    looped = parsed(".L_x_9:", *if_else[:-1], "@P1 BRA `(.L_x_9)", "EXIT")
    fl = flow(*looped)
    assert not fl.exclusive(2, 4) and fl.reaches(4, 2) and len(fl.loops) == 1


@pytest.mark.parametrize("branch", ["BRX R4 -0x50", "JMX R4", "BRA `(.L_x_missing)"])
def test_an_indirect_or_unplaced_branch_may_reach_every_block(branch):
    body, labels = parsed("S2R R0, SR_TID.X", "@P0 BRA `(.L_x_0)", "MOV R1, RZ", ".L_x_0:", branch,
                          "STG.E desc[UR4][R2.64], R0", "EXIT", "LDG.E R5, desc[UR4][R2.64]", "EXIT")
    fl = flow(body, labels)
    assert not fl.complete and fl.reaches(3, 2) and fl.reaches(3, 6) and fl.reaches(3, 0)
    assert all(fl.loop_of(i) is not None for i in (0, 1, 2, 3))  # all that leads to it may run again, the first too
    assert fl.loop_of(5) is None  # an exit it may reach, but that does not lead back to it
    found = accesses(body, 0x210, labels)
    assert passes(fl, found) == () and compute_loops(fl, found) == ()  # nothing claimed on it


def test_an_irreducible_cycle_is_a_loop():
    body, labels = parsed("@P0 BRA `(.L_x_1)", ".L_x_0:", "IADD3 R0, R0, 0x1, RZ", ".L_x_1:",
                          "IADD3 R1, R1, 0x1, RZ", "@P1 BRA `(.L_x_0)", "EXIT")
    fl = flow(body, labels)
    assert [lp.natural for lp in fl.loops] == [False] and fl.loop_of(1) == fl.loop_of(2) == 0
    assert frequency(fl, 1, []).kind == "in a loop" and frequency(fl, 4, []).kind == "once"


def test_offsets_as_targets_as_cuobjdump_writes_them():
    body = tuple(sass.Instruction(op, args, pred, None, 16 * k) for k, (pred, op, args) in enumerate([
        ("", "S2R", "R0, SR_TID.X"), ("", "IADD3", "R0, R0, 0x1, RZ"), ("@!P1", "BRA", "!P0, 0x10"),
        ("", "EXIT", "")]))
    fl = flow(body)
    assert fl.complete and len(fl.loops) == 1 and fl.loop_of(1) == 0 and fl.reaches(2, 1)


def test_between_two_instructions_and_the_value_of_a_register():
    body, labels = parsed("STG.E desc[UR4][R2.64], R0", "@P0 BRA `(.L_x_0)", "IADD3 R2, R2, 0x4, RZ", ".L_x_0:",
                          "STG.E desc[UR4][R2.64], R0", "STG.E desc[UR4][R4.64], R0", "EXIT")
    fl = flow(body, labels)
    assert sorted(fl.between(0, 3)) == [1, 2] and fl.between(4, 0) is None
    writes = lambda ins: {ins.args()[0]} if ins.root == "IADD3" else set()  # noqa: E731
    assert not fl.same_value(0, 3, {"R2", "R3"}, writes) and fl.same_value(0, 4, {"R4"}, writes)
    assert fl.same_value(3, 4, {"R2"}, writes) and not fl.same_value(4, 3, {"R2"}, writes)


def test_the_graph_is_built_in_linear_time():
    def make(n):  # n calls and branches in a row, each block dominating the next, then an indirect branch
        lines = ["S2R R0, SR_TID.X"]
        for k in range(n):
            lines += ["CALL.REL.NOINC `(f)", f"@P0 BRA `(.L_x_{k})", f".L_x_{k}:", "IADD3 R0, R0, 0x1, RZ"]
        return parsed(*lines, "BRX R4 -0x10", "EXIT")

    def run(listing):
        fl = flow(*listing)
        return len(fl.loops), fl.reaches(len(fl.body) - 2, 1), fl.dominates(1, len(fl.body) - 2)

    # one loop: the hub's component; the hub may lead anywhere, so nothing is known to dominate
    assert assert_linear(run, make, 4096) == (1, True, False)


def test_sibling_loops_are_found_in_linear_time():
    def make(n):
        lines = []
        for k in range(n):
            lines += [f".L_x_{k}:", "IADD3 R0, R0, 0x1, RZ", f"@P0 BRA `(.L_x_{k})"]
        return parsed(*lines, "EXIT")

    assert assert_linear(lambda listing: len(flow(*listing).loops), make, 4096) == 4096


def test_a_deep_nest_of_loops_stays_linear_and_every_level_stays_in_a_loop():
    def make(n):  # n loops, each holding the next (a body per level: the square of n in all)
        heads = [line for k in range(n) for line in (f".L_x_{k}:", "IADD3 R0, R0, 0x1, RZ")]
        return parsed(*heads, *(f"@P0 BRA `(.L_x_{k})" for k in reversed(range(n))), "EXIT")

    def run(listing):
        fl = flow(*listing)
        return all(fl.loop_of(i) is not None for i in range(len(fl.body) - 1)), fl.loop_of(len(fl.body) - 1)

    assert assert_linear(run, make, 4096) == (True, None)


# --- on compiled kernels -------------------------------------------------------------------------------------------

@needs_nvdisasm
def test_a_float4_store_and_its_scalar_fallback_are_not_one_element_stored_twice():
    """Issue 39: the float4 store and the fallback's first scalar store share the row pointer's register; the
    naive check read them as one element stored twice ("each element is stored 2 times"). They are on exclusive
    paths."""
    k = kernel("float4_fallback")
    assert not any(a.repeat for a in k.accesses)
    wide = k.flow.index(k.accesses[k.at(14, "st")[0]].offset)
    scalar = k.flow.index(k.accesses[k.at(17, "st")[0]].offset)
    assert k.body[wide].operands.split(",")[0] == k.body[scalar].operands.split(",")[0]  # [R2.64]: the same register
    assert k.flow.exclusive(wide, scalar)


@needs_nvdisasm
def test_a_store_repeated_on_one_path_is_still_found():
    k = kernel("fence_twice")
    assert [(a.line, a.repeat) for a in k.accesses if a.op == "st"] == [(14, False), (16, True)]
    assert not any(a.repeat for name in ("gold_control", "readback", "chunk8") for a in kernel(name).accesses)


@needs_nvdisasm
@pytest.mark.parametrize("name, in_loop", [
    ("row_scalar", set()), ("grid_stride", {7, 8}), ("shared_bias", {8}), ("chunk16", {12, 13}),
    ("gold_control", {28}), ("transposed", set()),
])
def test_which_accesses_are_in_a_loop(name, in_loop):
    k = kernel(name)
    assert {a.line for a in k.accesses if loop_of(k.flow, a) is not None} == in_loop


def roles_buffer(a):
    return buffer(a, ROLES)


@needs_nvdisasm
@pytest.mark.parametrize("name, found", [
    ("prescan", {("x", "read twice")}),  # a pre-scan of x, then the GELU pass
    ("readback", {("out", "written then read")}),  # out stored, then read back
    ("float4_tail", set()),  # a float4 main loop and a scalar tail: different widths
    ("float4_fallback", set()), ("gold_control", set()),  # a fast path and a fallback on exclusive branches
    ("grid_stride", set()), ("stride_compute", set()),  # one loop, unrolled by the compiler into copies
    ("shared_bias", set()), ("chunk8", set()),
])
def test_two_passes_over_a_buffer(name, found):
    k = kernel(name)
    got = passes(k.flow, k.accesses, roles_buffer)
    assert {(p.buffer, p.kind) for p in got} == found
    for p in got:
        assert not k.flow.nested(p.first, p.second) and k.flow.runs_after(p.first, p.second)
        assert not k.flow.runs_after(p.second, p.first)


@needs_nvdisasm
def test_a_compute_loop_per_element_is_found_with_its_size_and_lines():
    k = kernel("compute_loop")
    found = compute_loops(k.flow, k.accesses)
    assert found and all(c.per is None and c.size > 0 and set(c.lines) <= {10, 11} for c in found)
    nested = compute_loops(kernel("stride_compute").flow, kernel("stride_compute").accesses)
    assert nested and all(c.per is not None and set(c.lines) == {11} for c in nested)
    for name in ("fma_loop", "grid_stride", "shared_bias", "row_scalar"):  # unrolled, or loops that touch memory
        assert compute_loops(kernel(name).flow, kernel(name).accesses) == (), name


@needs_nvdisasm
@pytest.mark.parametrize("name, pattern, kinds", [
    ("stride_compute", r"CALL.*div_u64", {"once"}),  # the trip count: one division per thread
    ("stride_compute", r"CALL.*rem_u64", {"per iteration"}),  # i % cols in the loop that stores
    ("grid_stride", r"^I2F\.RP", {"once"}),  # the reciprocal of cols, hoisted out of the loop
    ("transposed", r"CALL.*div_u64", {"once"}),
    ("chunk16", r"CALL.*rem_u64", {"per iteration"}),
    ("row_scalar", r"^S2R .*SR_TID.X", {"once"}),
])
def test_how_often_an_instruction_runs(name, pattern, kinds):
    k = kernel(name)
    where = k.instructions(pattern)
    assert where
    got = [frequency(k.flow, i, k.accesses) for i in where]
    assert {f.kind for f in got} == kinds
    for f in got:
        if f.kind == "per iteration":
            assert f.stores and all(k.accesses[s].op == "st" and loop_of(k.flow, k.accesses[s]) is not None
                                    for s in f.stores)


@needs_nvdisasm
def test_line_information_is_what_keeps_compiler_copies_of_a_loop_apart():
    k = kernel("prescan")
    plain = [sass.Instruction(i.opcode, i.operands, i.predicate, None, i.offset) for i in k.body]
    fl = flow(plain, k.listing.labels.get(k.mangled))
    found = accesses(plain, 0x210, k.listing.labels.get(k.mangled))
    assert passes(fl, found, roles_buffer) == ()  # no lines: no claim
