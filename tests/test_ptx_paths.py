"""Which PTX instructions a launch of the grader can reach (grader.feedback.ptx_paths), and the division hint
that depends on it: a division on a path for 2^31 elements or more is on no path the grader's launches take."""

from __future__ import annotations

import math
import tracemalloc
from pathlib import Path

import pytest

from grader.compile.nvrtc import compile_kernels
from grader.core import exercise as course
from grader.core.errors import GraderFault
from grader.exercises import get, names
from grader.feedback import ptx_paths
from grader.feedback.hint import HintKind
from grader.feedback.hints import code_hints, division_reached
from grader.feedback.ptx_paths import names_in, reachable_divisions, reached, statements
from grader.source.read import read_submission

ROOT = Path(__file__).resolve().parent.parent
HIGH = course.INT32_LIMIT
ALL = frozenset({1})  # parameter 1 (n) is an integer; parameter 0 a pointer


def entry(body: str) -> str:
    """A PTX module with one kernel `k(ptr p, u64 n)` whose body is `body`, and a .func `f` that divides."""
    return f""".version 8.5
.target sm_90
.address_size 64
.func (.param .b64 r) f(.param .b64 a)
{{
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [f_param_0];
\trem.u64 %rd2, %rd1, %rd1;
\tst.param.b64 [r], %rd2;
\tret;
}}
.visible .entry k(
\t.param .u64 k_param_0,
\t.param .u64 k_param_1
)
{{
\t.reg .pred %p<4>;
\t.reg .b32 %r<8>;
\t.reg .b64 %rd<16>;
\t.reg .f32 %f<8>;
\tld.param.u64 %rd1, [k_param_0];
\tld.param.u64 %rd2, [k_param_1];
{body}
\tret;
}}
"""


GUARDED = """\t.loc 1 26 5
\tsetp.lt.u64 %p1, %rd2, 2147483648;
\t@%p1 bra $L__BB0_2;
\tdiv.u64 %rd3, %rd2, %rd1;
\tbra.uni $L__BB0_3;
$L__BB0_2:
\t.loc 1 30 5
\tcvt.u32.u64 %r1, %rd2;
\tdiv.u32 %r2, %r1, %r1;
\tld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];
$L__BB0_3:
"""


def test_a_branch_on_a_size_against_2_31_goes_one_way():
    # the RoPE advice's shape: 32-bit below 2^31, size_t above; n is at most INT32_LIMIT for every launch
    assert reachable_divisions(entry(GUARDED), "k", ALL, HIGH) == ("div.u32",)
    # not known to be an integer the grader passes (a pointer, or no contract): both ways
    assert reachable_divisions(entry(GUARDED), "k", frozenset(), HIGH) == ("div.u32", "div.u64")
    assert reachable_divisions(entry(GUARDED.replace("%rd2, 2147483648", "%rd1, 2147483648")), "k", ALL,
                               HIGH) == ("div.u32", "div.u64")
    # the negated guard takes the other side; a comparison with a size some launch can have goes both ways
    assert reachable_divisions(entry(GUARDED.replace("@%p1", "@!%p1")), "k", ALL, HIGH) == ("div.u64",)
    assert reachable_divisions(entry(GUARDED.replace("2147483648", "1000")), "k", ALL, HIGH) == ("div.u32",
                                                                                                "div.u64")
    # INT32_LIMIT itself is a size the grader may pass: `n > 2^31 - 1` never holds, `n > 2^31 - 2` may
    gt = GUARDED.replace("setp.lt.u64 %p1, %rd2, 2147483648", "setp.gt.u64 %p1, %rd2, 2147483647")
    assert reachable_divisions(entry(gt), "k", ALL, HIGH) == ("div.u64",)
    assert reachable_divisions(entry(gt.replace("2147483647", "2147483646")), "k", ALL, HIGH) == ("div.u32",
                                                                                                 "div.u64")


