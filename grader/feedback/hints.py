"""Hints from the compiled code: what the submission's machine code (or, without a disassembler, its PTX)
says about the page's classic mistakes (a division in the index, 4-byte loads), about local memory and registers,
and the signs of a tanh, which the exercise turns into its own hint (Exercise.code_hints: biasGeluFused's tanh
GELU hint lives in grader/exercises/bias_gelu/hints.py).

From the machine code (SASS) where a disassembler is present (grader.feedback.sass: nvdisasm or cuobjdump, e.g. from
`pip install ".[sass]"`) and `code_hints` is given the cubin: that is what the card runs. Each such hint says
"(from the machine code)". SASS also gives what PTX cannot: the call to CUDA's 64-bit division routine
(`__cuda_sm20_rem_u64`, ...) inside the kernel, local memory traffic (LDL/STL: spills or an array indexed at
run time), the registers per thread, and a tanh or sigmoid built from exp (MUFU.EX2, +1, MUFU.RCP).
grader.feedback.sass's docstring lists what NVRTC 13.5 emits and what each fact is.

From the PTX otherwise (no disassembler, it failed, or no cubin given); each such hint says "(from the
PTX)". PTX is what NVRTC gives on every machine, GPU or not (`Compiled.ptx`), but it is NVVM's output before
ptxas, so it only shows what ptxas will be asked to do: an integer division is still one `div`/`rem`
instruction there (ptxas expands it later), loads still carry their width, and library calls such as tanhf
are inlined as recognisable instruction sequences.

Only the submission's kernel is read: the body of its `.entry` and of every `.func` it calls (a
`__noinline__` helper is a `.func`), never other kernels in the same file; in SASS, the kernel's function and
the functions it calls.

What NVRTC 13.5 (CUDA 13.5, sm_90, no fast-math, which is how the grader compiles) emits, as checked
with `grader.compile.nvrtc.compile_kernels` on the kernels in tests/data/hints/:

- `bias[i % cols]` with `size_t` operands: `rem.u64`, behind a test that both operands fit 32 bits
  (`or.b64`, `and.b64 ..., -4294967296`), with a `rem.u32` fast path; with `int` operands: `rem.s32`;
  with `unsigned`: `rem.u32`; `int i` with `size_t cols`: `rem.u64` + `rem.u32`. Division by a constant
  becomes `mul.hi`/shifts, so a `div`/`rem` in PTX always has a divisor known only at run time.
- `tanhf` (and `std::tanh(float)`): no `tanh.approx.f32` (that appears only with fast-math, or from inline
  asm); an inline expansion with its own constants: 2 log2(e) = 0f4038AA3B, the cutoff 9.0109 = 0f41102CB4
  above which it returns +-1, the branch point 0.6 = 0f3F19999A and the odd polynomial 0fBEAAA9ED,
  0f3E085941, 0fBD563CAE, 0f3C80F082. None of erff, erfcf, normcdff, expf, logf, sinf, tanf, atanf, expm1f,
  log1pf, sinhf, coshf, powf, cbrtf, erfinvf use any of the polynomial constants or the cutoff.
- `tanh(double)`: an expansion with its own double constants (e.g. 0d3FC111111110FA4A, -0d3FABA1BA1B80AB40).
- The tanh GELU's cubic coefficient 0.044715 (0f3D372713), alone or folded with sqrt(2/pi) (0.0356774) or
  2 sqrt(2/pi) (0.0713548, the sigmoid form x / (1 + exp(-1.5958 (x + 0.044715 x^3)))), survives as an
  immediate: without fast-math the compiler does not reassociate it away. No math function above uses a
  constant within 1e-3 of any of the three.

The library constants depend on the NVRTC version; the tests compile tanh kernels with the NVRTC in use,
so a change there fails a test instead of silently dropping the hint. `tanh.approx` and the 0.044715
family do not depend on the version. The same constants are matched in SASS, where ptxas writes them as
decimal or hex immediates (grader.feedback.sass collects both); constants are compared with the sign bit cleared.

Hints never change the verdict.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass

from grader.core import exercise as course
from grader.feedback import sass
from grader.feedback.hint import Hint, HintKind
from grader.feedback.launch_facts import MAX_WARPS_PER_SM, REGISTERS_PER_SM, register_limited_warps  # noqa: F401
from grader.feedback.ptx_paths import INT_DIV, kernel_ptx, reachable_divisions
from grader.feedback.sass import SassFacts

SCALAR_COPY_SHORT = course.GOLD
"""The 4-byte-load hint is given when the one-float-per-thread copy reaches less than this fraction of the
copy floor: then even a scalar kernel as fast as that copy cannot be gold. On the H200 it is 0.63 (2684
against 4232 GB/s, issue 2); on the page's Tesla T4 the scalar copy is the floor (fraction 1) and no hint
is given."""

TANH_APPROX = re.compile(r"\btanh\.approx\.\w+")

TANHF_CONSTANTS = {
    0x41102CB4: "9.0109 (the argument above which tanhf returns +-1)",
    0xBEAAA9ED: "-0.33333 (tanhf's polynomial)",
    0x3E085941: "0.13315 (tanhf's polynomial)",
    0xBD563CAE: "-0.05230 (tanhf's polynomial)",
    0x3C80F082: "0.01574 (tanhf's polynomial)",
}
"""Bit patterns of float immediates of NVRTC 13.5's inline tanhf that no other float math function uses
(module docstring). TANH_CONSTANTS_NEEDED or more of them in the kernel mean tanhf (matched with the sign bit
cleared)."""

TANH_DOUBLE_CONSTANTS = {
    0x3FC111111110FA4A: "0.13333 (tanh's series)",
    0xBFABA1BA1B80AB40: "-0.05397 (tanh's series)",
    0x3F9664F47EC0C8CF: "0.02187 (tanh's series)",
    0xBF8226E1F3CF1EF5: "-0.00886 (tanh's series)",
}
"""Double immediates of NVRTC 13.5's inline tanh(double) that no other double math function checked uses
(TANH_CONSTANTS_NEEDED or more of them mean tanh(double))."""

TANH_CONSTANTS_NEEDED = 2
"""Library constants of TANHF_CONSTANTS (or of TANH_DOUBLE_CONSTANTS) a kernel must hold to be read as calling tanhf
(tanh): a count. Chosen: no other math function checked uses any of them (module docstring), but one value alone
may be a student's own."""

