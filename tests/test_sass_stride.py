"""How an access's address changes from one thread to the next (grader.feedback.sass_stride, its register values in
grader.feedback.sass_values): each rule pinned on hand-written listings, and the strides NVRTC 13.5's sm_90 code gives
on the kernels of tests/data/flow/ (written the way students write them) and tests/data/causes/."""

from __future__ import annotations

import pytest

from conftest import assert_linear
from flow_kernels import CAUSES, FLOW, kernel, needs_nvdisasm, parsed
from grader.compile.nvrtc import compile_kernels
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.feedback import sass, sass_stride
from grader.feedback.code_paths import param_roles
from grader.feedback.sass_access import Access, accesses
from grader.feedback.sass_stride import Stride, judge, judge_all, strides
from grader.pipeline.grade import launch_spec
from grader.source.read import read_submission

HEAD = ("S2R R0, SR_TID.X", "S2UR UR4, SR_CTAID.X", "LDC R5, c[0x0][RZ]", "IMAD R0, R5, UR4, R0")
"""i = blockIdx.x * blockDim.x + threadIdx.x, as NVRTC writes it."""
ADDRESS = ("IMAD.WIDE R2, R0, 0x4, R6",)
"""&p[i] for a pointer in R6:R7 (4 bytes per i)."""
POINTER = ("LDC.64 R6, c[0x0][0x210]",)


def stride_of(*lines: str, callees=None) -> tuple[Stride, ...]:
    """The strides of the accesses of a hand-written listing (parameters from c[0x0][0x210])."""
    body, labels = parsed(*lines)
    return strides(body, accesses(body, 0x210, labels), 0x210, labels, callees)


def one(*lines: str) -> Stride:
    found = stride_of(*lines)
    assert len(found) == 1
    return found[0]


# --- the rules, on hand-written listings ---------------------------------------------------------------------------

def test_a_flat_index_is_4_bytes_a_thread_and_a_float4_index_16():
    assert one(*POINTER, *HEAD, *ADDRESS, "STG.E desc[UR4][R2.64], R9", "EXIT") == Stride(4, exact=True)
    wide = ("IMAD.SHL.U32 R4, R0, 0x10, RZ", "IADD3 R2, P0, R4, UR6, RZ", "IADD3.X R3, RZ, UR7, RZ, P0, !PT")
    assert one("ULDC.64 UR6, c[0x0][0x210]", *HEAD, *wide, "LDG.E.128 R8, desc[UR4][R2.64]", "EXIT").bytes == 16
    lea = ("LEA R2, P0, R0, UR6, 0x3", "LEA.HI.X R3, R0, UR7, RZ, 0x3, P0")
    assert one("ULDC.64 UR6, c[0x0][0x210]", *HEAD, *lea, "STG.E.64 desc[UR4][R2.64], R8", "EXIT").bytes == 8


def test_a_parameter_valued_stride_and_its_role():
    col = ("IMAD R4, R0, c[0x0][0x21c], RZ", "IMAD.WIDE R2, R4, 0x4, R6")  # x[i * cols]: cols at parameter 0xc
    s = one(*POINTER, *HEAD, *col, "LDG.E R8, desc[UR4][R2.64]", "EXIT")
    assert (s.bytes, s.terms, s.exact) == (None, ((0xC, 4),), True)
    assert s.describe({0: "x", 0xC: "cols"}) == "4 x cols" and judge(s, 4) == "scattered"
    assert s.describe({0: "x", 8: "n"}) == "4 x the high word of n"
    assert Stride(None, ((-0x210, 4),), exact=True).describe().startswith("4 x the launch's constant")


def test_uniform_values_are_a_broadcast():
    s = stride_of("S2UR UR4, SR_CTAID.X", "ULDC.64 UR6, c[0x0][0x210]", "ULEA UR6, UP0, UR4, UR6, 0x2",
                  "MOV R2, UR6", "MOV R3, UR7", "S2R R4, SR_TID.Y", "LDG.E R8, desc[UR4][R2.64]",
                  "LDG.E R9, desc[UR4][UR6.64+0x4]", "IMAD.WIDE R2, R4, 0x4, R2", "LDG.E R10, desc[UR4][R2.64]", "EXIT")
    assert [x.bytes for x in s] == [0, 0, 0] and all(x.exact for x in s)
    assert judge(s[0], 4) == "coalesced"