def test_what_the_reading_cannot_know_is_reachable():
    # a register defined twice, a guarded definition, a signed comparison with -1 (never true for a size)
    twice = GUARDED.replace("\tsetp.lt.u64", "\tmov.u64 %rd2, %rd1;\n\tsetp.lt.u64")
    assert reachable_divisions(entry(twice), "k", ALL, HIGH) == ("div.u32", "div.u64")
    guarded = GUARDED.replace("\tsetp.lt.u64 %p1, %rd2,", "\t@%p3 mov.u64 %rd5, %rd2;\n\tsetp.lt.u64 %p1, %rd5,")
    assert reachable_divisions(entry(guarded), "k", ALL, HIGH) == ("div.u32", "div.u64")
    copied = GUARDED.replace("\tsetp.lt.u64 %p1, %rd2,", "\tmov.b64 %rd5, %rd2;\n\tsetp.lt.u64 %p1, %rd5,")
    assert reachable_divisions(entry(copied), "k", ALL, HIGH) == ("div.u32",)
    signed = GUARDED.replace("setp.lt.u64 %p1, %rd2, 2147483648", "setp.gt.s64 %p1, %rd2, -1")
    assert reachable_divisions(entry(signed), "k", ALL, HIGH) == ("div.u32",)
    # an early return for huge sizes does not remove the division after it
    early = "\tsetp.ge.u64 %p1, %rd2, 2147483648;\n\t@%p1 ret;\n\tdiv.u64 %rd3, %rd2, %rd1;\n"
    assert reachable_divisions(entry(early), "k", ALL, HIGH) == ("div.u64",)


def test_a_function_is_reached_only_from_a_reached_call():
    call = ("\t{\n\t.param .b64 param0;\n\tst.param.b64 [param0], %rd2;\n\t.param .b64 retval0;\n"
            "\tcall.uni (retval0),\n\tf,\n\t(\n\tparam0\n\t);\n\t}\n")
    slow = GUARDED.replace("\tdiv.u64 %rd3, %rd2, %rd1;\n", call)
    assert reachable_divisions(entry(slow), "k", ALL, HIGH) == ("div.u32",)
    fast = GUARDED.replace("\tdiv.u32 %r2, %r1, %r1;\n", call)
    assert reachable_divisions(entry(fast), "k", ALL, HIGH) == ("rem.u64",)  # the div.u64 is on the slow path
    assert reachable_divisions(entry(fast), "other", ALL, HIGH) == ()


def test_statements_keep_vector_operands_and_labels():
    ss = statements("{\n" + GUARDED + "\tret;\n}")
    assert [s.text.split()[0] for s in ss] == ["setp.lt.u64", "bra", "div.u64", "bra.uni", "cvt.u32.u64", "div.u32",
                                               "ld.global.v4.f32", "ret"]
    assert ss[4].labels == ("$L__BB0_2",) and ss[1].guard == "%p1" and not ss[1].negated
    assert ss[6].text == "ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1]"
    assert len(reached("{\n" + GUARDED + "\tret;\n}", "k", frozenset(), HIGH)) == len(ss)


def _compiled(path: str, ex):
    sub = read_submission(str(ROOT / path), ex)
    c = compile_kernels(sub.compile_text, sub.name, (ex.kernel_name,), "sm_90")
    info = c.kernels[ex.kernel_name]
    spec = sub.contract.launch_spec(tuple(p.size for p in info.params))
    return c, info, frozenset(i for i, p in enumerate(spec.params) if p.kind != "ptr")


