"""Hints from the machine code (grader.feedback.sass, grader.feedback.hints.sass_hints): each SASS pattern pinned on
kernels that NVRTC compiles here for sm_90 (tests/data/hints/, submissions/, and a few inline ones), so that a change of
NVRTC, ptxas or the disassembler fails a test instead of silently dropping a hint.

Tests that read real SASS need nvdisasm or cuobjdump (`pip install ".[sass]"`) and skip with that reason
without them; the tests of finding and running a disassembler and of the PTX fallback use small fake tools
(POSIX shell scripts) and run everywhere but Windows."""

from __future__ import annotations

import os
import sys
from functools import cache
from pathlib import Path

import pytest

from conftest import SUBMISSIONS, ended, hint_texts
from grader.compile.nvrtc import compile_kernels
from grader.exercises import bias_gelu as exercise
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.feedback import sass, sass_disassembler
from grader.feedback.hints import code_hints, register_limited_warps, sass_hints
from grader.feedback.sass import Disassembler, DisassemblyError
from grader.source.read import read_submission

PAGE = {"kernel": BIAS_GELU.kernel_name, "exercise_hints": BIAS_GELU.code_hints, "texts": BIAS_GELU.hint_texts()}
"""What grader.pipeline.grade.hints_for gives grader.feedback.hints for the course page's exercise: its kernel's
name and its own hint producer (the tanh GELU hint)."""

HINTS = Path(__file__).resolve().parent / "data" / "hints"
SCALAR, FLOOR = 2684.0, 4232.0  # an H200's one-float copy and copy floor, GB/s (as in test_flags_hints)
BIAS, LOADS, TANH = "look at your bias index first", "is 4 bytes wide", "is a different function"
LOCAL, REGS = "uses local memory", "registers per thread"
FROM_SASS, FROM_PTX = "(from the machine code", "(from the PTX"

NVDISASM = sass.find_tool("nvdisasm")
CUOBJDUMP = sass.find_tool("cuobjdump")
TOOLS = [t for t in (NVDISASM, CUOBJDUMP) if t]
NO_TOOL = ("no CUDA disassembler (nvdisasm or cuobjdump) on this machine: pip install \".[sass]\" "
           "(nvidia-cuda-nvdisasm, nvidia-cuda-cuobjdump) to test the hints from the machine code")
needs_tool = pytest.mark.skipif(not TOOLS, reason=NO_TOOL)
ANY = "CUDA disassembler (nvdisasm or cuobjdump)"
needs_nvdisasm = pytest.mark.skipif(NVDISASM is None, reason=NO_TOOL.replace(ANY, "nvdisasm"))
needs_cuobjdump = pytest.mark.skipif(CUOBJDUMP is None, reason=NO_TOOL.replace(ANY, "cuobjdump"))
posix_only = pytest.mark.skipif(os.name == "nt", reason="the fake disassemblers are POSIX shell scripts")


@cache
def build(name: str, arch: str = "sm_90", source: str | None = None):
    """(cubin, ptx, KernelInfo) of biasGeluFused in tests/data/hints/NAME, submissions/NAME or `source`."""
    if source is None and (SUBMISSIONS / name).exists():
        sub = read_submission(SUBMISSIONS / name, BIAS_GELU)
        text, fname = sub.compile_text, sub.name
    else:
        text, fname = source or (HINTS / name).read_text(), name
    c = compile_kernels(text, fname, (exercise.KERNEL_NAME,), arch)
    return c.cubin, c.ptx, c.kernels[exercise.KERNEL_NAME]


def facts_of(name: str, tool: Disassembler | None = None, arch: str = "sm_90", source: str | None = None):
    """SassFacts of biasGeluFused in `name` (as build), read with `tool` (default: nvdisasm, else cuobjdump)."""
    if tool is None and not TOOLS:
        pytest.skip(NO_TOOL)
    return _facts(name, tool or TOOLS[0], arch, source)


@cache
def _facts(name: str, tool: Disassembler, arch: str, source: str | None):
    cubin, _, info = build(name, arch, source)
    f = sass.facts(sass.parse(sass.disassemble(cubin, tool), tool.tool), info.mangled)
    assert f is not None, f"{info.mangled} not found in {tool.tool}'s listing"
    return f


