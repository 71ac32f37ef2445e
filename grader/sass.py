"""Facts from the machine code (SASS): what the card runs, read from the NVRTC cubin by a CUDA disassembler.

PTX is NVVM's output before ptxas, so hints read from it guess what the card will run; the SASS in the cubin
is what it runs. Reading it needs a disassembler, which the grader does not ship: `nvdisasm` (preferred:
it names the functions a kernel calls) or `cuobjdump`, found (find_disassembler) in the running Python
environment's NVIDIA wheels (`pip install ".[sass]"`: nvidia-cuda-nvdisasm and nvidia-cuda-cuobjdump 13.x put
them in `nvidia/cu13/bin/`, checked; for CUDA 12 wheels `nvidia/cu12/bin/`, `nvidia/cuda_nvdisasm/bin/`,
`nvidia/cuda_cuobjdump/bin/` and `nvidia/cuda_nvcc/bin/` are searched too, not checked here: the package index
at hand has only 13.x builds), then on PATH, then under CUDA_PATH / CUDA_HOME, then in /usr/local/cuda*/bin
(`cuda` first, then newest version first). Without one, `sass_facts` returns None and grader.hints reads the
PTX. A disassembler of CUDA 13 reads sm_75 and newer only: for an older GPU (the cu12 extra) it fails, and the
PTX is read.

Running it (disassemble): the cubin is written to a private temporary folder (mode 0700), the tool runs
there without a shell, with a clean environment (LC_ALL=C only), stdin closed, stderr dropped, for at most
TIMEOUT_S; its output is the submission's code rendered as text, so it is capped at MAX_OUTPUT_BYTES (then
nothing is read from it) and only parsed, never shown: hints quote opcodes and the names of CUDA's own
division routines, never other text of the listing. No GPU is needed: the tools read the ELF file only.

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

Cost: the disassembler's start-up dominates (about 0.4 s of CPU even for a 30-instruction kernel), so a
submission's size hardly matters. Measured with `python benchmarks/sass_cost.py --reps 3` on the 2-core CPU
machine (load average about 2 from other work), per submission (write the cubin, run the tool, parse), over
the 5 examples and 18 kernels of tests/data/hints/: nvdisasm 13.5.37 median 0.52 s, largest 1.2 s;
cuobjdump 13.5.37 median 0.67 to 0.72 s, largest 1.4 s. On an idle machine nvdisasm took 0.37 to 0.5 s.
So the machine-code hints add about half a second to a grading, within the 1 s goal; cuobjdump is used only
where no nvdisasm is found. (One first run of a freshly unpacked nvdisasm took 20 s here, once; TIMEOUT_S
caps such a run, and that submission then gets the PTX hints.)
"""

from __future__ import annotations

import functools
import glob
import importlib.util
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from grader.procs import kill_group

TOOLS = ("nvdisasm", "cuobjdump")
"""Disassemblers, in order of preference at each place searched."""

WHEEL_BIN_DIRS = (
    ("nvidia", "cu13", "bin"),           # CUDA 13 wheels: nvidia-cuda-nvdisasm / nvidia-cuda-cuobjdump 13.x
    ("nvidia", "cu12", "bin"),
    ("nvidia", "cuda_nvdisasm", "bin"),   # CUDA 12 wheels (nvidia-cuda-nvdisasm-cu12 and 12.x releases)
    ("nvidia", "cuda_cuobjdump", "bin"),
    ("nvidia", "cuda_nvcc", "bin"),
)
"""Folders under a site-packages' `nvidia` namespace where NVIDIA's wheels put their executables."""

TIMEOUT_S = 10.0
"""Wall-clock limit for one disassembly (a normal one takes about 0.4 s)."""

MAX_CUBIN_BYTES = 16 * 2**20
"""A larger cubin is not disassembled (the PTX hints are given instead)."""

MAX_OUTPUT_BYTES = 32 * 2**20
"""Cap on the disassembler's output read: about 200,000 instructions of nvdisasm's listing."""

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


class DisassemblyError(Exception):
    """The disassembler could not be run, failed, timed out or printed too much; the message says which."""


@dataclass(frozen=True)
class Disassembler:
    """A disassembler found on this machine: `tool` is 'nvdisasm' or 'cuobjdump', `path` its executable."""

    tool: str
    path: str