def test_the_rope_examples_as_nvrtc_compiles_them():
    # gold_wide: 32-bit pos and j below 2^31 pairs, the page's size_t body above; page_scalar: size_t throughout
    rope = get("rope")
    c, info, ints = _compiled("submissions/rope/gold_wide.cu", rope)
    assert reachable_divisions(c.ptx, info.mangled, ints, HIGH) == ("div.u32", "rem.u32")
    assert "div.u64" in reachable_divisions(c.ptx, info.mangled, frozenset(), HIGH)
    assert not division_reached(c.ptx, info.mangled, ints, rope.division_hint_bits)
    assert division_reached(c.ptx, info.mangled, ints, 32)
    hints = code_hints(c.ptx, info.mangled, scalar_copy_gbs=None, floor_gbs=None, kernel=rope.kernel_name,
                       cubin=c.cubin, arch=c.arch, texts=rope.hint_texts(), integer_params=ints,
                       division_bits=rope.division_hint_bits)
    assert HintKind.DIVISION not in [h.kind for h in hints]
    assert HintKind.DIVISION in [h.kind for h in code_hints(c.ptx, info.mangled, scalar_copy_gbs=None,
                                                            floor_gbs=None, kernel=rope.kernel_name)]
    c, info, ints = _compiled("submissions/rope/page_scalar.cu", rope)
    assert division_reached(c.ptx, info.mangled, ints, rope.division_hint_bits)
    hints = code_hints(c.ptx, info.mangled, scalar_copy_gbs=None, floor_gbs=None, kernel=rope.kernel_name,
                       cubin=c.cubin, arch=c.arch, texts=rope.hint_texts(), integer_params=ints,
                       division_bits=rope.division_hint_bits)
    assert HintKind.DIVISION in [h.kind for h in hints]


def test_every_integer_the_grader_passes_is_at_most_int32_limit():
    # on a card far larger than any made (1 TB free, a 1 GiB L2) every benchmark still fits the limit
    for ex in map(get, names()):
        p = ex.bench_problem(10**12, 2**30)
        assert p.integers and max(p.integers.values()) <= HIGH, (ex.name, p.integers)
        assert p.n <= HIGH
        for dims in ex.verify_dims:
            assert max(ex.problem(dims).integers.values()) <= HIGH
    # and a problem over it is the grader's fault, never launched
    bias_gelu = get()
    sub = read_submission(str(ROOT / "submissions/gold_float4.cu"), bias_gelu)
    rows = math.isqrt(HIGH) + 2
    huge = bias_gelu.problem((rows, rows))
    with pytest.raises(GraderFault, match="INT32_LIMIT"):
        sub.contract.launch_values({"x": 0, "bias": 0, "out": 0}, huge)


# --- kernels a fresh reader wrote to break the reading (NVRTC's PTX; each division is reached by some launch) ----
KEPT = {
    # a vector load rewrites the parameter's register inside the loop: the register has two definitions
    "vector_load_redefines": ('extern "C" __global__ void k(const int4* a, int n, int* o) {\n'
                              "  int x = n; int i = 0;\n"
                              "  do { if (x < 0) { o[0] = 1000 / x; return; } int4 v = a[i]; x = v.x; i = v.y; }"
                              " while (i);\n}", ("div.s32",)),
    # an octal literal in inline assembly (int('010', 0) raised ValueError, out of the grading)
    "octal_literal": ('extern "C" __global__ void k(int* o, unsigned n, int d) {\n  unsigned f;\n'
                      '  asm("{\\n.reg .pred %%q9;\\nsetp.lt.u32 %%q9, %1, 010;\\nselp.u32 %0, 1, 0, %%q9;\\n}"'
                      ' : "=r"(f) : "r"(n));\n  if (f) o[0] = o[1] / d;\n}', ("div.s32",)),
    # an indirect branch back to a division before it
    "branch_back": ('extern "C" __global__ void k(int* o, unsigned n, unsigned d) {\n  unsigned r = o[1];\n'
                    '  asm volatile("{\\n.reg .u32 %%ix;\\nand.b32 %%ix, %1, 1;\\nbra.uni Lgo;\\nLback:\\n'
                    'div.u32 %0, %0, %1;\\nbra.uni Lend;\\nLgo:\\nLtab: .branchtargets Lback, Lend;\\n'
                    'brx.idx %%ix, Ltab;\\nLend:\\n}" : "+r"(r) : "r"(d));\n  o[0] = r;\n}', ("div.u32",)),
    # a function reached only through a table of function pointers at module scope
    "function_pointer": ("__device__ int f(int a, int b) { return a / b; }\n"
                         "__device__ int g(int a, int b) { return a * b; }\n"
                         "__device__ int (*tab[2])(int, int) = {f, g};\n"
                         'extern "C" __global__ void k(int* o, int n, int d) { o[0] = tab[o[1] & 1](o[2], d); }',
                         ("div.s32",)),
    # and decided: both sizes under 2^31 (LLVM's and.b64 of their or with -2^31), so only the 32-bit side runs
    "both_under_2_31": ('extern "C" __global__ void k(int* o, unsigned long long n, unsigned long long m) {\n'
                        "  if (n < (1ull << 31) && m < (1ull << 31)) o[0] = o[1] / (int)m; else o[0] = n / m;\n}",
                        ("div.s32",)),
    "call_for_huge_sizes": ("__device__ __noinline__ int f(int a, int b) { return a / b; }\n"
                            'extern "C" __global__ void k(int* o, unsigned long long n, int d) {\n'
                            "  if (n >= (1ull << 31)) o[0] = f(o[1], d);\n}", ()),
}