def hints_of(name: str, scalar=SCALAR, floor=FLOOR, tool: Disassembler | None = None) -> list[str]:
    return hint_texts(sass_hints(facts_of(name, tool), scalar_copy_gbs=scalar, floor_gbs=floor,
                                 floor_name="cuMemcpyDtoD", **PAGE))


def kinds(hs: list[str]) -> set[str]:
    return {k for k in (BIAS, LOADS, TANH, LOCAL, REGS) if any(k in h for h in hs)}


def ops(memory_ops) -> list[tuple[str, int | None, int]]:
    return [(m.opcode, m.nbytes, m.count) for m in memory_ops]


# --- each pattern, pinned on real kernels ---------------------------------------------------------------

@needs_tool
@pytest.mark.parametrize("name, loads, stores", [
    ("scalar.cu", [("LDG.E.CONSTANT", 4, 2)], [("STG.E", 4, 1)]),
    ("page_scalar.cu", [("LDG.E.CONSTANT", 4, 2)], [("STG.E", 4, 1)]),
    ("mod_cols.cu", [("LDG.E", 4, 2)], [("STG.E", 4, 1)]),  # no __restrict__: not the read-only path
    ("float4.cu", [("LDG.E.128.CONSTANT", 16, 2), ("LDG.E.CONSTANT", 4, 2)], [("STG.E", 4, 1), ("STG.E.128", 16, 1)]),
    ("gold_float4.cu", [("LDG.E.128.CONSTANT", 16, 2), ("LDG.E.CONSTANT", 4, 2)],
     [("STG.E", 4, 1), ("STG.E.128", 16, 1)]),
    ("erf.cu", [("LDG.E.128.CONSTANT", 16, 2)], [("STG.E.128", 16, 1)]),  # not the other kernel's 4-byte loads
])
def test_global_load_and_store_widths(name, loads, stores):
    f = facts_of(name)
    assert ops(f.global_loads) == loads and ops(f.global_stores) == stores
    assert f.only_4_byte_loads == all(n == 4 for _, n, _ in loads)


@needs_tool
def test_other_widths_and_async_copies():
    head = "__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {\n"
    i = "size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;"
    f = facts_of("float2", source=head + i + "float2 v = reinterpret_cast<const float2*>(x)[i];"
                 "reinterpret_cast<float2*>(out)[i] = make_float2(v.x + bias[0], v.y); }")
    assert ops(f.global_loads) == [("LDG.E", 4, 1), ("LDG.E.64", 8, 1)] and ops(f.global_stores) == [("STG.E.64", 8, 1)]
    f = facts_of("bytes", source=head + i + "out[i] = reinterpret_cast<const unsigned char*>(x)[i] + "
                 "reinterpret_cast<const unsigned short*>(bias)[i]; }")
    assert ops(f.global_loads) == [("LDG.E.U16", 2, 1), ("LDG.E.U8", 1, 1)]
    f = facts_of("cp_async", source=head + "__shared__ float4 s[256];" + i +
                 "unsigned a = (unsigned)__cvta_generic_to_shared(&s[threadIdx.x]);"
                 "asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\" :: \"r\"(a), \"l\"(x + 4 * i));"
                 "asm volatile(\"cp.async.wait_all;\"); __syncthreads();"
                 "reinterpret_cast<float4*>(out)[i] = s[threadIdx.x]; }")
    assert ops(f.global_loads) == [("LDGSTS.E.BYPASS.128", 16, 1)] and not f.only_4_byte_loads


DIV_HEAD = "__global__ void biasGeluFused(const float* x, const float* bias, float* out, {t} n, {t} cols) {{\n" \
           "const {t} i = blockIdx.x * ({t})blockDim.x + threadIdx.x; if (i < n) out[i] = x[i] + bias[{expr}]; }}\n"


