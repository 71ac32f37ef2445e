"""Facts from the machine code (SASS): what the card runs, read from the NVRTC cubin by a CUDA disassembler.

PTX is NVVM's output before ptxas, so hints read from it guess what the card will run; the SASS in the cubin
is what it runs. Reading it needs a disassembler, `nvdisasm` or `cuobjdump`, which the grader does not ship:
grader.feedback.sass_disassembler finds and runs it (where it looks, how it is confined, what it costs: about half a
second a submission). Without one, `sass_facts` returns None and grader.feedback.hints reads the PTX.

Parsing (sass_facts): only the submission's kernel, by mangled name, and the functions it calls, directly or
through others (nvdisasm: each function of the listing by its label, following `CALL` targets; cuobjdump
names no call target, so its block for the kernel's .text section is read, which holds the kernel and the
functions ptxas placed with it). Other kernels in the file are not read.

What NVRTC 13.5 (CUDA 13.5, ptxas V13.5.37, no fast-math) emits for sm_90, checked with nvdisasm 13.5.37 and
cuobjdump 13.5.37 on the kernels in tests/data/hints/ and submissions/ (the tests compile them again, so a
change of the toolchain fails a test instead of silently dropping a hint); sm_75 to sm_120 read the same:

- Global loads and stores carry their width: `LDG.E` (4 bytes), `LDG.E.64`, `LDG.E.128` (`.CONSTANT` for a
  `const __restrict__` pointer, ld.global.nc; `.SYS` on sm_75), `LDG.E.U8`/`.U16`; `STG.E`, `STG.E.64`,
  `STG.E.128`; cp.async gives `LDGSTS.E.BYPASS.128`. Generic `LD`/`ST` (a pointer ptxas cannot place; not
  seen in these kernels, even through __noinline__ helpers) and bulk copies are counted with them.
- Integer division by a value known only at run time: 64-bit (`size_t`, `long long`) operands call a routine,
  `CALL.REL.NOINC` to `$__internal_0_$__cuda_sm20_rem_u64` (`div_u64`, `rem_s64`, `div_s64`), which starts
  with `I2F.U64.RP`; before the call, a test that both operands fit 32 bits guards an inline 32-bit path
  (`I2F.U32.RP`, `MUFU.RCP`, `IMAD.HI.U32`; on sm_120 there is no inline path). 32-bit operands are inline
  only: `I2F.U32.RP` (unsigned) or `I2F.RP` (int), each with one `MUFU.RCP`. Division by a constant is a
  multiply-high: no `I2F...RP`. A float division calls `__cuda_sm3x_div_rn_noftz_f32_slowpath`, not an
  integer routine.
- `MUFU.TANH`: the hardware tanh (tanh.approx.f32: inline asm, `__tanhf`, fast-math). Without fast-math,
  tanhf is `FMUL |x|, 2.88539` (2 log2 e), `MUFU.EX2`, `FADD +1`, `MUFU.RCP`, `FFMA -2, 1`
  (1 - 2 / (e^2|x| + 1)) with the polynomial and cutoff constants hints.TANHF_CONSTANTS as immediates
  (decimal in FFMA/FSETP, hex in MOV); tanh(double) loads hints.TANH_DOUBLE_CONSTANTS as 32-bit halves into
  register pairs (`UMOV UR6, lo; UMOV UR7, hi`). A reciprocal of 1 + exp (`MUFU.EX2`, then `FADD ..., 1` or
  `FFMA ..., 1`, then `MUFU.RCP` of it) is also how a hand-written tanh and a sigmoid (v / (1 + expf(-k v)))
  compile; erff, erfcf, normcdff, expf, __expf, sinhf, coshf, erfcxf, atanf, tanf, powf, cbrtf and log1pf use
  `MUFU.EX2`, `MUFU.RCP` or both, but never that chain.
- Local memory: `LDL`/`STL` (`.64`, `.128`, `LDL.LU`), for spilled registers or a per-thread array indexed
  at run time (a loop that is not unrolled); the registers per thread are in the listing (nvdisasm:
  EIATTR_REGCOUNT of the kernel; cuobjdump -res-usage: REG) with the stack frame (EIATTR_FRAME_SIZE, STACK).
"""

from __future__ import annotations