GELU_TANH_VALUES = {
    0.044715: "0.044715 (the tanh GELU's cubic coefficient)",
    0.7978845608028654 * 0.044715: "0.0356774 (sqrt(2/pi) x 0.044715, the tanh GELU's folded cubic term)",
    2 * 0.7978845608028654 * 0.044715: "0.0713548 (2 sqrt(2/pi) x 0.044715, the sigmoid form of the tanh GELU)",
}
"""Immediates that only the tanh GELU uses; matched within GELU_TANH_RTOL of |value|."""

GELU_TANH_RTOL = 1e-5
"""Relative match for GELU_TANH_VALUES: float32 rounding of a constant or of a folded product is below
1.2e-7 relative; other math functions' nearest constants are more than 1e-3 away."""

REGISTER_HINT_BELOW = 0.5
"""The register hint is given when the registers per thread let an SM hold fewer than this fraction of the
warps it could run (on sm_90: more than 64 registers per thread)."""

_INSTR = re.compile(r"^[ \t]*(?:@!?%\w+\s+)?((?:ld|ldu|cp\.async)(?:\.[\w:]+)*)\s+([^;]*);", re.M)
_FLOAT_IMM = re.compile(r"\b0[fF]([0-9A-Fa-f]{8})\b")
_DOUBLE_IMM = re.compile(r"\b0[dD]([0-9A-Fa-f]{16})\b")
_TYPE_BITS = re.compile(r"^[bsuf](8|16|32|64|128)$")
_NOT_GLOBAL = {"shared", "local", "param", "const", "tex"}