@dataclass(frozen=True)
class Instruction:
    """One SASS instruction: its opcode with modifiers ('LDG.E.128.CONSTANT'), its operands' text, and its
    guard predicate ('@P0', '@!P1' or '')."""

    opcode: str
    operands: str
    predicate: str = ""

    @property
    def root(self) -> str:
        return self.opcode.split(".", 1)[0]

    def args(self) -> list[str]:
        return [a.strip() for a in self.operands.split(",")] if self.operands.strip() else []


@dataclass(frozen=True)
class Listing:
    """A parsed disassembly: instructions per function, callees per function (nvdisasm; cuobjdump names
    none), and registers / stack frame in bytes per function where the listing states them."""

    tool: str
    functions: dict[str, tuple[Instruction, ...]]
    callees: dict[str, tuple[str, ...]]
    registers: dict[str, int]
    stack_frames: dict[str, int]
    arch: str | None = None


@dataclass(frozen=True)
class MemoryOp:
    """Instructions with one opcode that move global memory: the opcode, bytes per thread (None for bulk
    copies) and how many such instructions the code has (static count, not executions)."""

    opcode: str
    nbytes: int | None
    count: int


@dataclass(frozen=True)
class SassFacts:
    """What grader.hints reads from one kernel's SASS (the kernel and the functions it calls).

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


# --- finding a disassembler ------------------------------------------------------------------------

def _exe_names(tool: str) -> tuple[str, ...]:
    return (tool + ".exe", tool) if os.name == "nt" else (tool,)


def _executable(path: Path) -> bool:
    return path.is_file() and (os.name == "nt" or os.access(path, os.X_OK))


def wheel_bin_dirs() -> list[Path]:
    """The folders where NVIDIA's wheels installed in this Python environment put executables."""
    roots: list[str] = []
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        roots += list(spec.submodule_search_locations)
    for entry in sys.path:  # a namespace package is found on sys.path; also check each entry directly
        if entry and os.path.isdir(os.path.join(entry, "nvidia")):
            roots.append(os.path.join(entry, "nvidia"))
    out: list[Path] = []
    for root in dict.fromkeys(roots):
        for parts in WHEEL_BIN_DIRS:
            d = Path(root, *parts[1:])
            for sub in ((d, d / "x86_64", d / "x64") if os.name == "nt" else (d,)):
                if sub.is_dir() and sub not in out:
                    out.append(sub)
    return out


def _toolkit_bin_dirs() -> list[Path]:
    out = []
    for var in ("CUDA_PATH", "CUDA_HOME"):
        if os.environ.get(var):
            out.append(Path(os.environ[var]) / "bin")
    if os.name != "nt":
        def version(p: str) -> tuple[int, ...]:
            return tuple(int(n) for n in re.findall(r"\d+", Path(p).name)) or (1 << 30,)
        out += [Path(p) / "bin" for p in sorted(glob.glob("/usr/local/cuda*"), key=version, reverse=True)]
    return out


def search_places() -> list[tuple[str, list[Path] | None]]:
    """Where find_disassembler looks, in order: (what, folders); folders None means PATH."""
    return [("wheels", wheel_bin_dirs()), ("PATH", None), ("CUDA toolkit", _toolkit_bin_dirs())]


def _find_in(tool: str, dirs: list[Path] | None) -> Disassembler | None:
    if dirs is None:
        found = shutil.which(tool)
        return Disassembler(tool, found) if found else None
    for d in dirs:
        for name in _exe_names(tool):
            if _executable(d / name):
                return Disassembler(tool, str(d / name))
    return None


def find_tool(tool: str) -> Disassembler | None:
    """`tool` ('nvdisasm' or 'cuobjdump') at the first place of search_places() that has it, or None."""
    for _, dirs in search_places():
        found = _find_in(tool, dirs)
        if found:
            return found
    return None


@functools.cache
def find_disassembler() -> Disassembler | None:
    """The disassembler to use, or None when there is none: at each place of search_places() in turn,
    nvdisasm first, then cuobjdump. Cached for the process (find_disassembler.cache_clear() forgets it)."""
    for _, dirs in search_places():
        for tool in TOOLS:
            found = _find_in(tool, dirs)
            if found:
                return found
    return None


# --- running it ------------------------------------------------------------------------------------

def _clean_env() -> dict[str, str]:
    env = {"LC_ALL": "C"}
    if os.name == "nt":  # Windows programs need these to start
        for key in ("SYSTEMROOT", "SystemRoot", "WINDIR"):
            if key in os.environ:
                env[key] = os.environ[key]
    return env