import re
import struct
import threading
from collections import Counter
from dataclasses import dataclass, field

from grader.feedback.sass_access import PARAM_BASE, Access, accesses
from grader.feedback.sass_disassembler import Disassembler, DisassemblyError, disassemble, find_disassembler, find_tool

__all__ = ["DIVISION_ROUTINE", "Disassembler", "DisassemblyError", "Instruction", "Listing", "MemoryOp", "Reading",
           "SassFacts", "disassemble", "division_start_indices", "division_starts", "facts", "find_disassembler",
           "find_tool", "parse", "parse_cuobjdump", "parse_nvdisasm", "reachable", "sass_facts"]

_INSTR = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s+(?:\{\s*)?(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)"
                    r"\s*([^;]*);")
_LABEL = re.compile(r"^\s*([A-Za-z_$.][\w$.]*):\s*$")
_TYPE_FUNC = re.compile(r"^\s*\.type\s+([\w$.]+)\s*,\s*@function")
_SECTION = re.compile(r"^\s*\.section\s+([^,\s]+)")
_CALL_TARGET = re.compile(r"`\(([\w$.]+)\)")
_TARGET = re.compile(r"^\s*\.target\s+(sm_\w+)")
_CUOBJ_FUNC = re.compile(r"^\s*Function\s*:\s*([\w$.]+)\s*$")
_CUOBJ_RES = re.compile(r"^\s*Function\s+([\w$.]+)\s*:\s*$")
_CUOBJ_RES_LINE = re.compile(r"\bREG:(\d+)\s+STACK:(\d+)")
_NVINFO_ATTR = re.compile(r"//-+\s*nvinfo\s*:\s*(EIATTR_\w+)")
_NVINFO_INDEX = re.compile(r"\.word\s+index@\(([\w$.]+)\)")
_NVINFO_WORD = re.compile(r"\.word\s+(0x[0-9a-fA-F]+)\s*$")
_NVINFO_SHORT = re.compile(r"\.short\s+(0x[0-9a-fA-F]+)\s*$")
_LINE_INFO = re.compile(r'^\s*//##\s*File\s+"([^"]*)",\s*line\s+(\d+)')
PRELUDE_FILE = "the grader's prelude"
"""The file name of the text the grader puts before a submission (grader.source.prelude's `#line`): its lines are
not the student's."""
DIVISION_ROUTINE = re.compile(r"(?:\$__internal_\d+_\$)?(__cuda_sm\d+_(?:div|rem)_[us](?:16|32|64))")
"""The name (a full match) of a CUDA integer division routine as nvdisasm names a CALL's target
(`$__internal_0_$__cuda_sm20_rem_u64`); group 1 is the routine ('__cuda_sm20_rem_u64'). Float ones are
`..._div_rn_..._f32...`. A function of that name counts only when its body divides (division_starts)."""
_DIVISION_SEQUENCE = re.compile(r"^I2F(?:\.[US](?:32|64))?\.RP$")
_REG = re.compile(r"^[-!~|]*(U?R(?:\d+|Z))\b")
_HEX = re.compile(r"^(-?)0x([0-9a-fA-F]+)$")
_DEC = re.compile(r"^[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)$")
_MOVES = {"MOV", "MOV32I", "UMOV", "IMAD.MOV.U32", "IMAD.MOV"}
_WIDTH = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16, "256": 32}
_GLOBAL_LOADS = {"LDG", "LD", "LDGSTS"}
_BULK_LOADS = {"UTMALDG", "UBLKCP", "UTMAPF"}
_GLOBAL_STORES = {"STG", "ST"}
_NO_DEST = {"STG", "ST", "STL", "STS", "BRA", "CALL", "RET", "EXIT", "BSSY", "BSYNC", "ISETP", "FSETP", "DSETP",
            "RED", "ATOM", "BAR", "MEMBAR", "NOP"}
FP64_ROOTS = {"DADD", "DMUL", "DFMA", "DSETP", "DSET", "DMNMX"}
"""Double-precision arithmetic (CUDA binary utilities, the Hopper instruction set: DADD, DMUL, DFMA, DSETP, DMNMX);
F2F and MUFU with a 64-bit type (F2F.F64.F32, MUFU.RCP64H) count too: they run on the FP64 pipe."""