@pytest.mark.parametrize("name", sorted(KEPT))
def test_what_a_launch_reaches_in_kernels_written_to_break_it(name):
    source, expected = KEPT[name]
    for lineinfo in (False, True):
        c = compile_kernels(source, "k.cu", ("k",), "sm_90", lineinfo=lineinfo)
        assert reachable_divisions(c.ptx, c.kernels["k"].mangled, frozenset({1, 2}), HIGH) == expected, lineinfo


def test_scope_braces_on_a_statement_s_line_are_not_part_of_it():
    body = "{\n\t{ .reg .pred p;\n\tLx: { mov.u32 %r1, %r2;\n\t} div.u32 %r3, %r1, %r1;\n}"
    ss = statements(body)
    assert [s.text for s in ss] == [".reg .pred p", "mov.u32 %r1, %r2", "div.u32 %r3, %r1, %r1"]
    assert ss[1].labels == ("Lx",)


def test_a_function_is_named_by_a_whole_identifier_never_by_a_register_or_a_type():
    names = names_in("call.uni (retval0), f, (param0); mov.u64 %rd1, g; .reg .f32 %f<8>; ld.global.f32 %f1, [fg]")
    assert {"f", "g", "fg"} <= names
    assert not {"f32", "f1", "rd1", "uni", "global"} & names


# --- issue 39: the hostile reviewer's cases (scopes, predicates without %, indirect branches), exact values, loops ---
def _kernel(source: str) -> tuple[str, str]:
    """NVRTC's PTX of `source` (its cubin too: ptxas accepts the PTX) and the mangled name of its kernel k."""
    c = compile_kernels(source, "k.cu", ("k",), "sm_90")
    return c.ptx, c.kernels["k"].mangled


def _asm(*lines: str) -> str:
    """An inline-assembly string literal of `lines`, one PTX line each."""
    return '"' + "".join(line.replace("\\", "\\\\").replace('"', '\\"') + "\\n" for line in lines) + '"'


def test_two_inline_asm_blocks_may_reuse_one_label():
    # ptxas takes a label from the innermost block that declares it: each block's `bra.uni Lx` goes to its own Lx,
    # and the division between them runs on every launch (reading only the last Lx jumped over it)
    block = _asm("{", " bra.uni Lx;", " Lx:", "}")
    source = ('extern "C" __global__ void k(unsigned* o, unsigned n, unsigned d) {\n  unsigned r = o[1];\n'
              f'  asm volatile({block} : "+r"(r));\n  r = r / d;\n  asm volatile({block} : "+r"(r));\n  o[0] = r;\n}}')
    assert ptx_paths.reachable_divisions(*_kernel(source), frozenset({1, 2}), HIGH) == ("div.u32",)
    # a block inside may declare its outer block's label: its branch goes to its own, the outer one's to the outer
    nested = _asm("{", " bra.uni Lstart;", " L:", " div.u32 %0, %0, %2;", " bra.uni Lend;", " Lstart:", " {",
                  " bra.uni L;", " rem.u32 %1, %1, %2;", " L:", " }", " bra.uni L;", " Lend:", "}")
    source = ('extern "C" __global__ void k(unsigned* o, unsigned n, unsigned d) {\n  unsigned r = o[1], q = o[2];\n'
              f'  asm volatile({nested} : "+r"(r), "+r"(q) : "r"(d));\n  o[0] = r;\n  o[3] = q;\n}}')
    assert ptx_paths.reachable_divisions(*_kernel(source), frozenset({1, 2}), HIGH) == ("div.u32",)


