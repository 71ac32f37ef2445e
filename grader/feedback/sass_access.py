"""Each global memory instruction of a kernel's machine code, one by one: what it does (load, store, atomic,
fence), how many bytes a thread moves with it, the student's source line it came from, and which kernel
parameter its address is computed from (x, bias or out), so that a hint can say "line 14, the store to out:
16 bytes per thread" and judge each instruction against its own width (issue 29).

Read from nvdisasm's listing (grader.feedback.sass parses it; this module works on its instructions, which it
only needs to have `opcode`, `operands`, `line`, `offset` and `root`):

- the line: nvdisasm `-g` prints `//## File "NAME", line N` before the instructions of each line when the cubin
  carries line information (NVRTC's `-lineinfo`, which the grader compiles with: it changes no instruction,
  checked on every kernel of tests/data/hints and tests/data/causes, tests/test_causes.py). The prelude
  the grader puts before the file (grader.source.prelude) is a file of its own, and its lines are not the
  student's: they read as None.
- the buffer: a backward slice over the registers that form the address (`[R2.64+0x4]`), through the
  instructions before it in program order (loop back-edges are not followed: a grid-stride loop's increment
  adds to the register the slice already traced), collecting the constant-bank operands `c[0x0][OFFSET]` it
  meets. Kernel parameters sit in constant bank 0 from the offset EIATTR_PARAM_CBANK names (0x210 on sm_90,
  0x160 on sm_75 to sm_89; nvdisasm's .nv.info): the pointer parameter among them is the buffer.
- the width: the opcode's (`LDG.E.128`: 16 bytes; `STG.E`: 4), as grader.feedback.sass reads it.
- an element stored twice: a store to the same address register and offset as a store that runs unguarded
  before it on every path to it (it dominates it: grader.feedback.sass_flow), with no instruction writing the
  address register pair on any path between them (a volatile pointer, or a fence between, keeps the compiler
  from merging them). Stores on different paths (a float4 store and its scalar fallback through the same row
  pointer) are not repeats; each store is compared with the nearest store that dominates it (among the
  REPEAT_CANDIDATES stores to that address nearest in program order), and at most MAX_REPEAT_CHECKS stores are
  compared in one function (the rest are not called repeats).

What NVRTC 13.5 emits for these (sm_90, tests/data/causes): a fence (__threadfence) is `MEMBAR.SC.GPU` then
`ERRBAR`, `CGAERRBAR` and `CCTL.IVALL` (which invalidates the L1); a volatile store `STG.E.STRONG.SYS`;
atomicExch with its result unused `ATOMG.E.EXCH.STRONG.GPU PT, RZ, ...`; atomicAdd with its result unused
`REDG.E.ADD.F32.FTZ.RN.STRONG.GPU`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from grader.feedback.sass_flow import Flow, flow

LOADS = {"LDG": "ld", "LD": "ld", "LDGSTS": "ld", "STG": "st", "ST": "st", "ATOMG": "atom", "ATOM": "atom",
         "RED": "red", "REDG": "red", "MEMBAR": "fence"}
"""The opcodes read (by their root) and what each does."""
PARAM_BASE = {"sm_75": 0x160, "sm_80": 0x160, "sm_86": 0x160, "sm_87": 0x160, "sm_89": 0x160, "sm_90": 0x210}
"""Where the parameters start in constant bank 0 when the listing does not say (EIATTR_PARAM_CBANK)."""
SLICE_DEPTH = 40
"""At most this many instructions are followed back from an access (a kernel's address arithmetic takes fewer
than 15 in every kernel of tests/data)."""

MAX_REPEAT_CHECKS = 256
"""Stores compared with an earlier one per function at most (each comparison searches the flow once)."""
REPEAT_CANDIDATES = 16
"""The stores to the same address nearest in program order that are tried as the one a store repeats."""

_ADDRESS = re.compile(r"(?<![A-Za-z])\[(R\d+)(?:\.64)?(?:\s*([+-])\s*(0x[0-9a-fA-F]+|\d+))?\]")
_UADDRESS = re.compile(r"\[(UR\d+)(?:\.64)?(?:\s*([+-])\s*(0x[0-9a-fA-F]+|\d+))?\]")
_CBANK = re.compile(r"c\[0x0\]\[(0x[0-9a-fA-F]+)\]")
_REGS = re.compile(r"\b(U?R\d+)\b")
_WIDTH = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16, "256": 32}
_PAIR_DEST = re.compile(r"\.(?:64|WIDE)\b")
_NO_DEST = {"STG", "ST", "STL", "STS", "BRA", "CALL", "RET", "EXIT", "BSSY", "BSYNC", "ISETP", "FSETP", "DSETP",
            "RED", "REDG", "BAR", "MEMBAR", "NOP", "ERRBAR", "CGAERRBAR", "CCTL"}


@dataclass(frozen=True)
class Access:
    """One global memory instruction (or fence) of the kernel: `op` ('ld', 'st', 'atom', 'red', 'fence'), the
    opcode, `nbytes` each thread moves (None for a fence), the student's source `line` (None: unknown, or the
    grader's prelude), the instruction's `offset` in its function, `params`: the constant-bank offsets of the
    kernel parameters its address is computed from (relative to the first parameter: 0 for the first, 8 for the
    second pointer), and `repeat`: it stores to the address an earlier store of the same function wrote."""

    op: str
    opcode: str
    nbytes: int | None
    line: int | None = None
    offset: int | None = None
    params: tuple[int, ...] = ()
    repeat: bool = False

    @property
    def strong(self) -> bool:
        """A volatile (or scoped) access: `.STRONG.SYS` / `.STRONG.GPU`, which the L1 does not keep."""
        return ".STRONG" in self.opcode


def width(opcode: str) -> int:
    """Bytes each thread moves with a memory `opcode` ('LDG.E.128' -> 16); 4 where no width is written."""
    for part in opcode.split(".")[1:]:
        if part in _WIDTH:
            return _WIDTH[part]
    return 4


def _dests(ins) -> set[str]:
    """The registers `ins` writes: its first operand (and the next register, for a 64-bit or .WIDE result)."""
    root = ins.opcode.split(".", 1)[0]
    if root in _NO_DEST or not ins.operands.strip():
        return set()
    first = ins.operands.split(",", 1)[0].strip()
    m = re.fullmatch(r"(U?R)(\d+)", first)
    if not m:
        return set()
    regs = {first}
    if _PAIR_DEST.search(ins.opcode) or root in ("LDG", "LD", "LDC") and width(ins.opcode) >= 8:
        regs.add(f"{m.group(1)}{int(m.group(2)) + 1}")
    if width(ins.opcode) == 16 and root in ("LDG", "LD"):
        regs |= {f"{m.group(1)}{int(m.group(2)) + k}" for k in (2, 3)}
    return regs


def _sources(ins) -> tuple[set[str], set[int]]:
    """The registers `ins` reads (every register operand but the one it writes) and the constant-bank offsets
    it reads."""
    args = ins.operands.split(",")
    if _dests(ins):
        args = args[1:]
    text = ",".join(args)
    regs = set(_REGS.findall(text))
    for r in list(regs):  # a 64-bit source R2.64 is the pair R2, R3
        if re.search(rf"\b{r}\.64\b", text):
            m = re.fullmatch(r"(U?R)(\d+)", r)
            regs.add(f"{m.group(1)}{int(m.group(2)) + 1}")
    return regs, {int(c, 16) for c in _CBANK.findall(text)}


def slice_params(body: Sequence, at: int, regs: set[str], base: int) -> tuple[int, ...]:
    """The parameters (constant-bank offsets from `base`, sorted) that the registers `regs`, read by instruction
    `at` of `body`, are computed from: a backward walk in program order over at most SLICE_DEPTH instructions
    that write a traced register."""
    traced, found, steps = set(regs), set(), 0
    for ins in reversed(body[:at]):
        if not traced or steps >= SLICE_DEPTH:
            break
        written = _dests(ins) & traced
        if not written:
            continue
        steps += 1
        traced -= written
        srcs, banks = _sources(ins)
        traced |= {r for r in srcs if not r.endswith("RZ")}
        found |= {b - base for b in banks if b >= base}
    return tuple(sorted(found))


def address(ins) -> tuple[str, int] | None:
    """(register, byte offset) of a memory instruction's address operand (`[R2.64+0x4]` -> ('R2', 4); a uniform
    register's `[UR4+0x10]` -> ('UR4', 16)); None when it has none."""
    m = _ADDRESS.search(ins.operands) or _UADDRESS.search(ins.operands)
    if not m:
        return None
    off = int(m.group(3), 0) if m.group(3) else 0
    return m.group(1), -off if m.group(2) == "-" else off