@dataclass(frozen=True)
class Instruction:
    """One SASS instruction: its opcode with modifiers ('LDG.E.128.CONSTANT'), its operands' text, its
    guard predicate ('@P0', '@!P1' or ''), the student's source line it came from (nvdisasm -g on a cubin with
    line information; None otherwise, and for the grader's prelude) and its offset in its function."""

    opcode: str
    operands: str
    predicate: str = ""
    line: int | None = None
    offset: int | None = None

    @property
    def root(self) -> str:
        return self.opcode.split(".", 1)[0]

    def args(self) -> list[str]:
        return [a.strip() for a in self.operands.split(",")] if self.operands.strip() else []


@dataclass(frozen=True)
class Listing:
    """A parsed disassembly: instructions per function, callees per function (nvdisasm; cuobjdump names
    none), and registers / stack frame in bytes per function where the listing states them. labels: per function,
    nvdisasm's labels (`.L_x_12`, which branches name as targets) with the offset of the instruction after each
    (grader.feedback.sass_flow places branch targets with them; cuobjdump writes offsets instead)."""

    tool: str
    functions: dict[str, tuple[Instruction, ...]]
    callees: dict[str, tuple[str, ...]]
    registers: dict[str, int]
    stack_frames: dict[str, int]
    arch: str | None = None
    param_base: dict[str, int] = field(default_factory=dict)
    labels: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class MemoryOp:
    """Instructions with one opcode that move global memory: the opcode, bytes per thread (None for bulk
    copies) and how many such instructions the code has (static count, not executions)."""

    opcode: str
    nbytes: int | None
    count: int


@dataclass(frozen=True)
class SassFacts:
    """What grader.feedback.hints reads from one kernel's SASS (the kernel and the functions it calls).

    tool: the disassembler that produced it. functions: the functions read, the kernel first.
    global_loads / global_stores: global and generic memory instructions by opcode (LDG, LD, LDGSTS,
    bulk copies / STG, ST). local_loads / local_stores: LDL / STL instructions (spills, or an array indexed
    at run time). division_routines: CUDA's integer division routines called ('__cuda_sm20_rem_u64'; only
    nvdisasm names them). division_sequences: the I2F...RP opcodes that start a division by a run-time value
    ('I2F.U32.RP', 'I2F.RP': inline 32-bit; 'I2F.U64.RP': the 64-bit routine's body). mufu: special-function
    unit operations and their counts (('EX2', 1), ('TANH', 1), ...). exp_reciprocals: MUFU.RCP of 1 + MUFU.EX2
    chains (tanh from exp, a sigmoid). float_constants / double_constants: bit patterns of the float32 and
    float64 immediates that are normal numbers (sign bit cleared). registers / stack_frame: per thread, where
    the listing states them.
    function_sizes: instructions of each function read, up to its last EXIT or RET (the padding after it not
    counted). instructions: all instructions read, NOPs not counted. arch: the listing's target ('sm_90').
    accesses: each global memory instruction and fence, with its width, source line and the parameters its
    address comes from (grader.feedback.sass_access), in program order, the kernel's first. first_exit: the
    kernel's instructions up to and with its first EXIT (NOPs not counted): what a warp with nothing to do runs.
    fp64: its double-precision instructions by source line.
    """

    tool: str
    functions: tuple[str, ...]
    instructions: int
    global_loads: tuple[MemoryOp, ...] = ()
    global_stores: tuple[MemoryOp, ...] = ()
    local_loads: int = 0
    local_stores: int = 0
    division_routines: tuple[str, ...] = ()
    division_sequences: tuple[str, ...] = ()
    mufu: tuple[tuple[str, int], ...] = ()
    exp_reciprocals: int = 0
    float_constants: frozenset[int] = frozenset()
    double_constants: frozenset[int] = frozenset()
    registers: int | None = None
    stack_frame: int | None = None
    function_sizes: tuple[tuple[str, int], ...] = ()
    arch: str | None = None
    accesses: tuple[Access, ...] = ()
    first_exit: int | None = None
    fp64: tuple[tuple[int | None, int], ...] = ()
    """Double-precision instructions (FP64_ROOTS) by the source line they come from (None: not known), in line
    order."""
    listing: Listing | None = field(default=None, compare=False, repr=False)
    """The parsed listing these facts were read from (grader.feedback.code_paths reads its control flow)."""
    mangled: str = ""
    """The kernel's mangled name in `listing`."""

    @property
    def only_4_byte_loads(self) -> bool:
        """True when the kernel loads from global memory and every such load is 4 bytes wide."""
        return bool(self.global_loads) and all(g.nbytes == 4 for g in self.global_loads)

    @property
    def int_division(self) -> bool:
        """A division or remainder by a value known only at run time (a routine call or an inline sequence)."""
        return bool(self.division_routines or self.division_sequences)

    @property
    def wide_division(self) -> bool:
        """A 64-bit one: a call to a *_64 routine, or the 64-bit routine's I2F.U64.RP / I2F.S64.RP."""
        return any(r.endswith("64") for r in self.division_routines) or any(
            "64" in s for s in self.division_sequences)

    def mufu_count(self, op: str) -> int:
        return dict(self.mufu).get(op, 0)