@needs_tool
@pytest.mark.parametrize("name, source, routine, sequences", [
    ("mod_cols.cu", None, "__cuda_sm20_rem_u64", ("I2F.U32.RP", "I2F.U64.RP")),   # size_t %
    ("div_long.cu", None, "__cuda_sm20_div_s64", ("I2F.U32.RP", "I2F.U64.RP")),   # long long /
    ("rem_s64", DIV_HEAD.format(t="long long", expr="i % cols"), "__cuda_sm20_rem_s64", ("I2F.U32.RP", "I2F.U64.RP")),
    ("div_u64", DIV_HEAD.format(t="size_t", expr="i / cols"), "__cuda_sm20_div_u64", ("I2F.U32.RP", "I2F.U64.RP")),
    ("mod_cols_int.cu", None, None, ("I2F.RP",)),            # int %: inline, no routine
    ("bias_index_bug.cu", None, None, ("I2F.RP",)),
    ("mod_cols_unsigned.cu", None, None, ("I2F.U32.RP",)),   # unsigned %: inline
])
def test_integer_divisions(name, source, routine, sequences):
    for tool in TOOLS:
        f = facts_of(name, tool, source=source)
        assert f.division_sequences == sequences, tool.tool
        assert f.int_division and f.wide_division == (routine is not None)
        if tool.tool == "nvdisasm":  # nvdisasm names the routine and reads it as a function of its own
            assert f.division_routines == ((routine,) if routine else ())
            if routine:
                assert any(fn.endswith(routine) for fn in f.functions[1:])
        else:  # cuobjdump names no call target: the routine is inside the kernel's block
            assert f.division_routines == ()


@needs_tool
def test_a_helper_named_like_the_routine_and_round_up_conversions_are_not_divisions():
    # a __noinline__ helper of the routine's name that does no division, __uint2float_ru / __ull2float_ru
    # (I2F.U32.RP / I2F.U64.RP without the MUFU.RCP of a division)
    head = ("extern \"C\" __device__ __noinline__ float __cuda_sm20_rem_u64(float v) { return v * 2.0f; }\n"
            "__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {\n"
            "size_t col = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (col < cols) {"
            "size_t i = blockIdx.y * cols + col;")
    f = facts_of("named_helper", source=head + "out[i] = __cuda_sm20_rem_u64(x[i]) + bias[col]; } }")
    assert not f.int_division and f.division_routines == (), f
    round_up = head + "out[i] = x[i] + bias[col] + __uint2float_ru((unsigned)col) + __ull2float_ru(i); } }"
    for tool in TOOLS:
        f = facts_of("round_up", tool, source=round_up)
        assert not f.int_division and f.division_sequences == (), (tool.tool, f)
        hs = hint_texts(sass_hints(f, scalar_copy_gbs=SCALAR, floor_gbs=FLOOR, **PAGE))
        assert not any("divides" in h for h in hs)


@needs_tool
@pytest.mark.parametrize("name", ["scalar.cu", "float4.cu", "tanh.cu", "erf.cu", "normcdf.cu", "gold_float4.cu"])
def test_no_division_in_row_grid_kernels(name):
    f = facts_of(name)
    assert not f.int_division and f.division_routines == () and f.division_sequences == ()


@needs_tool
def test_division_by_a_constant_and_float_division_are_not_integer_divisions():
    f = facts_of("rem_const", source=DIV_HEAD.format(t="size_t", expr="i % 4096"))
    assert not f.int_division
    f = facts_of("tanh_sigmoid.cu")  # v / (1 + __expf(...)): a float division with its slow-path routine
    assert not f.int_division
    if NVDISASM:
        called = facts_of("tanh_sigmoid.cu", NVDISASM).functions
        assert any("__cuda_sm3x_div_rn_noftz_f32_slowpath" in fn for fn in called)


@needs_tool
def test_tanh_signatures_in_sass():
    tanh = facts_of("tanh.cu")
    assert tanh.mufu == (("EX2", 1), ("RCP", 1)) and tanh.exp_reciprocals == 1  # 1 - 2 / (exp(2|x|) + 1)
    assert {0x41102CB4, 0x3EAAA9ED, 0x3E085941, 0x3D563CAE, 0x3C80F082} <= tanh.float_constants  # tanhf's
    assert 0x3D372713 in tanh.float_constants  # 0.044715 as an FMUL immediate
    assert facts_of("tanh_asm.cu").mufu == (("TANH", 1),) and facts_of("tanh_asm.cu").exp_reciprocals == 0
    double = facts_of("tanh_double.cu")
    assert {0x3FC111111110FA4A, 0x3FABA1BA1B80AB40, 0x3F9664F47EC0C8CF, 0x3F8226E1F3CF1EF5} <= double.double_constants
    assert facts_of("tanh_sigmoid.cu").exp_reciprocals == 1 and facts_of("quick_gelu.cu").exp_reciprocals == 4
    assert facts_of("tanh_noinline.cu").exp_reciprocals == 1