def test_a_loops_increment_after_the_access_keeps_the_stride_when_every_thread_adds_the_same():
    loop = (*POINTER, *HEAD, *ADDRESS, ".L_x_0:", "STG.E desc[UR4][R2.64], R9")
    step = ("IMAD.WIDE R2, R5, 0x4, R2", "@P0 BRA `(.L_x_0)", "EXIT")  # + blockDim.x floats: a grid-stride loop
    assert one(*loop, *step) == Stride(4, exact=True)
    mine = ("IMAD.WIDE R2, R0, 0x4, R2", "@P0 BRA `(.L_x_0)", "EXIT")  # + i floats: each thread its own
    assert one(*loop, *mine) == Stride()


def test_a_choice_between_threads_holds_only_where_neighbours_choose_alike():
    pick = (*POINTER, *HEAD, "IADD3 R4, R0, 0x20, RZ", "ISETP.GE.AND P0, PT, R0, UR5, PT")
    s = one(*pick, "SEL R8, R0, R4, P0", "IMAD.WIDE R2, R8, 0x4, R6", "STG.E desc[UR4][R2.64], R9", "EXIT")
    assert (s.bytes, s.exact) == (4, False)
    same = one(*pick, "ISETP.GE.AND P1, PT, R5, UR5, PT", "SEL R8, R0, R4, P1", "IMAD.WIDE R2, R8, 0x4, R6",
               "STG.E desc[UR4][R2.64], R9", "EXIT")
    assert (same.bytes, same.exact) == (4, True)  # a predicate of uniform values: every thread picks alike
    guarded = one(*pick, "@P0 IADD3 R0, R0, 0x20, RZ", *ADDRESS, "STG.E desc[UR4][R2.64], R9", "EXIT")
    assert (guarded.bytes, guarded.exact) == (4, False)
    branch = one(*pick, "@P0 BRA `(.L_x_0)", "IADD3 R0, R0, 0x20, RZ", ".L_x_0:", *ADDRESS,
                 "STG.E desc[UR4][R2.64], R9", "EXIT")
    assert (branch.bytes, branch.exact) == (4, False)


@pytest.mark.parametrize("between", [
    "VOTE.ANY R8, PT, P0",  # reads P0: it stays a choice that differs between threads
    "PLOP3.LUT P2, PT, P0, PT, PT, 0x80, 0x0",  # reads P0, writes P2
    "R2P PR, R8, 0x7f",  # writes P0 to P6 from R8's bits: P1 is no longer known to be the same for all
])
def test_which_predicates_an_instruction_writes(between):
    pick = (*POINTER, *HEAD, "IADD3 R4, R0, 0x20, RZ", "ISETP.GE.AND P0, PT, R0, UR5, PT",
            "ISETP.GE.AND P1, PT, R5, UR5, PT", between)
    on = "P1" if between.startswith("R2P") else "P0"
    s = one(*pick, f"SEL R8, R0, R4, {on}", "IMAD.WIDE R2, R8, 0x4, R6", "STG.E desc[UR4][R2.64], R9", "EXIT")
    assert (s.bytes, s.exact) == (4, False)
    vote = one(*POINTER, *HEAD, "ISETP.GE.AND P0, PT, R0, UR5, PT", "VOTE.ANY R8, PT, P0",
               "IMAD.WIDE R2, R8, 0x4, R6", "STG.E desc[UR4][R2.64], R9", "EXIT")
    assert (vote.bytes, vote.exact) == (0, True)  # a ballot: the same mask in every thread of the warp


@pytest.mark.parametrize("op", ["LOP3.LUT R8, R0, 0xfffffffc, RZ, 0xc0, !PT", "I2F.U32 R8, R0", "POPC R8, R0",
                                "SHFL.IDX PT, R8, R0, RZ, 0x1f", "FOOBAR.X R8, R0", "S2R R8, SR_CLOCKLO",
                                "IMAD.HI.U32 R8, R0, R0, RZ", "LDC R8, c[0x0][R0]", "MOV R8, junk",
                                "HMMA.16816.F32 R4, R8, R12, R4", "LDSM.16.M88.4 R6, [R2]"])