# --- parsing ---------------------------------------------------------------------------------------

def parse_nvdisasm(text: str) -> Listing:
    """Functions (by their labels in .text sections, declared `.type NAME,@function`), their CALL targets,
    EIATTR_REGCOUNT / EIATTR_FRAME_SIZE / EIATTR_PARAM_CBANK from .nv.info, and the source line of each
    instruction where the listing has `//## File "NAME", line N` (nvdisasm -g; PRELUDE_FILE's lines are None)."""
    functions: dict[str, list[Instruction]] = {}
    declared: set[str] = set()
    info = _NvInfo()
    section = ""
    current: str | None = None
    arch = None
    where: list[int | None] = [None]  # the source line of the instructions that follow
    labels = _Labels()
    for line in text.splitlines():
        src = _LINE_INFO.match(line)
        if src:
            where[0] = None if src.group(1).rsplit("/", 1)[-1] == PRELUDE_FILE else int(src.group(2))
            continue
        if arch is None:
            t = _TARGET.match(line)
            if t:
                arch = t.group(1)
                continue
        m = _SECTION.match(line)
        if m:
            section, current, where[0] = m.group(1), None, None
            info.attr = info.index = None
            labels.pending.clear()
        elif section.startswith(".nv.info"):
            info.read(line)
        elif section.startswith(".text"):
            current = _text_line(line, current, declared, functions, where[0], labels)
    return Listing("nvdisasm", {k: tuple(v) for k, v in functions.items()}, _callees(functions), info.registers,
                   info.frames, arch, info.param_base, labels.found)


class _Labels:
    """The labels of nvdisasm's listing per function: a label line waits (`pending`) for the next instruction of
    its function, whose offset it names; one with no instruction after it in its function is dropped."""

    def __init__(self) -> None:
        self.found: dict[str, dict[str, int]] = {}
        self.pending: list[str] = []

    def place(self, function: str, offset: int) -> None:
        if self.pending:
            names = self.found.setdefault(function, {})
            for name in self.pending:
                names.setdefault(name, offset)
            self.pending.clear()


class _NvInfo:
    """EIATTR_REGCOUNT, EIATTR_FRAME_SIZE and EIATTR_PARAM_CBANK (where the parameters start in constant bank
    0) per function, from nvdisasm's .nv.info sections: the attribute being read (`attr`) and the function it is
    for (`index`), until its value."""

    def __init__(self) -> None:
        self.registers: dict[str, int] = {}
        self.frames: dict[str, int] = {}
        self.param_base: dict[str, int] = {}
        self.attr: str | None = None
        self.index: str | None = None

    def read(self, line: str) -> None:
        a = _NVINFO_ATTR.search(line)
        if a:
            self.attr, self.index = a.group(1), None
            return
        if self.attr in ("EIATTR_REGCOUNT", "EIATTR_FRAME_SIZE"):
            i = _NVINFO_INDEX.search(line)
            if i:
                self.index = i.group(1)
                return
            w = _NVINFO_WORD.search(line)
            if w and self.index:
                (self.registers if self.attr == "EIATTR_REGCOUNT" else self.frames)[self.index] = int(w.group(1), 16)
                self.attr = self.index = None
        elif self.attr == "EIATTR_PARAM_CBANK":
            i = _NVINFO_INDEX.search(line)
            if i:
                self.index = i.group(1).removeprefix(".nv.constant0.")
                return
            h = _NVINFO_SHORT.search(line)
            if h and self.index:
                self.param_base[self.index] = int(h.group(1), 16)
                self.attr = self.index = None