def accesses(body: Sequence, base: int, labels: dict[str, int] | None = None) -> tuple[Access, ...]:
    """The global memory instructions and fences of one function's `body` (instructions in program order, NOPs
    included or not), each with its width, line, the parameters its address comes from (`base`: the offset of
    the first parameter in constant bank 0) and whether it repeats an earlier store to the same address on the
    same path (module docstring; `labels`: the function's labels, name -> offset, to place its branch targets)."""
    out: list[Access] = []
    stores: list[tuple[int, tuple[str, int], int]] = []  # (index in body, address, index in out)
    for i, ins in enumerate(body):
        op = LOADS.get(ins.root)
        if op is None:
            continue
        if op == "fence":
            out.append(Access("fence", ins.opcode, None, ins.line, ins.offset))
            continue
        addr = address(ins)
        if addr is None:
            continue
        out.append(Access(op, ins.opcode, width(ins.opcode), ins.line, ins.offset,
                          slice_params(body, i, _pair(addr[0]), base)))
        if op == "st":
            stores.append((i, addr, len(out) - 1))
    if len(stores) > 1:
        for k in _repeats(flow(body, labels), stores):
            a = out[k]
            out[k] = Access(a.op, a.opcode, a.nbytes, a.line, a.offset, a.params, True)
    return tuple(out)


def _pair(reg: str) -> set[str]:
    """The 64-bit address pair of register `reg` (R2 -> R2, R3)."""
    m = re.fullmatch(r"(U?R)(\d+)", reg)
    return {reg, f"{m.group(1)}{int(m.group(2)) + 1}"} if m else {reg}


def _repeats(fl: Flow, stores: list[tuple[int, tuple[str, int], int]]) -> list[int]:
    """The positions in the access list of the stores that repeat an earlier one (module docstring): the nearest
    store with the same address that dominates it holds the same address register pair (Flow.same_value)."""
    found = []
    checks = 0
    by_address: dict[tuple[str, int], list[int]] = {}
    for i, addr, _ in stores:
        by_address.setdefault(addr, []).append(i)
    for i, addr, k in stores:
        same = by_address[addr]
        at = same.index(i)
        near = same[max(0, at - REPEAT_CANDIDATES):at] + same[at + 1:at + 1 + REPEAT_CANDIDATES]
        doms = [j for j in near if fl.dominates(j, i)]
        if not doms or checks >= MAX_REPEAT_CHECKS:
            continue
        nearest = next(j for j in doms if all(fl.dominates(d, j) for d in doms))
        checks += 1
        if fl.same_value(nearest, i, _pair(addr[0]), _dests):
            found.append(k)
    return found