@needs_tool
@pytest.mark.parametrize("name", ["scalar.cu", "float4.cu", "mod_cols.cu", "erf.cu", "normcdf.cu", "gold_float4.cu",
                                  "page_scalar.cu", "spill.cu", "many_registers.cu"])
def test_exact_gelu_kernels_have_no_tanh_signature(name):
    f = facts_of(name)
    assert f.exp_reciprocals == 0 and f.mufu_count("TANH") == 0
    assert not any(TANH in h for h in hints_of(name))


MATH = ["erff(v)", "erfcf(v)", "normcdff(v)", "expf(v)", "__expf(v)", "sinhf(v)", "coshf(v)", "erfcxf(v)", "atanf(v)",
        "tanf(v)", "powf(v, 1.5f)", "cbrtf(v)", "log1pf(v)", "v / (1.0f + v * v)", "1.0f / (1.0f + fabsf(v))"]


@needs_tool
def test_other_math_functions_do_not_look_like_tanh():
    """One kernel computing each of MATH into its own output: none is a reciprocal of 1 + exp, none a tanh."""
    body = "".join(f"out[i + {k} * cols] = {expr};\n" for k, expr in enumerate(MATH))
    source = ("__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {\n"
              "size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; float v = x[i] + bias[i];\n" + body + "}\n")
    f = facts_of("math", source=source)
    assert f.mufu_count("EX2") >= 5 and f.mufu_count("RCP") >= 5  # they do use both units
    assert f.exp_reciprocals == 0 and f.mufu_count("TANH") == 0
    assert not any(TANH in h for h in hint_texts(sass_hints(f, scalar_copy_gbs=None, floor_gbs=None, **PAGE)))
    assert facts_of("tanhf", source=source.replace("erff(v)", "tanhf(v)")).exp_reciprocals == 1  # the control


@needs_tool
def test_local_memory_from_an_array_and_from_spills():
    arr = facts_of("local_array.cu")
    assert (arr.local_loads, arr.local_stores, arr.stack_frame) == (1, 1, 32)
    assert build("local_array.cu")[2].spill_stores == 0  # ptxas: an array in local memory, not a spill
    spill = facts_of("spill.cu")
    assert spill.registers == 32 and spill.stack_frame == build("spill.cu")[2].stack_frame
    assert spill.local_stores > 100 and spill.local_loads > 100
    for name in ("scalar.cu", "float4.cu", "many_registers.cu", "mod_cols.cu"):
        assert facts_of(name).local_loads == facts_of(name).local_stores == 0


@needs_tool
@pytest.mark.parametrize("name", ["scalar.cu", "float4.cu", "mod_cols.cu", "tanh_noinline.cu", "spill.cu",
                                  "many_registers.cu", "gold_float4.cu", "bias_index_bug.cu"])
def test_registers_match_ptxas_report(name):
    for tool in TOOLS:
        assert facts_of(name, tool).registers == build(name)[2].registers, tool.tool
        assert facts_of(name, tool).arch == "sm_90"


@needs_tool
def test_only_the_kernel_and_its_callees_are_read():
    f = facts_of("erf.cu")  # the file's other kernel has i % cols, tanhf and 4-byte loads
    assert f.functions == (build("erf.cu")[2].mangled,)
    assert not f.int_division and f.exp_reciprocals == 0 and hints_of("erf.cu") == []
    if NVDISASM:
        f = facts_of("tanh_noinline.cu", NVDISASM)
        assert f.functions[0] == build("tanh_noinline.cu")[2].mangled
        callees = {fn.rsplit("$", 1)[-1] for fn in f.functions[1:]}
        assert callees == {"_Z4geluf", "_Z9biasIndexmm", "__cuda_sm20_rem_u64"}