def test_a_predicate_may_be_named_without_percent():
    # `.reg .pred q; @q bra`: the guarded branch is the only way to the division, which runs whenever d != 0
    body = _asm("{", " .reg .pred q;", " setp.ne.u32 q, %1, 0;", " @q bra.uni Ldiv;", " bra.uni Ldone;", " Ldiv:",
                " div.u32 %0, %0, %1;", " Ldone:", "}")
    source = ('extern "C" __global__ void k(unsigned* o, unsigned n, unsigned d) {\n  unsigned r = o[1];\n'
              f'  asm volatile({body} : "+r"(r) : "r"(d));\n  o[0] = r;\n}}')
    assert ptx_paths.reachable_divisions(*_kernel(source), frozenset({1, 2}), HIGH) == ("div.u32",)
    # and it is read as a predicate: declared, set and tested without %, with spaces after @ and ! (ptxas takes them)
    bare = GUARDED.replace("\tsetp.lt.u64 %p1,", "\t.reg .pred q;\n\tsetp.lt.u64 q,").replace("@%p1", "@ ! q")
    assert reachable_divisions(entry(bare), "k", ALL, HIGH) == ("div.u64",)
    assert reachable_divisions(entry(bare.replace("@ ! q", "@q")), "k", ALL, HIGH) == ("div.u32",)


def test_a_register_declared_in_a_block_is_not_the_outer_one():
    # the inline assembly's own %p1 is never set: its branch to the division may go either way, whatever the
    # kernel's %p1 (n >= 2^31, false for every launch) holds
    body = _asm("{", " .reg .pred %p1;", " @%p1 bra.uni Ldiv;", " bra.uni Lend;", " Ldiv:", " div.u32 %0, %0, %1;",
                " Lend:", "}").replace("%p1", "%%p1")
    source = ('extern "C" __global__ void k(unsigned* o, unsigned long long n, unsigned d) {\n  unsigned r = o[1];\n'
              "  if (n >= (1ull << 31)) { o[2] = 0; return; }\n"
              f'  asm volatile({body} : "+r"(r) : "r"(d));\n  o[0] = r;\n}}')
    ptx, mangled = _kernel(source)
    assert "setp.gt.u64 \t%p1" in ptx.replace("\t%p1", " \t%p1").replace("  \t", " \t")
    assert ptx_paths.reachable_divisions(ptx, mangled, frozenset({1, 2}), HIGH) == ("div.u32",)
    # a register is the block's own from its declaration on: before it, the mov writes the kernel's %rd2 (n), and
    # the setp reads the block's, never set (reading both as the block's would make it 5 < 1000: one way)
    late = GUARDED.replace("\tsetp.lt.u64 %p1, %rd2, 2147483648;\n\t@%p1 bra $L__BB0_2;\n",
                           "\t{\n\tmov.u64 %rd2, 5;\n\t.reg .b64 %rd2;\n\tsetp.lt.u64 %p1, %rd2, 1000;\n"
                           "\t@%p1 bra $L__BB0_2;\n\t}\n")
    assert reachable_divisions(entry(late), "k", ALL, HIGH) == ("div.u32", "div.u64")
    assert reachable_divisions(entry(late.replace("\tmov.u64 %rd2, 5;\n\t.reg .b64 %rd2;\n",
                                                  "\t.reg .b64 %rd2;\n\tmov.u64 %rd2, 5;\n")), "k", ALL, HIGH) == (
        "div.u32",)
    # two blocks, each with its own q set once: each decided (n < 2^31 for every launch)
    own = ("\t{\n\t.reg .pred q;\n\tsetp.lt.u64 q, %rd2, 2147483648;\n\t@q bra L1;\n\tdiv.u64 %rd3, %rd2, %rd1;\n"
           "\tL1:\n\t}\n")
    assert reachable_divisions(entry(own + own.replace("div.u64", "rem.u64")), "k", ALL, HIGH) == ()
    # `%rd02` beside `%rd<16>`: ptxas reads it as %rd2; which register a read of it is, is left unknown
    zero = GUARDED.replace("setp.lt.u64 %p1, %rd2,", "setp.lt.u64 %p1, %rd02,")
    assert reachable_divisions(entry(zero), "k", ALL, HIGH) == ("div.u32", "div.u64")