def _text_line(line: str, current: str | None, declared: set[str], functions: dict[str, list[Instruction]],
               source_line: int | None = None, labels: _Labels | None = None) -> str | None:
    """One line of a .text section of nvdisasm's listing: `.type NAME,@function` declares a function, its label
    starts it, an instruction goes to the function started last (from `source_line`), another label names the
    next instruction's offset (`labels`). The function being read after the line."""
    t = _TYPE_FUNC.match(line)
    if t:
        declared.add(t.group(1))
        return current
    lab = _LABEL.match(line)
    if lab:
        if lab.group(1) in declared:
            current = lab.group(1)
            functions.setdefault(current, [])
            if labels is not None:
                labels.pending.clear()
        elif labels is not None and current is not None:
            labels.pending.append(lab.group(1))
        return current
    ins = _INSTR.match(line)
    if ins and current is not None:
        functions[current].append(_instruction(ins, source_line))
        if labels is not None:
            labels.place(current, functions[current][-1].offset)
    return current


def _instruction(m: re.Match, line: int | None = None) -> Instruction:
    """The Instruction of an _INSTR match, from source line `line`."""
    return Instruction(m.group(3), m.group(4).strip(), (m.group(2) or "").strip(), line, int(m.group(1), 16))


def _callees(functions: dict[str, list[Instruction]]) -> dict[str, tuple[str, ...]]:
    """The CALL targets of each function, each once, in order."""
    callees = {}
    for name, body in functions.items():
        targets = []
        for i in body:
            if i.root == "CALL":
                c = _CALL_TARGET.search(i.operands)
                if c and c.group(1) not in targets:
                    targets.append(c.group(1))
        callees[name] = tuple(targets)
    return callees


def parse_cuobjdump(text: str) -> Listing:
    """Blocks `Function : NAME` of `cuobjdump -sass` (each the whole .text section of a kernel, with the
    functions placed in it) and `REG:` / `STACK:` of `-res-usage`. Encodings (`/* 0x... */`) are skipped."""
    functions: dict[str, list[Instruction]] = {}
    registers: dict[str, int] = {}
    frames: dict[str, int] = {}
    current: str | None = None
    res_for: str | None = None
    arch = None
    for line in text.splitlines():
        if arch is None:
            t = _TARGET.match(line)
            if t:
                arch = t.group(1)
                continue
        m = _CUOBJ_FUNC.match(line)
        if m:
            current, res_for = m.group(1), None
            functions.setdefault(current, [])
            continue
        r = _CUOBJ_RES.match(line)
        if r:
            res_for, current = r.group(1), None
            continue
        if res_for:
            v = _CUOBJ_RES_LINE.search(line)
            if v:
                registers[res_for], frames[res_for] = int(v.group(1)), int(v.group(2))
                res_for = None
            continue
        ins = _INSTR.match(line)
        if ins and current is not None:
            functions[current].append(_instruction(ins))
    return Listing("cuobjdump", {k: tuple(v) for k, v in functions.items()}, {k: () for k in functions},
                   registers, frames, arch)


def parse(text: str, tool: str) -> Listing:
    return parse_nvdisasm(text) if tool == "nvdisasm" else parse_cuobjdump(text)


def reachable(listing: Listing, mangled: str) -> tuple[str, ...]:
    """`mangled` and every function it calls, directly or through others, in the order first reached;
    () when the listing has no function `mangled`."""
    if mangled not in listing.functions:
        return ()
    seen, todo = [mangled], [mangled]
    while todo:
        for callee in listing.callees.get(todo.pop(), ()):
            if callee in listing.functions and callee not in seen:
                seen.append(callee)
                todo.append(callee)
    return tuple(seen)


def _width(opcode: str) -> int:
    for part in opcode.split(".")[1:]:
        if part in _WIDTH:
            return _WIDTH[part]
    return 4


def _reg(arg: str) -> str | None:
    m = _REG.match(arg.strip())
    return m.group(1) if m and not m.group(1).endswith("RZ") else None