@dataclass(frozen=True)
class GlobalLoad:
    """One global (or generic) load instruction of the kernel: its PTX opcode and bytes per load."""

    opcode: str
    nbytes: int | None


@dataclass(frozen=True)
class PtxFacts:
    """What the hints read from one kernel's PTX.

    int_divisions: the distinct integer div/rem opcodes (e.g. ('rem.u32', 'rem.u64')).
    global_loads: the distinct global/generic load opcodes with their width in bytes.
    tanh: how a tanh was recognised (empty when none was).
    found: False when `mangled` has no .entry in the PTX (then everything else is empty).
    """

    found: bool
    int_divisions: tuple[str, ...] = ()
    global_loads: tuple[GlobalLoad, ...] = ()
    tanh: tuple[str, ...] = ()

    @property
    def only_4_byte_loads(self) -> bool:
        """True when the kernel loads from global memory and every such load is 4 bytes wide."""
        return bool(self.global_loads) and all(g.nbytes == 4 for g in self.global_loads)


def ptx_facts(ptx: str, mangled: str) -> PtxFacts:
    """Read integer divisions, global load widths and tanh signatures from the kernel `mangled` in `ptx`
    (see the module docstring for what NVRTC emits and why these signatures)."""
    body = kernel_ptx(ptx, mangled)
    if body is None:
        return PtxFacts(found=False)
    divisions = tuple(sorted(set(INT_DIV.findall(body))))
    loads: dict[str, GlobalLoad] = {}
    for m in _INSTR.finditer(body):
        load = _global_load(m.group(1), m.group(2))
        if load is not None:
            loads.setdefault(load.opcode, load)
    return PtxFacts(found=True, int_divisions=divisions, global_loads=tuple(loads.values()),
                    tanh=_tanh_signs(body))