def test_what_no_rule_covers_is_unknown(op):
    known = ("MOV R8, R0", "IMAD.WIDE R2, R8, 0x4, R6", "STG.E desc[UR4][R2.64], R9")  # R8 = i first: 4 bytes
    assert stride_of(*POINTER, *HEAD, *known, op, *known[1:], "EXIT") == (Stride(4, exact=True), Stride())


def test_pure_operations_of_uniform_values_are_uniform():
    s = one(*POINTER, "S2UR UR4, SR_CTAID.X", "MOV R0, UR4", "LOP3.LUT R8, R0, 0x3, RZ, 0xc0, !PT",
            "IMAD.WIDE R2, R8, 0x4, R6", "STG.E desc[UR4][R2.64], R9", "EXIT")
    assert (s.bytes, s.exact) == (0, True)


def test_a_shift_right_is_exact_where_it_divides_the_stride():
    s = stride_of(*POINTER, *HEAD, "SHF.L.U32 R4, R0, 0x3, RZ", "SHF.R.U32.HI R8, RZ, 0x1, R4",
                  "IMAD.WIDE R2, R8, 0x4, R6", "STG.E desc[UR4][R2.64], R9", "SHF.R.U32.HI R8, RZ, 0x1, R0",
                  "IMAD.WIDE R2, R8, 0x4, R6", "STG.E desc[UR4][R2.64], R9", "EXIT")
    assert (s[0].bytes, s[0].exact) == (16, True) and (s[1].bytes, s[1].exact) == (0, False)  # i / 2: pairs


def test_a_call_is_followed_into_a_function_of_the_listing_and_otherwise_forgets_everything():
    callee, _ = parsed("IMAD.SHL.U32 R8, R0, 0x2, RZ", "RET.REL.NODEC R20 `(k)", name="twice")
    lines = (*POINTER, *HEAD, "MOV R20, 0x0", "CALL.REL.NOINC `(twice)", "IMAD.WIDE R2, R8, 0x4, R6",
             "STG.E desc[UR4][R2.64], R9", "EXIT")
    assert stride_of(*lines, callees={"twice": (callee, {})}) == (Stride(8, exact=True),)
    assert stride_of(*lines) == (Stride(),)


def test_a_divisor_is_taken_to_be_nonzero():
    """The inline 32-bit remainder i % d as NVRTC writes it, with its fix-up for d == 0 (`@!P1 LOP3 ..., 0x33`): the
    remainder moves with i, except where it wraps to 0."""
    rem = ("ULDC UR6, c[0x0][0x218]", "I2F.U32.RP R3, UR6", "ISETP.NE.U32.AND P1, PT, RZ, UR6, PT",
           "MUFU.RCP R3, R3", "IADD3 R4, R3, 0xffffffe, RZ", "F2I.FTZ.U32.TRUNC.NTZ R5, R4",
           "IMAD.MOV R9, RZ, RZ, -R5", "IMAD R9, R9, UR6, RZ", "IMAD.HI.U32 R5, R5, R9, RZ",
           "IMAD.HI.U32 R5, R5, R0, RZ", "IADD3 R5, -R5, RZ, RZ", "IMAD R8, R5, UR6, R0",
           "ISETP.GE.U32.AND P0, PT, R8, UR6, PT", "@P0 VIADD R8, R8, -UR6", "@!P1 LOP3.LUT R8, RZ, UR6, RZ, 0x33, !PT")
    s = one(*POINTER, *HEAD, *rem, "IMAD.WIDE R2, R8, 0x4, R6", "LDG.E R9, desc[UR4][R2.64]", "EXIT")
    assert (s.bytes, s.exact) == (4, False)
    no_test = [line for line in rem if not line.startswith("ISETP.NE")]
    assert one(*POINTER, *HEAD, *no_test, "IMAD.WIDE R2, R8, 0x4, R6", "LDG.E R9, desc[UR4][R2.64]", "EXIT") == Stride()