@needs_tool
@pytest.mark.parametrize("arch", ["sm_75", "sm_86", "sm_120"])
def test_other_architectures_read_the_same(arch):
    try:
        build("float4.cu", arch), build("mod_cols.cu", arch)
    except Exception as err:  # noqa: BLE001 - an NVRTC that cannot compile for it (cu12 and sm_120)
        pytest.skip(f"the NVRTC here cannot compile for {arch}: {err}")
    f4, mod = facts_of("float4.cu", arch=arch), facts_of("mod_cols.cu", arch=arch)
    assert f4.arch == mod.arch == arch
    assert [m.nbytes for m in f4.global_loads] == [16, 4] and not f4.only_4_byte_loads
    assert mod.wide_division and mod.only_4_byte_loads


@needs_nvdisasm
@needs_cuobjdump
@pytest.mark.parametrize("name", ["mod_cols.cu", "tanh_noinline.cu", "float4.cu", "tanh_double.cu", "spill.cu",
                                  "tanh_asm.cu"])
def test_nvdisasm_and_cuobjdump_agree(name):
    a, b = facts_of(name, NVDISASM), facts_of(name, CUOBJDUMP)
    for field in ("instructions", "global_loads", "global_stores", "local_loads", "local_stores", "division_sequences",
                  "mufu", "exp_reciprocals", "float_constants", "double_constants", "registers", "stack_frame", "arch"):
        assert getattr(a, field) == getattr(b, field), field


# --- the hints ------------------------------------------------------------------------------------------

@needs_tool
@pytest.mark.parametrize("name, expected", [
    ("bias_index_bug.cu", {BIAS, LOADS}),
    ("tanh_gelu.cu", {TANH, LOADS}),
    ("page_scalar.cu", {LOADS}),
    ("gold_float4.cu", set()),
    ("no_bounds_check.cu", {LOADS}),
    ("mod_cols.cu", {BIAS, LOADS}),
    ("mod_cols_unsigned.cu", {BIAS, LOADS}),
    ("div_long.cu", {BIAS, LOADS}),
    ("tanh_noinline.cu", {BIAS, TANH, LOADS}),
    ("tanh_asm.cu", {TANH, LOADS}),
    ("tanh_double.cu", {TANH, LOADS}),
    ("tanh_only.cu", {TANH, LOADS}),
    ("tanh_sigmoid.cu", {TANH, LOADS}),
    ("quick_gelu.cu", {TANH}),
    ("normcdf.cu", set()),
    ("float4.cu", set()),
    ("erf.cu", set()),
    ("local_array.cu", {LOCAL, LOADS}),
    ("spill.cu", {LOCAL, LOADS}),
    ("many_registers.cu", {REGS}),
])
def test_each_kernel_gets_its_hints_from_the_machine_code(name, expected):
    hs = hints_of(name)
    assert kinds(hs) == expected
    assert all(FROM_SASS in h for h in hs)


@needs_tool
def test_hints_that_the_ptx_cannot_give():
    for name, kind in (("quick_gelu.cu", TANH), ("local_array.cu", LOCAL), ("spill.cu", LOCAL),
                       ("many_registers.cu", REGS)):
        _, ptx, info = build(name)
        from_ptx = hint_texts(code_hints(ptx, info.mangled, scalar_copy_gbs=SCALAR, floor_gbs=FLOOR, **PAGE))
        assert kind not in kinds(from_ptx), name
        assert kind in kinds(hints_of(name)), name


@needs_nvdisasm
def test_bias_hint_names_the_routine_and_its_size():
    [h] = [h for h in hints_of("mod_cols.cu", tool=NVDISASM) if BIAS in h]
    assert "a call to __cuda_sm20_rem_u64, CUDA's integer remainder (64-bit, unsigned) routine of" in h
    size = dict(facts_of("mod_cols.cu", NVDISASM).function_sizes)["$__internal_0_$__cuda_sm20_rem_u64"]
    assert 40 < size < 100 and f"of {size} instructions" in h
    [h] = [h for h in hints_of("div_long.cu", tool=NVDISASM) if BIAS in h]
    assert "__cuda_sm20_div_s64, CUDA's integer division (64-bit, signed) routine" in h
    [h] = [h for h in hints_of("bias_index_bug.cu", tool=NVDISASM) if BIAS in h]
    assert "I2F.RP then MUFU.RCP: an inline 32-bit integer division" in h


@needs_cuobjdump
def test_bias_hint_without_routine_names():
    [h] = [h for h in hints_of("mod_cols.cu", tool=CUOBJDUMP) if BIAS in h]
    assert "CUDA's 64-bit integer division routine, which starts with I2F.U64.RP" in h