def command(tool: Disassembler, cubin_path: str) -> list[str]:
    """The command line: nvdisasm without its data-flow pass (-ndf: faster, and it names branch targets,
    which nothing here reads), cuobjdump with the SASS and the resource usage (registers, stack)."""
    if tool.tool == "nvdisasm":
        return [tool.path, "-ndf", cubin_path]
    return [tool.path, "-sass", "-res-usage", cubin_path]


def _kill(proc: subprocess.Popen) -> None:
    """Kill the tool and anything it started (it leads its own process group on POSIX). Only while it has
    not been reaped: until then its id, the group's id, cannot name another process."""
    if proc.poll() is not None:
        return
    if os.name == "nt":
        try:
            proc.kill()
        except OSError:  # it ended meanwhile
            pass
    else:
        kill_group(proc.pid)


def disassemble(cubin: bytes, tool: Disassembler, *, timeout_s: float | None = None,
                max_bytes: int | None = None) -> str:
    """The listing `tool` prints for `cubin`. Raises DisassemblyError when the cubin is over MAX_CUBIN_BYTES,
    the tool cannot start, exits non-zero, runs past `timeout_s` (default TIMEOUT_S) or prints more than
    `max_bytes` (default MAX_OUTPUT_BYTES). The tool runs in a session of its own (POSIX), so that a kill
    reaches whatever it started."""
    timeout_s = TIMEOUT_S if timeout_s is None else timeout_s
    max_bytes = MAX_OUTPUT_BYTES if max_bytes is None else max_bytes
    if len(cubin) > MAX_CUBIN_BYTES:
        raise DisassemblyError(f"the cubin is {len(cubin)} bytes (over {MAX_CUBIN_BYTES})")
    with tempfile.TemporaryDirectory(prefix="grader-sass-") as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(cubin)
        try:
            proc = subprocess.Popen(command(tool, path), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, env=_clean_env(), cwd=tmp, close_fds=True,
                                    start_new_session=os.name != "nt")
        except OSError as err:
            raise DisassemblyError(f"{tool.tool} could not be started: {err}") from None
        chunks: list[bytes] = []
        over = threading.Event()

        def pump() -> None:
            total = 0
            while True:
                chunk = proc.stdout.read1(1 << 16)
                if not chunk:
                    return
                total += len(chunk)
                if total > max_bytes:
                    over.set()
                    _kill(proc)
                    continue  # drain until the pipe closes
                chunks.append(chunk)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill(proc)
            proc.wait()
            reader.join(5)
            raise DisassemblyError(f"{tool.tool} ran for more than {timeout_s:g} s") from None
        reader.join(min(timeout_s, 5.0))  # what is left in the pipe once the tool has exited is read at once
        if reader.is_alive():  # something the tool started still holds its output open: kill it, not waited for
            kill_group(proc.pid)
            raise DisassemblyError(f"{tool.tool}'s output did not end when it exited")
        proc.stdout.close()
        if over.is_set():
            raise DisassemblyError(f"{tool.tool} printed more than {max_bytes} bytes")
        if rc != 0:
            raise DisassemblyError(f"{tool.tool} exited with status {rc}")
    return b"".join(chunks).decode("utf-8", "replace")


# --- parsing ---------------------------------------------------------------------------------------