def test_a_register_read_before_its_one_definition_is_unknown():
    # %r5 is set to 1 on one path only: where the pointer test skips it, the comparison reads an undefined register
    skip = ("\tsetp.eq.u64 %p2, %rd1, 7;\n\t@%p2 bra $L__BB0_9;\n\tmov.u32 %r5, 1;\n$L__BB0_9:\n"
            "\tsetp.eq.u32 %p1, %r5, 1;\n\t@%p1 bra $L__BB0_8;\n\tdiv.u32 %r6, %r5, %r5;\n$L__BB0_8:\n")
    assert reachable_divisions(entry(skip), "k", ALL, HIGH) == ("div.u32",)
    assert reachable_divisions(entry(skip.replace("\t@%p2 bra $L__BB0_9;\n", "")), "k", ALL, HIGH) == ()
    # a loop's first pass reads what a later statement of the loop sets
    loop = ("$L__BB0_7:\n\tsetp.eq.u32 %p1, %r5, 1;\n\t@%p1 bra $L__BB0_8;\n\tdiv.u32 %r6, %r5, %r5;\n$L__BB0_8:\n"
            "\tmov.u32 %r5, 1;\n\tsetp.eq.u64 %p2, %rd1, 7;\n\t@%p2 bra $L__BB0_7;\n")
    assert reachable_divisions(entry(loop), "k", ALL, HIGH) == ("div.u32",)


def _indirect_branches(count: int) -> tuple[str, str]:
    """NVRTC's PTX of a kernel with one inline-asm block of an indirect branch, the block repeated `count` times as
    a fully unrolled loop of it reads (one label name in every block), and a division after them."""
    body = _asm("{", " .reg .u32 ix;", " and.b32 ix, %1, 1;", " Ltab: .branchtargets La, Lb;", " brx.idx ix, Ltab;",
                " La:", " add.u32 %0, %0, 1;", " Lb:", "}")
    ptx, mangled = _kernel('extern "C" __global__ void k(unsigned* o, unsigned n, unsigned d) {\n'
                           f'  unsigned r = o[1];\n  asm volatile({body} : "+r"(r) : "r"(n));\n  o[0] = r / d;\n}}')
    start, end = ptx.index("// begin inline asm"), ptx.index("// end inline asm") + len("// end inline asm")
    return ptx[:start] + "\n".join([ptx[start:end]] * count) + ptx[end:], mangled


def test_indirect_branches_cost_steps_linear_in_the_statements():
    # 4096 brx.idx took 12 to 14 s and 1.5 GB, 8192 took 67 s and 5 GB: each one queued every statement again
    small, large = (ptx_paths.reach(*_indirect_branches(n), frozenset({1, 2}), HIGH) for n in (4096, 8192))
    assert small.divisions == large.divisions == ("div.u32",)
    assert not small.exhausted and not large.exhausted
    assert large.steps <= 2 * small.steps + 1000
    assert large.steps < 20 * sum(len(ss) for ss in large.statements.values())