@needs_tool
def test_load_hint_counts_loads_and_stores_and_needs_a_slow_scalar_copy():
    [h] = [h for h in hints_of("scalar.cu") if LOADS in h]
    assert "2 x LDG.E.CONSTANT; its stores: 1 x STG.E" in h and "2684 GB/s" in h and "4232 GB/s" in h
    assert LOADS not in kinds(hints_of("scalar.cu", scalar=239.6, floor=244.7))  # the page's T4
    assert LOADS not in kinds(hints_of("scalar.cu", scalar=None, floor=None))


@needs_tool
def test_local_memory_and_register_hints_quote_the_numbers():
    [h] = [h for h in hints_of("spill.cu") if LOCAL in h]
    f = facts_of("spill.cu")
    assert f"{f.local_loads} local load and {f.local_stores} local store instructions" in h
    assert f"a {f.stack_frame}-byte stack frame per thread and 32 registers" in h
    [h] = [h for h in hints_of("many_registers.cu") if REGS in h]
    regs = facts_of("many_registers.cu").registers
    warps = 65536 // (-(-regs // 8) * 8 * 32)
    assert f"uses {regs} registers per thread" in h and f"at most {warps} warps" in h and "of the 64 an sm_90" in h


def test_register_limit_arithmetic():
    assert register_limited_warps(32, "sm_90") == (64, 64)
    assert register_limited_warps(64, "sm_90") == (32, 64)   # exactly half: no hint
    assert register_limited_warps(65, "sm_90") == (28, 64)   # 72 allocated: hint
    assert register_limited_warps(165, "sm_90") == (12, 64)
    assert register_limited_warps(40, "sm_86") == (48, 48)
    assert register_limited_warps(64, "sm_999") is None


@needs_tool
def test_code_hints_reads_the_cubin_when_given_one():
    cubin, ptx, info = build("mod_cols.cu")
    hs = hint_texts(code_hints(ptx, info.mangled, scalar_copy_gbs=SCALAR, floor_gbs=FLOOR, cubin=cubin,
                               arch="sm_90", **PAGE))
    assert kinds(hs) == {BIAS, LOADS} and all(FROM_SASS in h for h in hs)
    hs = hint_texts(code_hints(ptx, info.mangled, scalar_copy_gbs=SCALAR, floor_gbs=FLOOR, **PAGE))  # no cubin: the PTX
    assert kinds(hs) == {BIAS, LOADS} and all(FROM_PTX in h for h in hs)
    assert code_hints(ptx, "_Z5otherv", scalar_copy_gbs=SCALAR, floor_gbs=FLOOR, cubin=cubin, **PAGE) == []


# --- finding and running a disassembler, and the PTX fallback (no real disassembler needed) --------------

