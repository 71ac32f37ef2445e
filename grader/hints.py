"""Hints from the compiled code: what the submission's PTX says about the page's three classic mistakes.

Read from PTX, not SASS: SASS needs a disassembler (nvdisasm or cuobjdump) that is not part of the grader's
dependencies (NVRTC from PyPI ships none; nvdisasm would be the separate `nvidia-cuda-nvdisasm` wheel), and
PTX is what NVRTC gives on every machine, GPU or not (`Compiled.ptx`). PTX is NVVM's output before ptxas,
so an integer division is still one `div`/`rem` instruction there (ptxas expands it later), loads still
carry their width, and library calls such as tanhf are inlined as recognisable instruction sequences.

Only the submission's kernel is read: the body of its `.entry` and of every `.func` it calls (a
`__noinline__` helper is a `.func`), never other kernels in the same file.

What NVRTC 13.5 (CUDA 13.5, sm_90, no fast-math, which is how the grader compiles) emits, as checked
with `grader.compile.compile_kernels` on the kernels in tests/data/hints/:

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
family do not depend on the version.

Hints never change the verdict.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from grader import exercise

SCALAR_COPY_SHORT = exercise.GOLD
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
(module docstring). Two or more of them in the kernel mean tanhf."""

TANH_DOUBLE_CONSTANTS = {
    0x3FC111111110FA4A: "0.13333 (tanh's series)",
    0xBFABA1BA1B80AB40: "-0.05397 (tanh's series)",
    0x3F9664F47EC0C8CF: "0.02187 (tanh's series)",
    0xBF8226E1F3CF1EF5: "-0.00886 (tanh's series)",
}
"""Double immediates of NVRTC 13.5's inline tanh(double) that no other double math function checked uses."""

GELU_TANH_VALUES = {
    0.044715: "0.044715 (the tanh GELU's cubic coefficient)",
    0.7978845608028654 * 0.044715: "0.0356774 (sqrt(2/pi) x 0.044715, the tanh GELU's folded cubic term)",
    2 * 0.7978845608028654 * 0.044715: "0.0713548 (2 sqrt(2/pi) x 0.044715, the sigmoid form of the tanh GELU)",
}
"""Immediates that only the tanh GELU uses; matched within GELU_TANH_RTOL of |value|."""

GELU_TANH_RTOL = 1e-5
"""Relative match for GELU_TANH_VALUES: float32 rounding of a constant or of a folded product is below
1.2e-7 relative; other math functions' nearest constants are more than 1e-3 away."""

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_HEADER = re.compile(r"^[ \t]*(?:\.(?:visible|weak|extern)\s+)*\.(entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)", re.M)
_CALL = re.compile(r"\bcall(?:\.uni)?\s+(?:\([^)]*\)\s*,\s*)?([\w$]+)")
_INT_DIV = re.compile(r"\b(?:div|rem)(?:\.full)?\.[us](?:16|32|64)\b")
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


def kernel_ptx(ptx: str, mangled: str) -> str | None:
    """The PTX bodies (comments removed) of the `.entry` named `mangled` and of every `.func` it calls,
    directly or through other functions; None when there is no such entry."""
    text = _COMMENT.sub("", ptx)
    bodies: dict[str, str] = {}
    kinds: dict[str, str] = {}
    for m in _HEADER.finditer(text):
        body = _body_after(text, m.end())
        if body is not None:
            bodies[m.group(2)] = body
            kinds[m.group(2)] = m.group(1)
    if kinds.get(mangled) != "entry":
        return None
    seen, todo = [mangled], [mangled]
    while todo:
        for callee in _CALL.findall(bodies[todo.pop()]):
            if callee in bodies and callee not in seen:
                seen.append(callee)
                todo.append(callee)
    return "\n".join(bodies[name] for name in seen)


def _body_after(text: str, at: int) -> str | None:
    """The brace-balanced body that follows a header ending at `at` (past the parameter list and any
    directives), or None for a declaration (ends in ';' before any '{')."""
    depth, i, n = 0, at, len(text)
    while i < n and text[i] != "(" and text[i] not in "{;":
        i += 1
    if i < n and text[i] == "(":
        while i < n:
            depth += text[i] == "("
            depth -= text[i] == ")"
            i += 1
            if depth == 0:
                break
    while i < n and text[i] not in "{;":
        i += 1
    if i >= n or text[i] == ";":
        return None
    start, depth = i, 0
    while i < n:
        depth += text[i] == "{"
        depth -= text[i] == "}"
        i += 1
        if depth == 0:
            return text[start:i]
    return text[start:]