def parse_nvdisasm(text: str) -> Listing:
    """Functions (by their labels in .text sections, declared `.type NAME,@function`), their CALL targets,
    and EIATTR_REGCOUNT / EIATTR_FRAME_SIZE from .nv.info."""
    functions: dict[str, list[Instruction]] = {}
    declared: set[str] = set()
    registers: dict[str, int] = {}
    frames: dict[str, int] = {}
    section = ""
    current: str | None = None
    attr: str | None = None
    index: str | None = None
    arch = None
    for line in text.splitlines():
        if arch is None:
            t = _TARGET.match(line)
            if t:
                arch = t.group(1)
                continue
        m = _SECTION.match(line)
        if m:
            section, current, attr, index = m.group(1), None, None, None
            continue
        if section.startswith(".nv.info"):
            a = _NVINFO_ATTR.search(line)
            if a:
                attr, index = a.group(1), None
                continue
            if attr in ("EIATTR_REGCOUNT", "EIATTR_FRAME_SIZE"):
                i = _NVINFO_INDEX.search(line)
                if i:
                    index = i.group(1)
                    continue
                w = _NVINFO_WORD.search(line)
                if w and index:
                    (registers if attr == "EIATTR_REGCOUNT" else frames)[index] = int(w.group(1), 16)
                    attr = index = None
            continue
        if not section.startswith(".text"):
            continue
        t = _TYPE_FUNC.match(line)
        if t:
            declared.add(t.group(1))
            continue
        lab = _LABEL.match(line)
        if lab:
            if lab.group(1) in declared:
                current = lab.group(1)
                functions.setdefault(current, [])
            continue
        ins = _INSTR.match(line)
        if ins and current is not None:
            functions[current].append(Instruction(ins.group(3), ins.group(4).strip(), (ins.group(2) or "").strip()))
    callees = {}
    for name, body in functions.items():
        targets = []
        for i in body:
            if i.root == "CALL":
                c = _CALL_TARGET.search(i.operands)
                if c and c.group(1) not in targets:
                    targets.append(c.group(1))
        callees[name] = tuple(targets)
    return Listing("nvdisasm", {k: tuple(v) for k, v in functions.items()}, callees, registers, frames, arch)


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
            functions[current].append(Instruction(ins.group(3), ins.group(4).strip(), (ins.group(2) or "").strip()))
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
    pending: dict[str, str] = {}  # register -> the I2F...RP opcode whose result it holds
    found: set[str] = set()
    for ins in body:
        args = ins.args()
        dest = _reg(args[0]) if args else None
        if ins.opcode.startswith("MUFU.RCP") and not ins.opcode.startswith("MUFU.RCP64") and len(args) > 1:
            src = _reg(args[1])
            if src in pending:
                found.add(pending[src])
        if dest is None or ins.root in _NO_DEST:
            continue
        if ins.root == "I2F" and _DIVISION_SEQUENCE.match(ins.opcode):
            pending[dest] = ins.opcode
        else:
            pending.pop(dest, None)
    return found


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
    loads: Counter[str] = Counter()
    stores: Counter[str] = Counter()
    mufu: Counter[str] = Counter()
    local_loads = local_stores = exp_rcp = 0
    sequences: set[str] = set()
    called: dict[str, str] = {}  # routine -> the function the CALL names
    dividing: set[str] = set()  # functions with a division sequence in their body
    floats: set[int] = set()
    doubles: set[int] = set()
    count = 0
    sizes = []
    for name in names:
        body = [i for i in listing.functions[name] if i.root != "NOP"]
        count += len(body)
        ends = [n for n, i in enumerate(body) if i.root in ("EXIT", "RET")]
        sizes.append((name, ends[-1] + 1 if ends else len(body)))
        for ins in body:
            root = ins.root
            if root in _GLOBAL_LOADS or root in _BULK_LOADS:
                loads[ins.opcode] += 1
            elif root in _GLOBAL_STORES:
                stores[ins.opcode] += 1
            elif root == "LDL":
                local_loads += 1
            elif root == "STL":
                local_stores += 1
            elif root == "MUFU":
                mufu[ins.opcode.split(".")[1] if "." in ins.opcode else ins.opcode] += 1
            elif root == "CALL":
                target = _CALL_TARGET.search(ins.operands)
                r = DIVISION_ROUTINE.fullmatch(target.group(1)) if target else None
                if r:
                    called.setdefault(r.group(1), target.group(1))
        starts = division_starts(body)
        sequences |= starts
        if starts:
            dividing.add(name)
        f, d = _constants(body)
        floats |= f
        doubles |= d
        exp_rcp += _exp_reciprocals(body)
    return SassFacts(
        tool=listing.tool,
        functions=names,
        instructions=count,
        global_loads=tuple(MemoryOp(op, None if op.split(".")[0] in _BULK_LOADS else _width(op), n)
                           for op, n in sorted(loads.items())),
        global_stores=tuple(MemoryOp(op, _width(op), n) for op, n in sorted(stores.items())),
        local_loads=local_loads,
        local_stores=local_stores,
        division_routines=tuple(sorted(r for r, f in called.items() if f in dividing)),
        division_sequences=tuple(sorted(sequences)),
        mufu=tuple(sorted(mufu.items())),
        exp_reciprocals=exp_rcp,
        float_constants=frozenset(floats),
        double_constants=frozenset(doubles),
        registers=listing.registers.get(mangled),
        stack_frame=listing.stack_frames.get(mangled),
        function_sizes=tuple(sizes),
        arch=listing.arch,
    )


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
    """sass_facts(cubin, mangled) run in a thread from the moment the cubin exists: grader.grade starts one
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