def test_indirect_branches_take_memory_linear_in_the_statements():
    tracemalloc.start()
    try:
        ptx, mangled = _indirect_branches(512)
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        assert reachable_divisions(ptx, mangled, frozenset({1, 2}), HIGH) == ("div.u32",)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    # the PTX is 84 KB: the reading's objects per statement take about 26 bytes per byte of it; queueing every
    # statement again per brx.idx took 23 MB, 280 per byte (and grows with the square of the count)
    assert peak < 80 * len(ptx), peak


def test_past_its_budget_every_division_is_reached():
    # 2000 blocks laid out backwards (each jumps to the one before it) before the set of %p2: that %p2 is not yet
    # set there moves up one block per pass of the data flow. The budget stops it, and the division, which %p1
    # (n > 2^31 - 1: false) skips, counts as reached, in a loop (unsure)
    chain = "".join(f"$L__C{k}:\n\tbra.uni $L__C{k - 1};\n" for k in range(1, 2001))
    body = ("\tsetp.gt.u64 %p1, %rd2, 2147483647;\n\tbra.uni $L__C2000;\n"
            "$L__C0:\n\tsetp.lt.u64 %p2, %rd2, 2147483648;\n\t@%p2 bra $L__BB0_7;\n$L__BB0_7:\n"
            f"\t@%p1 bra $L__BB0_8;\n\tbra.uni $L__BB0_9;\n{chain}"
            "$L__BB0_8:\n\tdiv.u64 %rd3, %rd2, %rd1;\n$L__BB0_9:\n")
    found = ptx_paths.reach(entry(body), "k", ALL, HIGH)
    assert found.exhausted and found.divisions == found.looped == ("div.u64",)
    size = sum(b.count(";") + b.count("{") + 1 for _, b in ptx_paths.kernel_functions(entry(body), "k").values())
    assert found.steps <= (ptx_paths.STEPS_PER_STATEMENT + 4) * size  # it stops within a pass of the limit
    # the same blocks, never entered: %p1 decides the branch
    short = ptx_paths.reach(entry(body.replace("\tbra.uni $L__C2000;\n", "\tbra.uni $L__C0;\n")), "k", ALL, HIGH)
    assert not short.exhausted and short.divisions == ()


FAST_OR_FALLBACK = ('extern "C" __global__ void k(const float* x, float* out, int rows, int cols) {\n'
                    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "  if (cols % 4 == 0 && rows > 0) {\n"
                    "    float4 v = reinterpret_cast<const float4*>(x)[i]; v.x += 1.f;\n"
                    "    reinterpret_cast<float4*>(out)[i] = v;\n"
                    "  } else if (i < rows * cols) out[i] = x[i] + (float)(i % cols);\n}")


def test_exact_sizes_decide_the_fast_path_or_the_fallback():
    ptx, mangled = _kernel(FAST_OR_FALLBACK)
    sizes = frozenset({2, 3})
    assert reachable_divisions(ptx, mangled, sizes, HIGH) == ("rem.s32",)  # any rows and cols: either path
    assert reachable_divisions(ptx, mangled, sizes, HIGH, exact={2: 512, 3: 4096}) == ()
    assert reachable_divisions(ptx, mangled, sizes, HIGH, exact={2: 512, 3: 4097}) == ("rem.s32",)
    assert reachable_divisions(ptx, mangled, sizes, HIGH, exact={2: 0, 3: 4096}) == ("rem.s32",)
    assert reachable_divisions(ptx, mangled, sizes, HIGH, exact={3: 4096}) == ("rem.s32",)  # rows may be 0
    # a pointer's alignment stays unknown: both ways, whatever cols is
    aligned = FAST_OR_FALLBACK.replace("cols % 4 == 0 && rows > 0",
                                       "((unsigned long long)x & 15) == 0 && cols % 4 == 0")
    assert reachable_divisions(*_kernel(aligned), sizes, HIGH, exact={2: 512, 3: 4096}) == ("rem.s32",)