def _imm_bits32(arg: str, floating: bool) -> int | None:
    """The 32-bit pattern of an immediate operand: hex as written, decimal as a float32 when `floating`."""
    a = arg.strip()
    h = _HEX.match(a)
    if h:
        v = int(h.group(2), 16)
        return ((-v) if h.group(1) else v) & 0xFFFFFFFF
    if floating and _DEC.match(a):
        try:
            return struct.unpack("<I", struct.pack("<f", float(a)))[0]
        except (OverflowError, ValueError):
            return None
    return None


def _normal32(bits: int) -> bool:
    """A normal float32 (not zero, subnormal, inf or NaN): small integers such as return addresses are not."""
    return 0 < (bits >> 23) & 0xFF < 0xFF


def _normal64(bits: int) -> bool:
    return 0 < (bits >> 52) & 0x7FF < 0x7FF


def _is_one(arg: str) -> bool:
    a = arg.strip()
    return bool(_DEC.match(a)) and float(a) == 1.0


def _float_op(opcode: str) -> bool:
    root = opcode.split(".", 1)[0]
    return root.startswith("F") and not root.startswith(("F2", "FLO", "FRND", "FCHK"))


def _constants(body: list[Instruction]) -> tuple[set[int], set[int]]:
    """Float32 and float64 immediates of `body` as bit patterns with the sign bit cleared: decimal immediates
    of F* and D* instructions, hex immediates moved into registers (MOV, UMOV, IMAD.MOV.U32), constants
    built with HFMA2.MMA Rd, -RZ, RZ, hi, lo, and 64-bit values from 32-bit halves moved into a register pair."""
    floats: set[int] = set()
    doubles: set[int] = set()
    moved: dict[str, int] = {}
    for ins in body:
        args = ins.args()
        dest = _reg(args[0]) if args else None
        value = None
        if ins.opcode in _MOVES and len(args) >= 2:
            value = _imm_bits32(args[-1], False)
        elif ins.root == "HFMA2" and len(args) == 5 and args[1].strip() == "-RZ" and args[2].strip() == "RZ":
            try:
                hi, lo = (struct.unpack("<H", struct.pack("<e", float(a)))[0] for a in args[3:5])
                value = (hi << 16) | lo
            except (OverflowError, ValueError):
                value = None
        elif _float_op(ins.opcode):
            for a in args[1:]:
                bits = _imm_bits32(a, True)
                if bits is not None and not _HEX.match(a.strip()) and _normal32(bits):
                    floats.add(bits & 0x7FFFFFFF)
        elif ins.root in ("DADD", "DMUL", "DFMA", "DSETP", "DMNMX"):
            for a in args[1:]:
                if _DEC.match(a.strip()):
                    try:
                        bits = struct.unpack("<Q", struct.pack("<d", float(a)))[0]
                    except (OverflowError, ValueError):
                        continue
                    if _normal64(bits):
                        doubles.add(bits & 0x7FFFFFFFFFFFFFFF)
        if dest is None or ins.root in _NO_DEST:
            continue
        if value is None:
            moved.pop(dest, None)
            continue
        if _normal32(value):
            floats.add(value & 0x7FFFFFFF)
        moved[dest] = value
        m = re.match(r"(U?R)(\d+)$", dest)
        if m:
            n = int(m.group(2))
            lo_reg, hi_reg = (dest, f"{m.group(1)}{n + 1}") if n % 2 == 0 else (f"{m.group(1)}{n - 1}", dest)
            if lo_reg in moved and hi_reg in moved and _normal64((moved[hi_reg] << 32) | moved[lo_reg]):
                doubles.add(((moved[hi_reg] << 32) | moved[lo_reg]) & 0x7FFFFFFFFFFFFFFF)
    return floats, doubles


def division_starts(body: list[Instruction]) -> set[str]:
    """The I2F...RP opcodes in `body` that start an integer division by a run-time value: an `I2F.U32.RP`,
    `I2F.RP` or `I2F.U64.RP` (the divisor as a float, rounded up) whose result is the operand of a later
    `MUFU.RCP` (its reciprocal), registers followed in program order. A round-up conversion alone
    (`__uint2float_ru`) is not one."""
    return {body[i].opcode for i in division_start_indices(body)}