def test_unexpected_code_gives_unknown_never_an_exception(monkeypatch):
    garbage = stride_of("S2R R0, SR_TID.X", "IMAD.WIDE R2, R0, [[[, ]]", "LEA R2, R0", "SHF.L.U32 R2, R0",
                        "IADD3 R2, P0, c[0x0][zz], 0x4, RZ", "STG.E desc[UR4][R2.64], R9", "EXIT")
    assert garbage == (Stride(),)
    broken = [Access("st", "STG.E", 4, None, 0x10)]

    class Weird:
        offset, opcode, root, predicate, operands, line = 0x10, "STG.E", "STG", "", "[R2.64], R9", None

        def args(self):
            raise RuntimeError("unexpected")

    assert strides([Weird()], broken, 0x210) == (Stride(),)
    monkeypatch.setattr(sass_stride, "MAX_STEPS", 3)
    assert one(*POINTER, *HEAD, *ADDRESS, "STG.E desc[UR4][R2.64], R9", "EXIT") == Stride()


def test_an_incomplete_flow_gives_unknown_strides():
    assert one(*POINTER, *HEAD, *ADDRESS, "STG.E desc[UR4][R2.64], R9", "@P0 BRX R4 -0x10", "EXIT") == Stride()


def test_the_judgement_and_accesses_that_cover_their_stride_together():
    assert [judge(Stride(b, exact=True), 4) for b in (0, 4, -4, 2, 8, 64)] == \
        ["coalesced"] * 4 + ["scattered"] * 2
    assert judge(Stride(16, exact=True), 16) == "coalesced" and judge(Stride(), 4) == "unknown"
    assert judge(Stride(None, ((0x18, 4),), exact=True), 4) == "scattered" and judge(Stride(4), None) == "unknown"
    pair = stride_of(*POINTER, *HEAD, "SHF.L.U32 R8, R0, 0x1, RZ", "IMAD.WIDE R2, R8, 0x4, R6",
                     "LDG.E R9, desc[UR4][R2.64]", "LDG.E R10, desc[UR4][R2.64+0x4]", "LDG.E R11, desc[UR4][R2.64+0x8]",
                     "EXIT")
    found = accesses(*parsed(*POINTER, *HEAD, "SHF.L.U32 R8, R0, 0x1, RZ", "IMAD.WIDE R2, R8, 0x4, R6",
                             "LDG.E R9, desc[UR4][R2.64]", "LDG.E R10, desc[UR4][R2.64+0x4]",
                             "LDG.E R11, desc[UR4][R2.64+0x8]", "EXIT")[:1], 0x210)
    assert [s.bytes for s in pair] == [8, 8, 8]
    assert judge_all(found, pair) == ("coalesced",) * 3  # in[2p], in[2p + 1] (and one more): all bytes covered
    assert judge_all(found[::2], pair[::2]) == ("scattered",) * 2  # in[2p] and in[2p + 2]: half the bytes


def test_the_interpretation_is_linear_in_the_instructions():
    def make(n):
        lines = [*POINTER, *HEAD, *ADDRESS]
        for k in range(n):
            lines += [f".L_x_{k}:", "IMAD.WIDE R2, R5, 0x4, R2", "STG.E desc[UR4][R2.64], R9",
                      "ISETP.GE.AND P0, PT, R0, UR5, PT", f"@P0 BRA `(.L_x_{k})", "IADD3 R9, R9, R0, RZ"]
        body, labels = parsed(*lines, "EXIT")
        return body, labels, accesses(body, 0x210, labels)

    got = assert_linear(lambda a: strides(a[0], a[2], 0x210, a[1]), make, 512)
    # past the first loop, each thread may have left it after its own number of iterations (P0 tests i)
    assert [s.bytes for s in got] == [4] * 512 and got[0].exact and not any(s.exact for s in got[1:])


# --- on compiled kernels -------------------------------------------------------------------------------------------