def _global_load(opcode: str, operands: str) -> GlobalLoad | None:
    """A GlobalLoad for a load that reads global memory (state space .global, or generic: none given),
    None for shared/local/param/const loads and for other instructions."""
    quals = opcode.split(".")
    if opcode.startswith("cp.async"):
        if "global" not in quals:
            return None
        if "bulk" in quals:
            return GlobalLoad(opcode, None)
        size = re.search(r",\s*(\d+)\s*(?:,|$)", operands)
        return GlobalLoad(opcode, int(size.group(1)) if size else None)
    if _NOT_GLOBAL & set(quals):
        return None
    vec = 1
    bits = None
    for q in quals[1:]:
        if q in ("v2", "v4", "v8"):
            vec = int(q[1:])
        t = _TYPE_BITS.match(q)
        if t:
            bits = int(t.group(1))
    return GlobalLoad(opcode, vec * bits // 8 if bits else None)


def _tanh_signs(body: str) -> tuple[str, ...]:
    signs = []
    approx = sorted(set(TANH_APPROX.findall(body)))
    if approx:
        signs.append(", ".join(approx))
    floats = {int(h, 16) for h in _FLOAT_IMM.findall(body)}
    doubles = {int(h, 16) for h in _DOUBLE_IMM.findall(body)}
    return tuple(signs + _constant_signs(floats, doubles))


def _constant_signs(floats: set[int] | frozenset[int], doubles: set[int] | frozenset[int]) -> list[str]:
    """tanhf's and tanh(double)'s library constants and the tanh GELU's coefficients among the bit patterns
    of float32 (`floats`) and float64 (`doubles`) immediates; signs are ignored."""
    floats = {c & 0x7FFFFFFF for c in floats}
    doubles = {c & 0x7FFFFFFFFFFFFFFF for c in doubles}
    signs = []
    hits = [what for c, what in TANHF_CONSTANTS.items() if c & 0x7FFFFFFF in floats]
    if len(hits) >= TANH_CONSTANTS_NEEDED:
        signs.append("tanhf's inline expansion (constants " + ", ".join(h.split(" (")[0] for h in hits) + ")")
    hits = [what for c, what in TANH_DOUBLE_CONSTANTS.items() if c & 0x7FFFFFFFFFFFFFFF in doubles]
    if len(hits) >= TANH_CONSTANTS_NEEDED:
        signs.append("tanh(double)'s inline expansion")
    values = [struct.unpack(">f", c.to_bytes(4, "big"))[0] for c in floats]
    values += [struct.unpack(">d", c.to_bytes(8, "big"))[0] for c in doubles]
    for target, what in GELU_TANH_VALUES.items():
        if any(abs(abs(v) - target) <= GELU_TANH_RTOL * target for v in values):
            signs.append("the constant " + what)
    return signs


def sass_tanh_signs(facts: SassFacts) -> tuple[str, ...]:
    """How a tanh (or a sigmoid built from exp) shows in the kernel's SASS: MUFU.TANH, the library constants
    and GELU coefficients of _constant_signs, and MUFU.RCP of 1 + MUFU.EX2 (grader.feedback.sass.SassFacts)."""
    signs = []
    if facts.mufu_count("TANH"):
        signs.append("MUFU.TANH, the hardware tanh (tanh.approx)")
    signs += _constant_signs(facts.float_constants, facts.double_constants)
    if facts.exp_reciprocals:
        signs.append("1 / (1 + exp(...)): MUFU.EX2, then + 1, then MUFU.RCP, how tanhf, a hand-written tanh and "
                     "a sigmoid compile")
    return tuple(signs)


@dataclass(frozen=True)
class CodeSigns:
    """What the kernel's code shows that only its exercise can judge, as code_hints hands it to the exercise's own
    hint producer (Exercise.code_hints).

    kernel: the kernel's name; source: where it was read, FROM_SASS or FROM_PTX; tanh: how a tanh (or a sigmoid
    built from exp) was recognised (PtxFacts.tanh, sass_tanh_signs), empty when none was; sigmoid_only: the machine
    code's only sign is 1 / (1 + exp(...)), which a sigmoid computes as well as a tanh."""

    kernel: str
    source: str
    tanh: tuple[str, ...] = ()
    sigmoid_only: bool = False


ExerciseHints = Callable[[CodeSigns], list[Hint]]
"""An exercise's own hints from its kernel's code (Exercise.code_hints): CodeSigns in, Hints out ([] for none)."""


def code_hints(ptx: str, mangled: str, *, scalar_copy_gbs: float | None, floor_gbs: float | None,
               floor_name: str | None = None, kernel: str, cubin: bytes | None = None,
               arch: str | None = None, reading: sass.Reading | None = None,
               texts: dict[str, str] | None = None, exercise_hints: ExerciseHints | None = None,
               integer_params: frozenset[int] = frozenset(), division_bits: int = 32) -> list[Hint]:
    """Hints about the kernel `mangled` (its mangled name, `KernelInfo.mangled`): from its machine code in
    `cubin` (the module's cubin, `Compiled.cubin`, compiled for `arch`, e.g. 'sm_90') when a disassembler is
    found (grader.feedback.sass.find_disassembler) and reads it; otherwise from its entry in the module PTX `ptx`.
    Each hint says which it came from: "(from the machine code...)" or "(from the PTX...)".

    - An integer division by a run-time value gets the page's "look at your bias index first" (Pitfalls: a
      flat index with i % cols is an integer division on every element). PTX: any div/rem (rem.u64 for
      size_t, rem.s32 for int). SASS: a call to CUDA's division routine (__cuda_sm20_rem_u64, div_u64,
      rem_s64, div_s64) or an inline one (I2F.U32.RP / I2F.RP, then MUFU.RCP). Only when the PTX has a div or rem
      at least `division_bits` wide (Exercise.division_hint_bits) on a path a launch of the grader can take
      (grader.feedback.ptx_paths: the parameters at `integer_params`, 0-based, hold at most
      grader.core.exercise.INT32_LIMIT; default: none known, every path counts). The RoPE page's advice, 32-bit
      pos and j with the size_t body kept for 2^31 pairs or more, gets no division hint.
    - Only 4-byte global loads, on a card where the one-float-per-thread copy (`scalar_copy_gbs`, GB/s =
      1e9 bytes/s) is below SCALAR_COPY_SHORT (0.90) of the copy floor (`floor_gbs`, the fastest copy,
      named `floor_name`), gets a hint quoting both bandwidths. Needs both numbers: with either None (no
      GPU) this hint is not given.
    - The signs of a tanh (tanh.approx / MUFU.TANH, tanhf's or tanh's inline expansion, the tanh GELU's
      0.044715; in SASS also 1 / (1 + exp) as MUFU.EX2, +1, MUFU.RCP) go to `exercise_hints` (the exercise's
      Exercise.code_hints, with CodeSigns), whose hints take the third place; biasGeluFused's says "the tanh
      form is a different function" with the size of the gap (grader/exercises/bias_gelu/hints.py). Without
      `exercise_hints` there is none.
    - SASS only: local memory (LDL/STL: spills or a per-thread array indexed at run time), and registers per
      thread that let an SM hold fewer than REGISTER_HINT_BELOW of its warps (MAX_WARPS_PER_SM of `arch`, or
      of the arch the listing names).

    kernel: the kernel's name as the hints write it (Exercise.kernel_name).
    texts: the exercise's own wording ({"division_lead", "division_tail", "width_tail"}: Exercise.hint_texts; default:
    the harness's, which names no exercise: DIVISION_LEAD, DIVISION_TAIL and WIDTH_TAIL).

    Reads text, bytes and numbers; with a cubin it runs the disassembler (about 0.4 s, grader.feedback.sass), unless
    `reading` (a grader.feedback.sass.Reading of that cubin, started earlier) has run it already. Returns Hints
    (grader.feedback.hint: text and kind, no estimate yet: grader.feedback.worth costs them), [] when `mangled` is
    not an entry of `ptx` (and not in the cubin's code). Hints never change the verdict.
    """
    facts = reading.facts() if reading else sass.sass_facts(cubin, mangled) if cubin else None
    if facts is not None:
        hints = sass_hints(facts, scalar_copy_gbs=scalar_copy_gbs, floor_gbs=floor_gbs, floor_name=floor_name,
                           kernel=kernel, arch=arch, texts=texts, exercise_hints=exercise_hints)
    else:
        hints = ptx_hints(ptx_facts(ptx, mangled), scalar_copy_gbs=scalar_copy_gbs, floor_gbs=floor_gbs,
                          floor_name=floor_name, kernel=kernel, texts=texts, exercise_hints=exercise_hints)
    if any(h.kind == HintKind.DIVISION for h in hints) and not division_reached(ptx, mangled, integer_params,
                                                                                division_bits):
        hints = [h for h in hints if h.kind != HintKind.DIVISION]
    return hints


def division_reached(ptx: str, mangled: str, integer_params: frozenset[int], bits: int) -> bool:
    """Whether a launch of the grader can reach an integer div or rem at least `bits` wide in the kernel `mangled`
    of `ptx`, its integer parameters (0-based indices) at most INT32_LIMIT (grader.feedback.ptx_paths)."""
    found = reachable_divisions(ptx, mangled, integer_params, course.INT32_LIMIT)
    return any(int(op.rsplit(".", 1)[1][1:]) >= bits for op in found)


FROM_SASS = "from the machine code"
FROM_PTX = "from the PTX"

DIVISION_LEAD = "look at your index arithmetic first"
DIVISION_TAIL = ("An integer division by a value known only at run time, on every element, is dozens of instructions "
                 "(a 64-bit one calls a routine), which a kernel near the copy floor has nothing to hide behind: find "
                 "the index without dividing (a 2-D grid), or divide once per thread in 32 bits.")
WIDTH_TAIL = ("Load and store 16 bytes per thread (float4 where the data is 16-byte aligned), with a scalar path "
              "for the rest.")
"""The division hint's first words and last sentences, and the 4-byte-load hint's last sentence, where the exercise
gives none of its own (Exercise.hint_texts: each exercise's wording lives in its folder)."""


def _loads_hint(kernel: str, source: str, ops: str, scalar_copy_gbs: float, floor_gbs: float,
                floor_name: str | None, tail: str = "") -> str:
    name = f" ({floor_name})" if floor_name else ""
    return (
        f"every global load in {kernel} is 4 bytes wide ({source}: {ops}). On this card the one-float-per-thread "
        f"copy reaches {scalar_copy_gbs:.0f} GB/s and the copy floor{name} {floor_gbs:.0f} GB/s "
        f"({scalar_copy_gbs / floor_gbs:.2f} of it): a kernel whose loads are all 4 bytes wide runs at about "
        "the first and is graded against the second. " + (tail or WIDTH_TAIL)
    )


def _division_hint(kernel: str, source: str, evidence: str, texts: dict[str, str]) -> Hint:
    """The division hint, read from `source` (FROM_PTX, FROM_SASS) with its `evidence`, in the exercise's words."""
    return Hint(kind=HintKind.DIVISION, text=(
        f"{texts.get('division_lead') or DIVISION_LEAD} ({source}): {kernel} divides by a value known only at run "
        f"time ({evidence}). " + (texts.get("division_tail") or DIVISION_TAIL)))


def _slow_scalar_copy(scalar_copy_gbs: float | None, floor_gbs: float | None) -> bool:
    return scalar_copy_gbs is not None and bool(floor_gbs) and scalar_copy_gbs < SCALAR_COPY_SHORT * floor_gbs


def ptx_hints(facts: PtxFacts, *, scalar_copy_gbs: float | None, floor_gbs: float | None,
              floor_name: str | None = None, kernel: str, texts: dict[str, str] | None = None,
              exercise_hints: ExerciseHints | None = None) -> list[Hint]:
    """code_hints from PtxFacts (the module docstring says what each one reads)."""
    t = texts or {}
    hints: list[Hint] = []
    if not facts.found:
        return hints
    if facts.int_divisions:
        wide = any(op.endswith("64") for op in facts.int_divisions)
        evidence = (", ".join(facts.int_divisions) + " in its PTX"
                    + ("; a 64-bit one, which ptxas expands into a long instruction sequence" if wide else ""))
        hints.append(_division_hint(kernel, FROM_PTX, evidence, t))
    if facts.only_4_byte_loads and _slow_scalar_copy(scalar_copy_gbs, floor_gbs):
        ops = ", ".join(g.opcode for g in facts.global_loads)
        text = _loads_hint(kernel, FROM_PTX, ops, scalar_copy_gbs, floor_gbs, floor_name, t.get("width_tail", ""))
        hints.append(Hint(kind=HintKind.WIDTH, text=text))
    if exercise_hints is not None:
        hints += exercise_hints(CodeSigns(kernel, FROM_PTX, facts.tanh))
    return hints


def _ops(ops) -> str:
    return ", ".join(f"{m.count} x {m.opcode}" for m in ops)


def sass_hints(facts: SassFacts, *, scalar_copy_gbs: float | None, floor_gbs: float | None,
               floor_name: str | None = None, kernel: str, arch: str | None = None,
               texts: dict[str, str] | None = None, exercise_hints: ExerciseHints | None = None) -> list[Hint]:
    """code_hints from SassFacts (grader.feedback.sass): the same hints as ptx_hints (the exercise's own among
    them), read from the machine code, then local memory and registers. `arch` (default: the arch the listing
    names) picks the SM's warp limit for the register hint; texts and exercise_hints as for code_hints."""
    t = texts or {}
    hints: list[Hint] = []
    if facts.int_division:
        if facts.division_routines:
            sizes = dict(facts.function_sizes)
            parts = []
            for r in facts.division_routines:
                size = next((n for f, n in sizes.items() if f.endswith(r)), None)
                bits = r.rsplit("_", 1)[1]  # 'u64', 's32', ...
                what = (f"{'remainder' if '_rem_' in r else 'division'} ({bits[1:]}-bit, "
                        f"{'signed' if bits[0] == 's' else 'unsigned'})")
                parts.append(f"a call to {r}, CUDA's integer {what} routine"
                             + (f" of {size} instructions" if size else ""))
            evidence = "; ".join(parts)
        elif facts.wide_division:
            evidence = "CUDA's 64-bit integer division routine, which starts with I2F.U64.RP"
        else:
            evidence = (", ".join(facts.division_sequences) + " then MUFU.RCP: an inline 32-bit integer division "
                        "of about 20 instructions")
        hints.append(_division_hint(kernel, FROM_SASS, evidence, t))
    if facts.only_4_byte_loads and _slow_scalar_copy(scalar_copy_gbs, floor_gbs):
        ops = _ops(facts.global_loads) + (f"; its stores: {_ops(facts.global_stores)}" if facts.global_stores else "")
        text = _loads_hint(kernel, FROM_SASS, ops, scalar_copy_gbs, floor_gbs, floor_name, t.get("width_tail", ""))
        hints.append(Hint(kind=HintKind.WIDTH, text=text))
    if exercise_hints is not None:
        signs = sass_tanh_signs(facts)
        only_exp = bool(facts.exp_reciprocals) and len(signs) == 1
        hints += exercise_hints(CodeSigns(kernel, FROM_SASS, signs, sigmoid_only=only_exp))
    if facts.local_loads or facts.local_stores:
        frame = f", a {facts.stack_frame}-byte stack frame per thread" if facts.stack_frame else ""
        regs = f" and {facts.registers} registers" if facts.registers else ""
        hints.append(Hint(kind=HintKind.LOCAL, text=(
            f"{kernel} uses local memory ({FROM_SASS}): {facts.local_loads} local load and {facts.local_stores} "
            f"local store instructions (LDL, STL){frame}{regs}. Local memory is per-thread memory in DRAM "
            "behind the caches: registers that ptxas spilled (the compile report's spill stores and loads), "
            "an array indexed with a value known only at run time, such as the counter of a loop that is "
            "not unrolled, or the arguments of a printf (stores only, where the printf runs). Spills and such "
            "arrays are traffic on top of the 8 bytes per element this kernel must move. "
            "Index per-thread arrays only with constants (#pragma unroll over a fixed count), keep few "
            "values live per thread, and take printf out of the kernel you hand in."
        )))
    target = arch or facts.arch
    limit = register_limited_warps(facts.registers, target) if facts.registers else None
    if limit and limit[0] < REGISTER_HINT_BELOW * limit[1]:
        warps, most = limit
        hints.append(Hint(kind=HintKind.REGISTERS, facts={"warps_now": float(warps), "warps_fixed": float(most)},
                          text=(
            f"{kernel} uses {facts.registers} registers per thread ({FROM_SASS}): an SM's {REGISTERS_PER_SM:,} "
            f"registers then hold at most {warps} warps ({warps * 32} threads) of the {most} an {target} SM can "
            "run. A kernel that streams memory relies on many warps to keep loads in flight; values held per "
            "thread (a large array, many elements per thread loaded before any is stored) cost registers. "
            "Move a few 16-byte vectors per thread at a time."
        )))
    return hints