def fake_tool(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def no_disassembler(monkeypatch):
    monkeypatch.setattr(sass, "find_disassembler", lambda: None)


def test_without_a_disassembler_the_hints_come_from_the_ptx(no_disassembler):
    for name, expected in (("mod_cols.cu", {BIAS, LOADS}), ("tanh.cu", {TANH, LOADS}), ("gold_float4.cu", set())):
        cubin, ptx, info = build(name)
        hs = hint_texts(code_hints(ptx, info.mangled, scalar_copy_gbs=SCALAR, floor_gbs=FLOOR, cubin=cubin,
                               arch="sm_90", **PAGE))
        assert kinds(hs) == expected and all(FROM_PTX in h for h in hs), name
    assert sass.sass_facts(build("mod_cols.cu")[0], build("mod_cols.cu")[2].mangled) is None


@posix_only
@pytest.mark.parametrize("body, reason", [
    ("exit 3", "exited with status 3"),
    ("sleep 30", "ran for more than"),
    ("yes 'line of text'", "printed more than"),
])
def test_a_failing_disassembler_falls_back_to_the_ptx(tmp_path, monkeypatch, body, reason):
    tool = Disassembler("nvdisasm", str(fake_tool(tmp_path, "nvdisasm", body)))
    with pytest.raises(DisassemblyError, match=reason):
        sass.disassemble(b"\x7fELF", tool, timeout_s=1.0, max_bytes=1 << 16)
    monkeypatch.setattr(sass_disassembler, "TIMEOUT_S", 1.0)
    monkeypatch.setattr(sass_disassembler, "MAX_OUTPUT_BYTES", 1 << 16)
    monkeypatch.setattr(sass, "find_disassembler", lambda: tool)
    cubin, ptx, info = build("mod_cols.cu")
    hs = hint_texts(code_hints(ptx, info.mangled, scalar_copy_gbs=SCALAR, floor_gbs=FLOOR, cubin=cubin, **PAGE))
    assert kinds(hs) == {BIAS, LOADS} and all(FROM_PTX in h for h in hs)


@posix_only
def test_a_child_left_holding_the_tools_output_is_killed(tmp_path):
    pid_file = tmp_path / "child.pid"
    body = f'sleep 3600 & echo $! > "{pid_file}"; exit 0'
    tool = Disassembler("nvdisasm", str(fake_tool(tmp_path, "nvdisasm", body)))
    with pytest.raises(DisassemblyError, match="output did not end when it exited"):  # not after the child's hour
        sass.disassemble(b"\x7fELF", tool, timeout_s=2.0)
    child = int(pid_file.read_text())
    assert ended(child), "the tool's child outlived it"


@posix_only
def test_garbage_output_gives_no_facts(tmp_path):
    tool = Disassembler("nvdisasm", str(fake_tool(tmp_path, "nvdisasm", "echo '/*0000*/ LDG.E R0, [R2] ;'")))
    assert sass.sass_facts(b"\x7fELF", "_Z13biasGeluFusedPKfS0_Pfm", tool) is None  # no function of that name


@posix_only
def test_the_tool_runs_on_a_private_copy_with_a_clean_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_SECRET_FOR_TEST", "do-not-pass")
    monkeypatch.setattr(sass_disassembler.tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    script = 'env; echo "ARGS $*"; ls -ld "$(dirname "$3")" "$3" | cut -c1-10; pwd; cat "$3"'
    tool = Disassembler("nvdisasm", str(fake_tool(tmp_path / "bin", "nvdisasm", script)))
    out = sass.disassemble(b"CUBIN-BYTES", tool)
    assert "GRADER_SECRET_FOR_TEST" not in out and "HOME=" not in out and "LC_ALL=C" in out
    args = next(line for line in out.splitlines() if line.startswith("ARGS "))
    assert args.startswith("ARGS -ndf -g ") and args.endswith("/kernel.cubin")  # -g: the source lines
    assert "drwx------" in out and "-rw-------" in out and "CUBIN-BYTES" in out
    assert list((tmp_path / "tmp").iterdir()) == []  # the private folder is gone
    assert sass_disassembler.command(Disassembler("cuobjdump", "/x/cuobjdump"), "k.cubin") == [
        "/x/cuobjdump", "-sass", "-res-usage", "k.cubin"]


def test_a_cubin_over_the_limit_is_not_disassembled(monkeypatch):
    monkeypatch.setattr(sass_disassembler, "MAX_CUBIN_BYTES", 10)
    with pytest.raises(DisassemblyError, match="over 10"):
        sass.disassemble(b"x" * 11, Disassembler("nvdisasm", "/nonexistent/nvdisasm"))
    with pytest.raises(DisassemblyError, match="could not be started"):
        sass.disassemble(b"x", Disassembler("nvdisasm", "/nonexistent/nvdisasm"))


@posix_only
@pytest.mark.parametrize("layout", [("nvidia", "cu13", "bin"), ("nvidia", "cu12", "bin"),
                                    ("nvidia", "cuda_nvdisasm", "bin"), ("nvidia", "cuda_cuobjdump", "bin")])
def test_wheel_layouts_are_searched(tmp_path, monkeypatch, layout):
    folder = tmp_path.joinpath(*layout)
    fake_tool(folder, "nvdisasm", "exit 0")
    monkeypatch.setattr(sys, "path", [str(tmp_path)] + sys.path)
    assert folder in sass_disassembler.wheel_bin_dirs()


@posix_only
def test_search_order_and_preference(tmp_path, monkeypatch):
    wheels, path_dir, toolkit = tmp_path / "w", tmp_path / "p", tmp_path / "t"
    places = [("wheels", [wheels]), ("PATH", None), ("CUDA toolkit", [toolkit / "bin"])]
    monkeypatch.setattr(sass_disassembler, "search_places", lambda: places)
    monkeypatch.setenv("PATH", str(path_dir))
    sass.find_disassembler.cache_clear()
    try:
        assert sass.find_disassembler() is None
        fake_tool(toolkit / "bin", "nvdisasm", "exit 0")
        assert sass.find_disassembler.__wrapped__() == Disassembler("nvdisasm", str(toolkit / "bin" / "nvdisasm"))
        fake_tool(path_dir, "cuobjdump", "exit 0")  # an earlier place wins, even with the less preferred tool
        assert sass.find_disassembler.__wrapped__() == Disassembler("cuobjdump", str(path_dir / "cuobjdump"))
        fake_tool(wheels, "cuobjdump", "exit 0")
        fake_tool(wheels, "nvdisasm", "exit 0")  # in one place, nvdisasm first
        assert sass.find_disassembler.__wrapped__() == Disassembler("nvdisasm", str(wheels / "nvdisasm"))
        assert sass.find_tool("cuobjdump") == Disassembler("cuobjdump", str(wheels / "cuobjdump"))
        (wheels / "nvdisasm").chmod(0o644)  # not executable: skipped
        assert sass.find_disassembler.__wrapped__() == Disassembler("cuobjdump", str(wheels / "cuobjdump"))
    finally:
        sass.find_disassembler.cache_clear()


def test_toolkit_folders(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_PATH", str(tmp_path / "a"))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "b"))
    dirs = sass_disassembler._toolkit_bin_dirs()
    assert dirs[:2] == [tmp_path / "a" / "bin", tmp_path / "b" / "bin"]
    if os.name != "nt":
        assert all(str(d).startswith("/usr/local/cuda") for d in dirs[2:])


def test_parsing_a_listing_without_the_tool():
    """nvdisasm's format, as 13.5 prints it (abridged): functions by label, CALL targets, nv.info registers."""
    text = """\t.target\tsm_90
//--------------------- .nv.info                  --------------------------
\t.section\t.nv.info,"",@"SHT_CUDA_INFO"
\t//----- nvinfo : EIATTR_REGCOUNT
        /*0004*/ \t.word\tindex@(_Z1kv)
        /*0008*/ \t.word\t0x00000016
\t//----- nvinfo : EIATTR_FRAME_SIZE
        /*0010*/ \t.word\tindex@(_Z1kv)
        /*0014*/ \t.word\t0x00000020
//--------------------- .text._Z1kv --------------------------
\t.section\t.text._Z1kv,"ax",@progbits
        .type           _Z1kv,@function
_Z1kv:
.text._Z1kv:
        /*0000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0010*/              @!P0 CALL.REL.NOINC `($__internal_0_$__cuda_sm20_rem_u64) ;
        /*0020*/                   MUFU.EX2 R0, R0 ;
        /*0030*/                   FADD R1, R0, 1 ;
        /*0040*/                   MUFU.RCP R1, R1 ;
        /*0050*/                   STL [R1], R0 ;
        /*0060*/                   EXIT ;
        .type           $__internal_0_$__cuda_sm20_rem_u64,@function
$__internal_0_$__cuda_sm20_rem_u64:
        /*0070*/                   I2F.U64.RP R9, UR6 ;
        /*0080*/                   MUFU.RCP R9, R9 ;
        /*0090*/                   RET.REL.NODEC R8 `(_Z1kv) ;
        /*00a0*/                   NOP;
"""
    listing = sass.parse_nvdisasm(text)
    f = sass.facts(listing, "_Z1kv")
    assert f.functions == ("_Z1kv", "$__internal_0_$__cuda_sm20_rem_u64") and f.arch == "sm_90"
    assert (f.registers, f.stack_frame, f.local_stores, f.exp_reciprocals) == (22, 32, 1, 1)
    assert f.division_routines == ("__cuda_sm20_rem_u64",) and f.division_sequences == ("I2F.U64.RP",)
    assert ops(f.global_loads) == [("LDG.E.128", 16, 1)]
    assert f.function_sizes == (("_Z1kv", 7), ("$__internal_0_$__cuda_sm20_rem_u64", 3))
    assert sass.facts(listing, "_Z5otherv") is None