def division_start_indices(body: list[Instruction]) -> list[int]:
    """The indices in `body` of the instructions division_starts names, in order."""
    pending: dict[str, int] = {}  # register -> the index of the I2F...RP whose result it holds
    found: set[int] = set()
    for n, ins in enumerate(body):
        args = ins.args()
        dest = _reg(args[0]) if args else None
        if ins.opcode.startswith("MUFU.RCP") and not ins.opcode.startswith("MUFU.RCP64") and len(args) > 1:
            src = _reg(args[1])
            if src in pending:
                found.add(pending[src])
        if dest is None or ins.root in _NO_DEST:
            continue
        if ins.root == "I2F" and _DIVISION_SEQUENCE.match(ins.opcode):
            pending[dest] = n
        else:
            pending.pop(dest, None)
    return sorted(found)


def _exp_reciprocals(body: list[Instruction]) -> int:
    """MUFU.RCP instructions whose operand is 1 + e, where e is a MUFU.EX2 result (or a product with one):
    `MUFU.EX2 Ra`; [`FMUL Rb, Ra, s`]; `FADD Rc, Rb, 1` or `FFMA Rc, Rb, s, 1`; `MUFU.RCP Rd, Rc`. Registers
    are followed in program order: each write tags its register with what it holds at that point."""
    tags: dict[str, str] = {}
    found = 0
    for ins in body:
        args = ins.args()
        dest = _reg(args[0]) if args else None
        srcs = args[1:]
        tag = ""
        if ins.opcode.startswith("MUFU.EX2"):
            tag = "exp"
        elif ins.opcode.startswith("MUFU.RCP") and not ins.opcode.startswith("MUFU.RCP64") and srcs:
            found += tags.get(_reg(srcs[0]) or "", "") == "1+exp"
        elif ins.root == "FMUL" and any(tags.get(_reg(a) or "") == "exp" for a in srcs):
            tag = "exp"
        elif ins.root == "FADD" and len(srcs) == 2 and any(_is_one(a) for a in srcs):
            tag = "1+exp" if any(tags.get(_reg(a) or "") == "exp" for a in srcs) else ""
        elif ins.root == "FFMA" and len(srcs) == 3 and _is_one(srcs[2]):
            tag = "1+exp" if any(tags.get(_reg(a) or "") == "exp" for a in srcs[:2]) else ""
        if dest and ins.root not in _NO_DEST:
            if tag:
                tags[dest] = tag
            else:
                tags.pop(dest, None)
    return found


def facts(listing: Listing, mangled: str) -> SassFacts | None:
    """SassFacts of the kernel `mangled` and the functions it calls; None when the listing has no such
    function."""
    names = reachable(listing, mangled)
    if not names:
        return None
    tally = _Tally()
    base = listing.param_base.get(mangled) or PARAM_BASE.get(listing.arch or "", PARAM_BASE["sm_90"])
    found: list[Access] = []
    for name in names:
        tally.add(name, [i for i in listing.functions[name] if i.root != "NOP"])
        found += accesses(listing.functions[name], base, listing.labels.get(name))
    return SassFacts(
        tool=listing.tool,
        functions=names,
        instructions=tally.count,
        global_loads=tuple(MemoryOp(op, None if op.split(".")[0] in _BULK_LOADS else _width(op), n)
                           for op, n in sorted(tally.loads.items())),
        global_stores=tuple(MemoryOp(op, _width(op), n) for op, n in sorted(tally.stores.items())),
        local_loads=tally.local_loads,
        local_stores=tally.local_stores,
        division_routines=tuple(sorted(r for r, f in tally.called.items() if f in tally.dividing)),
        division_sequences=tuple(sorted(tally.sequences)),
        mufu=tuple(sorted(tally.mufu.items())),
        exp_reciprocals=tally.exp_rcp,
        float_constants=frozenset(tally.floats),
        double_constants=frozenset(tally.doubles),
        registers=listing.registers.get(mangled),
        stack_frame=listing.stack_frames.get(mangled),
        function_sizes=tuple(tally.sizes),
        arch=listing.arch,
        accesses=tuple(found),
        first_exit=next((n + 1 for n, i in enumerate(j for j in listing.functions[mangled] if j.root != "NOP")
                         if i.root == "EXIT"), None),
        fp64=tuple(sorted(tally.fp64.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))),
        listing=listing,
        mangled=mangled,
    )