COLS = ("cols", 4)
CASES = [  # kernel, function, line, op, opcode, which at that line, stride (bytes, or (role, bytes per unit)), exact
    ("row_scalar", None, 10, "ld", "LDG.E", 0, 4, True), ("row_scalar", None, 10, "st", "STG.E", 0, 4, True),
    ("flat_mod", None, 6, "ld", "LDG.E", 0, 4, True),
    ("flat_mod", None, 6, "ld", "LDG.E", 1, 4, False),  # bias[i % cols]: except where the remainder wraps
    ("grid_stride", None, 7, "ld", "LDG.E", 0, 4, True), ("grid_stride", None, 8, "st", "STG.E", 0, 4, True),
    ("grid_stride", None, 7, "ld", "LDG.E", 1, None, False),  # an int remainder: |i| % |cols| (IABS), not followed
    ("float4_fallback", None, 12, "ld", "LDG.E.128", 0, 16, True),
    ("float4_fallback", None, 14, "st", "STG.E.128", 0, 16, True),
    ("float4_fallback", None, 17, "st", "STG.E", 0, 16, True),  # the fallback: 4 floats a thread, one at a time
    ("float4_tail", None, 11, "ld", "LDG.E.128", 0, 16, True),
    ("float4_tail", None, 13, "st", "STG.E.128", 0, 16, True),
    ("float4_tail", None, 12, "ld", "LDG.E.128", 0, 16, False), ("float4_tail", None, 17, "st", "STG.E", 0, 4, True),
    ("column_walk", None, 7, "ld", "LDG.E", 0, 0, True),  # bias[col]: one column per block row
    ("column_walk", None, 7, "ld", "LDG.E", 1, COLS, True), ("column_walk", None, 8, "st", "STG.E", 0, COLS, True),
    ("chunk8", None, 10, "ld", "LDG.E", 0, 32, True), ("chunk8", None, 11, "st", "STG.E", 0, 32, True),
    ("compute_loop", None, 13, "st", "STG.E", 0, 4, True), ("shared_bias", None, 8, "ld", "LDG.E", 0, 4, True),
    ("shared_bias", None, 14, "ld", "LDG.E", 0, 4, True), ("shared_bias", None, 15, "st", "STG.E", 0, 4, True),
    ("rope_pairs", "ropePairs", 9, "ld", "LDG.E", 0, 8, True),
    ("rope_pairs", "ropePairs", 9, "ld", "LDG.E", 1, 8, True),
    ("rope_pairs", "ropePairs", 11, "st", "STG.E", 0, 8, True),
    ("rope_pairs", "ropePairs", 8, "ld", "LDG.E", 0, None, False),  # cosTab[p % half], an int remainder
    ("rope_pairs", "ropeFloat2", 21, "ld", "LDG.E.64", 0, 8, True),
    ("rope_pairs", "ropeFloat2", 22, "st", "STG.E.64", 0, 8, True),
    ("prescan", None, 8, "ld", "LDG.E", 0, 4, True), ("readback", None, 10, "ld", "LDG.E", 0, 4, True),
    ("stride_compute", None, 10, "ld", "LDG.E", 0, 4, True),
    ("transposed", None, 12, "ld", "LDG.E", 0, 0, False),  # bias[t / rows]: except where the quotient steps
    ("transposed", None, 12, "ld", "LDG.E", 1, COLS, False), ("transposed", None, 13, "st", "STG.E", 0, COLS, False),
    ("chunk16", None, 12, "ld", "LDG.E", 0, 64, True), ("chunk16", None, 13, "st", "STG.E", 0, 64, True),
    ("chunk16", None, 12, "ld", "LDG.E", 1, 64, False),
    ("gold_control", None, 17, "ld", "LDG.E.128", 0, 16, True),
    ("gold_control", None, 24, "st", "STG.E.128", 0, 16, True),
    ("gold_control", None, 28, "st", "STG.E", 0, 16, True), ("fence_twice", None, 16, "st", "STG.E", 0, 4, True),
    ("atomic_store", None, 11, "atom", "ATOMG", 0, 4, True),
]