def ptx_facts(ptx: str, mangled: str) -> PtxFacts:
    """Read integer divisions, global load widths and tanh signatures from the kernel `mangled` in `ptx`
    (see the module docstring for what NVRTC emits and why these signatures)."""
    body = kernel_ptx(ptx, mangled)
    if body is None:
        return PtxFacts(found=False)
    divisions = tuple(sorted(set(_INT_DIV.findall(body))))
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
    hits = [what for c, what in TANHF_CONSTANTS.items() if c in floats]
    if len(hits) >= 2:
        signs.append("tanhf's inline expansion (constants " + ", ".join(h.split(" (")[0] for h in hits) + ")")
    hits = [what for c, what in TANH_DOUBLE_CONSTANTS.items() if c in doubles]
    if len(hits) >= 2:
        signs.append("tanh(double)'s inline expansion")
    values = [struct.unpack(">f", c.to_bytes(4, "big"))[0] for c in floats]
    values += [struct.unpack(">d", c.to_bytes(8, "big"))[0] for c in doubles]
    for target, what in GELU_TANH_VALUES.items():
        if any(abs(abs(v) - target) <= GELU_TANH_RTOL * target for v in values):
            signs.append("the constant " + what)
    return tuple(signs)


def code_hints(ptx: str, mangled: str, *, scalar_copy_gbs: float | None, floor_gbs: float | None,
               floor_name: str | None = None, kernel: str = exercise.KERNEL_NAME) -> list[str]:
    """Hints about the kernel `mangled` (its PTX entry name, `KernelInfo.mangled`) in the module PTX `ptx`.

    - An integer div/rem (any width: NVRTC emits rem.u64 for size_t, rem.s32 for int) gets the page's
      "look at your bias index first" (Pitfalls: a flat index with i % cols is an integer division on every
      element).
    - Only 4-byte global loads, on a card where the one-float-per-thread copy (`scalar_copy_gbs`, GB/s =
      1e9 bytes/s) is below SCALAR_COPY_SHORT (0.90) of the copy floor (`floor_gbs`, the fastest copy,
      named `floor_name`), gets a hint quoting both bandwidths. Needs both numbers: with either None (no
      GPU) this hint is not given.
    - A tanh (tanh.approx, tanhf's or tanh's inline expansion, or the tanh GELU's 0.044715) gets "the tanh
      form is a different function", with the size of the gap (exercise.TANH_GAP_MAX at TANH_GAP_AT).

    Pure: reads text and numbers only. Returns [] when `mangled` is not an entry of `ptx`. Hints never change
    the verdict.
    """
    facts = ptx_facts(ptx, mangled)
    hints: list[str] = []
    if not facts.found:
        return hints
    if facts.int_divisions:
        ops = ", ".join(facts.int_divisions)
        wide = any(op.endswith("64") for op in facts.int_divisions)
        hints.append(
            f"look at your bias index first: {kernel} does an integer division ({ops} in its PTX"
            + ("; a 64-bit one, which ptxas expands into a long instruction sequence" if wide else "")
            + "). The page's pitfall: a flat index with i % cols costs an integer division on every element, "
            "and a kernel this close to the copy floor has nothing to hide it behind. Use the page's row grid "
            "(blockIdx.y = row, the column from blockIdx.x and threadIdx.x), so bias[col] needs no division."
        )
    if (facts.only_4_byte_loads and scalar_copy_gbs is not None and floor_gbs
            and scalar_copy_gbs < SCALAR_COPY_SHORT * floor_gbs):
        ops = ", ".join(g.opcode for g in facts.global_loads)
        name = f" ({floor_name})" if floor_name else ""
        hints.append(
            f"every global load in {kernel} is 4 bytes wide ({ops}). On this card the one-float-per-thread "
            f"copy reaches {scalar_copy_gbs:.0f} GB/s and the copy floor{name} {floor_gbs:.0f} GB/s "
            f"({scalar_copy_gbs / floor_gbs:.2f} of it): a kernel whose loads are all 4 bytes wide runs at about "
            "the first and is graded against the second. Load and store 16 bytes per thread (float4: "
            "rows are 16-byte aligned when cols % 4 == 0), with a scalar path for other shapes."
        )
    if facts.tanh:
        hints.append(
            f"{kernel} looks like the tanh GELU (found: {'; '.join(facts.tanh)}). The tanh GELU, "
            "0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))), is a different function from the exact GELU "
            "0.5 v (1 + erf(v / sqrt(2))) the exercise asks for, not a cheaper way to compute it: they differ "
            f"by up to {exercise.TANH_GAP_MAX:.2e} at |v| = {exercise.TANH_GAP_AT:.3f}, in double precision "
            "too. Use erff."
        )
    return hints