@dataclass
class _Tally:
    """What `facts` counts over the functions it reads (SassFacts' fields, as counters and sets)."""

    loads: Counter[str] = field(default_factory=Counter)
    stores: Counter[str] = field(default_factory=Counter)
    mufu: Counter[str] = field(default_factory=Counter)
    local_loads: int = 0
    local_stores: int = 0
    exp_rcp: int = 0
    sequences: set[str] = field(default_factory=set)
    called: dict[str, str] = field(default_factory=dict)  # routine -> the function the CALL names
    dividing: set[str] = field(default_factory=set)  # functions with a division sequence in their body
    floats: set[int] = field(default_factory=set)
    doubles: set[int] = field(default_factory=set)
    count: int = 0
    sizes: list[tuple[str, int]] = field(default_factory=list)
    fp64: Counter[int | None] = field(default_factory=Counter)  # source line -> double-precision instructions

    def add(self, name: str, body: list[Instruction]) -> None:
        """Count function `name`'s instructions (NOPs left out)."""
        self.count += len(body)
        ends = [n for n, i in enumerate(body) if i.root in ("EXIT", "RET")]
        self.sizes.append((name, ends[-1] + 1 if ends else len(body)))
        for ins in body:
            self._instruction(ins)
        starts = division_starts(body)
        self.sequences |= starts
        if starts:
            self.dividing.add(name)
        f, d = _constants(body)
        self.floats |= f
        self.doubles |= d
        self.exp_rcp += _exp_reciprocals(body)

    def _instruction(self, ins: Instruction) -> None:
        root = ins.root
        if root in _GLOBAL_LOADS or root in _BULK_LOADS:
            self.loads[ins.opcode] += 1
        elif root in _GLOBAL_STORES:
            self.stores[ins.opcode] += 1
        elif root == "LDL":
            self.local_loads += 1
        elif root == "STL":
            self.local_stores += 1
        elif root == "MUFU":
            self.mufu[ins.opcode.split(".")[1] if "." in ins.opcode else ins.opcode] += 1
        elif root == "CALL":
            target = _CALL_TARGET.search(ins.operands)
            r = DIVISION_ROUTINE.fullmatch(target.group(1)) if target else None
            if r:
                self.called.setdefault(r.group(1), target.group(1))
        if root in FP64_ROOTS or (root in ("F2F", "MUFU") and "64" in ins.opcode):
            self.fp64[ins.line] += 1


def sass_facts(cubin: bytes, mangled: str, tool: Disassembler | None = None) -> SassFacts | None:
    """SassFacts of the kernel `mangled` in `cubin`, read with `tool` (default: find_disassembler()); None
    when there is no disassembler, it fails (DisassemblyError's cases) or the kernel is not in its listing.
    Never raises for those: the caller falls back to the PTX."""
    tool = tool or find_disassembler()
    if tool is None or not cubin:
        return None
    try:
        text = disassemble(cubin, tool)
    except DisassemblyError:
        return None
    return facts(parse(text, tool.tool), mangled)


class Reading:
    """sass_facts(cubin, mangled) run in a thread from the moment the cubin exists: grader.pipeline.grade starts one
    right after compiling, so the disassembler's start-up (about 0.4 s, module docstring) overlaps the GPU's
    work instead of following it; `facts()` waits for it and returns what sass_facts returned (None on any
    failure: the hints then read the PTX)."""

    def __init__(self, cubin: bytes, mangled: str, tool: Disassembler | None = None) -> None:
        self._facts: SassFacts | None = None
        self._thread = threading.Thread(target=self._read, args=(cubin, mangled, tool), name="sass", daemon=True)
        self._thread.start()

    def _read(self, cubin: bytes, mangled: str, tool: Disassembler | None) -> None:
        try:
            self._facts = sass_facts(cubin, mangled, tool)
        except Exception:  # noqa: BLE001 - advice only: a failure means the PTX's hints
            self._facts = None

    def facts(self) -> SassFacts | None:
        """The kernel's SassFacts, once the disassembler has finished (it stops itself after TIMEOUT_S)."""
        self._thread.join()
        return self._facts