def roles_of(name: str, function: str | None) -> dict[int, str]:
    """The parameters' roles: the bias_gelu contract's for the cause set, the signature's for tests/data/flow/."""
    if not (FLOW / f"{name}.cu").exists():
        sub = read_submission(CAUSES / f"{name}.cu", BIAS_GELU)
        c = compile_kernels(sub.compile_text, sub.name, (BIAS_GELU.kernel_name,), "sm_90", lineinfo=True)
        return param_roles(launch_spec(sub, c, BIAS_GELU))
    return {0: "x", 8: "bias", 16: "out", 24: "rows" if name == "column_walk" else "n", 28: "cols"} \
        if name != "rope_pairs" else {0: "in", 8: "cosTab", 16: "sinTab", 24: "out", 32: "pairs", 36: "half"}


@needs_nvdisasm
@pytest.mark.parametrize("name, function, line, op, opcode, which, want, exact", CASES,
                         ids=[f"{c[0]}-{c[1] or ''}-{c[2]}-{c[3]}-{c[5]}" for c in CASES])
def test_strides_of_compiled_kernels(name, function, line, op, opcode, which, want, exact):
    k = kernel(name, function or "biasGeluFused")
    at = k.at(line, op, opcode)
    assert len(at) > which, [(a.line, a.opcode) for a in k.accesses]
    s = k.strides[at[which]]
    if want is None:
        assert not s.known
        return
    if isinstance(want, tuple):
        assert s.describe(roles_of(name, function)).startswith(f"{want[1]} x {want[0]}"), s
        assert s.bytes is None and s.constant == 0
    else:
        assert s.bytes == want, s
    assert s.exact == exact


@needs_nvdisasm
@pytest.mark.parametrize("name", sorted(p.stem for p in CAUSES.glob("*.cu")))
def test_the_cause_sets_widest_stores_are_scattered_only_where_the_cause_is(name):
    """transposed.cu (a column walk) and chunk16.cu (a thread per 16 floats) store scattered; every other kernel of
    the cause set stores coalesced on its main path (its widest stores to out)."""
    k = kernel(name)
    judged = judge_all(k.accesses, k.strides)
    stores = [j for j, a in zip(judged, k.accesses, strict=True) if a.op in ("st", "atom", "red")]
    widest = max((a.nbytes for a in k.accesses if a.op in ("st", "atom", "red")), default=None)
    main = {j for j, a in zip(judged, k.accesses, strict=True) if a.op in ("st", "atom", "red") and a.nbytes == widest}
    assert stores and main == ({"scattered"} if name in ("transposed", "chunk16") else {"coalesced"})


@needs_nvdisasm
def test_the_pairs_of_a_rope_kernel_are_coalesced_together_and_each_alone_is_not():
    k = kernel("rope_pairs", "ropePairs")
    ins = k.at(9, "ld")
    assert [judge(k.strides[i], 4) for i in ins] == ["scattered"] * 2
    assert [judge_all(k.accesses, k.strides)[i] for i in ins] == ["coalesced"] * 2


CUOBJDUMP = sass.find_tool("cuobjdump")


@needs_nvdisasm
@pytest.mark.skipif(CUOBJDUMP is None, reason="no cuobjdump: pip install \".[sass]\"")
@pytest.mark.parametrize("name", ["transposed", "chunk16", "gold_control", "float4_fallback", "grid_stride"])
def test_cuobjdump_gives_the_same_strides(name):
    """cuobjdump writes branch and call targets as offsets, and one body for the kernel and the functions it calls
    (grader.feedback.sass.parse_cuobjdump): the calls are followed into that body all the same."""
    k = kernel(name)
    path = FLOW / f"{name}.cu" if (FLOW / f"{name}.cu").exists() else CAUSES / f"{name}.cu"
    if path.parent == CAUSES:
        sub = read_submission(path, BIAS_GELU)
        c = compile_kernels(sub.compile_text, sub.name, (BIAS_GELU.kernel_name,), "sm_90", lineinfo=True)
    else:
        c = compile_kernels(path.read_text(), path.name, ("biasGeluFused",), "sm_90", lineinfo=True)
    listing = sass.parse(sass.disassemble(c.cubin, CUOBJDUMP), "cuobjdump")
    found, got = sass_stride.kernel_strides(listing, k.mangled)
    assert [a.opcode for a in found] == [a.opcode for a in k.accesses] and got == k.strides
    assert any(s.known for s in got)