CONDITIONS = {
    # a C condition on unsigned a, b (parameters 1 and 2) and its value, as C computes it
    "(a & 3) == 0": lambda a, b: a & 3 == 0,
    "a - 4097u < 10u": lambda a, b: (a - 4097) % 2**32 < 10,
    "(int)(a - 4097u) < 0": lambda a, b: (a - 4097) % 2**32 >= 2**31,
    "a * b % 7u == 3u": lambda a, b: (a * b) % 2**32 % 7 == 3,
    "(a << 3) >> 5 > b": lambda a, b: ((a << 3) % 2**32) >> 5 > b,
    "min(a, b) / 16u == 256u": lambda a, b: min(a, b) // 16 == 256,
    "max(a ^ b, 100u) != 100u": lambda a, b: max(a ^ b, 100) != 100,
    "(unsigned long long)a * b > 4294967296ull": lambda a, b: a * b > 2**32,
    "(unsigned short)a == 4096": lambda a, b: a % 2**16 == 4096,
    "(a | b) >= 2147483648u": lambda a, b: a | b >= 2**31,
}


def test_exact_values_follow_the_arithmetic_as_the_machine_does_it():
    source = "\n".join(f'extern "C" __global__ void k{n}(unsigned* o, unsigned a, unsigned b, unsigned d) '
                       f"{{ if ({c}) o[0] = o[1] / d; }}" for n, c in enumerate(CONDITIONS))
    c = compile_kernels(source, "k.cu", tuple(f"k{n}" for n in range(len(CONDITIONS))), "sm_90")
    for n, (text, holds) in enumerate(CONDITIONS.items()):
        mangled = c.kernels[f"k{n}"].mangled
        assert reachable_divisions(c.ptx, mangled, frozenset({3}), HIGH) == ("div.u32",), text
        for a, b in ((4096, 4096), (4097, 3), (4100, 0), (2**31 - 1, 5), (2**31 + 7, 2**32 - 1), (0, 1)):
            found = reachable_divisions(c.ptx, mangled, frozenset({3}), HIGH, exact={1: a, 2: b})
            assert found == (("div.u32",) if holds(a, b) else ()), (text, a, b)


def test_a_division_in_a_loop_is_told_from_one_once_per_thread():
    source = ("__device__ __noinline__ int once(int a, int b) { return a / b; }\n"
              "__device__ __noinline__ unsigned twice(unsigned a, unsigned b) { return a / b; }\n"
              "__device__ __noinline__ long long looped(long long a, long long b) { return a % b; }\n"
              'extern "C" __global__ void k(int* o, int n, int cols) {\n'
              "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
              "  o[0] = once(i, cols);\n  o[1] = twice(o[2], cols) + twice(o[3], n);\n"
              "  for (int j = i; j < n; j += 1024) o[j] = (int)looped(j, cols) + j % cols;\n}")
    ptx, mangled = _kernel(source)
    sites = ptx_paths.division_sites(ptx, mangled, frozenset({1, 2}), HIGH)
    # once() is called once per thread, twice() twice, looped() (a 64-bit % with LLVM's 32-bit fast path) and the
    # kernel's own j % cols (unrolled four times, and the rest) in the loop
    assert {(s.function, s.opcode, s.in_loop) for s in sites} == {
        ("_Z4onceii", "div.s32", False), ("_Z5twicejj", "div.u32", True), ("k", "rem.s32", True),
        ("_Z6loopedxx", "rem.s64", True), ("_Z6loopedxx", "rem.u32", True)}
    found = ptx_paths.reach(ptx, mangled, frozenset({1, 2}), HIGH)
    assert found.straight == ("div.s32",) and found.looped == ("div.u32", "rem.s32", "rem.s64", "rem.u32")
    # a grid-stride loop's remainder is in the loop; in straight-line code, once per thread
    ptx, mangled = _kernel(FAST_OR_FALLBACK)
    assert ptx_paths.reach(ptx, mangled, frozenset({2, 3}), HIGH).straight == ("rem.s32",)
    loop = FAST_OR_FALLBACK.replace("else if (i < rows * cols)", "else for (; i < rows * cols; i += 4096)")
    assert ptx_paths.reach(*_kernel(loop), frozenset({2, 3}), HIGH).looped == ("rem.s32",)
