"""nvcc as the oracle of extraction: does the kernel the grader hands NVRTC build to the machine code nvcc
builds for `biasGeluFused` from the whole program?

    python benchmarks/nvcc_oracle.py FILE.cu ...        one verdict a file (exit 1 when one disagrees)
    python benchmarks/nvcc_oracle.py --install-nvrtc    put the NVRTC of nvcc's version in .oracle-nvrtc/

For a whole program (grader.source.program), two builds of the same toolkit release and arch:
- nvcc's: the file as written, `nvcc -cubin -arch=sm_90 -std=c++17` (the host preprocessor, g++, reads the
  real headers and every directive; the device code is what nvcc would build into the program);
- the grader's: grader.source.read.prepare's text (the prelude and the extracted kernel, exactly what the grader
  compiles) through NVRTC with grader.compile.nvrtc's options (NVRTC_OPTIONS), by NVRTC of nvcc's own version.
  NVRTC 13.5 from the package index and nvcc 13.0 schedule the same kernel differently, so the pip NVRTC
  cannot be the grader's side here: the NVRTC whose version is nvcc's is found (find_toolchain) in nvcc's
  toolkit (lib64/, lib/; the nvidia-cuda-nvcc wheel's lib/ when nvidia-cuda-nvrtc of the same version is
  installed beside it), else in .oracle-nvrtc/VERSION/ (`--install-nvrtc`: pip installs the
  nvidia-cuda-nvrtc wheel of nvcc's exact version there, --no-deps, --target), else at $GRADER_ORACLE_NVRTC
  (a libnvrtc.so path). It is run in a process of its own (benchmarks/nvrtc_pinned.py).

Both cubins are disassembled with cuobjdump and `biasGeluFused`'s SASS compared, with its resources and the
data it reads (kernel_code). What is normalized, and why (the two modules legitimately differ in what else
they hold, never in this kernel's code):
- instruction addresses are kept (they are offsets in the function, the same for the same code); the
  `.headerflags` and `Function :` lines are dropped (module-wide flags);
- an operand `c[0xB][0xOFF]` of a module-wide constant bank (B other than 0, the kernel's parameters):
  the whole program lays out `__constant__` variables (bank 3) and the address table of globals and of
  `vprintf` (bank 4) with its other kernels' data too, so the offset is replaced by what it addresses: the
  symbol and the offset in it (`[RZ]`, cuobjdump's spelling of offset 0, too), from the cubin's symbol table,
  or through the bank's relocation to the
  symbol whose address is stored there (`c[0x4][@gAcc+0]`); an offset loaded into a register first
  (`MOV R0, 0x18` before `LDC.64 R2, c[0x4][R0]`, as a printf call loads vprintf's address) is replaced in
  that MOV the same way; the symbol's size and initial bytes are part
  of the name, so a constant with another value differs. A string's symbol (`$str`, `$str$3`: numbered in
  module order) is named `$str`; its bytes still count. Offsets that no symbol covers keep the bytes there;
- an instruction's 128-bit encoding is kept whole when its text needed no such replacement, else only its
  scheduling bits (the encoding's top 23 bits: stall, yield, barriers, reuse), since the rest encodes the
  replaced offset;
- the kernel's attributes (`.nv.info.KERNEL` and the module `.nv.info` entries that name it: registers,
  stack, exit offsets, parameter layout, launch bounds) with symbol indices `(0x1c)` removed (indices count
  the module's symbols), and the sizes of the kernel's own sections (shared memory, parameter bank).

Verdicts (Outcome.verdict): same, different (a disagreement), refused (the grader refuses the file: allowed,
its message says why), nvrtc-rejects (nvcc builds it, NVRTC does not compile what the grader extracted: a
disagreement), nvcc-rejects (nvcc does not build the file; the grader's verdict is not judged), not-a-program
(a file of device code only, nothing extracted: not compared).
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.core.errors import SubmissionError  # noqa: E402
from grader.exercises import bias_gelu as exercise  # noqa: E402
from grader.feedback.sass import find_tool  # noqa: E402
from grader.source.read import prepare, safe_source_name  # noqa: E402

ARCH = "sm_90"
STD = "c++17"
NVRTC_OPTIONS = (f"-arch={ARCH}", "--ptxas-options=-v", "--no-source-include", f"--std={STD}")
"""grader.compile.nvrtc's options as cuda.core passes them to NVRTC (tests/test_nvcc_oracle.py checks they agree)."""
SIDE_FOLDER = ROOT / ".oracle-nvrtc"
ENV_NVRTC = "GRADER_ORACLE_NVRTC"
CHILD = Path(__file__).with_name("nvrtc_pinned.py")
TIMEOUT_S = 300
DISAGREEMENTS = frozenset({"different", "nvrtc-rejects"})


class Unavailable(Exception):
    """No nvcc, or no NVRTC of its version, or no cuobjdump: the message says which and what to install."""


@dataclass(frozen=True)
class Toolchain:
    """nvcc (its path, its full version "13.0.88"), the libnvrtc of the same release, and cuobjdump."""

    nvcc: str
    version: str
    nvrtc: str
    cuobjdump: str

    @property
    def release(self) -> str:
        return ".".join(self.version.split(".")[:2])


@dataclass(frozen=True)
class Outcome:
    """One file's verdict (see the module's docstring) and what explains it: a diff of the two listings
    (different), a compiler's log (nvrtc-rejects, nvcc-rejects) or the grader's message (refused)."""

    verdict: str
    detail: str = ""

    @property
    def disagrees(self) -> bool:
        return self.verdict in DISAGREEMENTS


def nvcc_version(nvcc: str) -> str:
    """nvcc's full version ("13.0.88", from `nvcc --version`'s "V13.0.88"); raises Unavailable."""
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"\bV(\d+\.\d+\.\d+)", out)
    if not m:
        raise Unavailable(f"{nvcc} --version names no version")
    return m.group(1)


def nvcc_root(nvcc: str) -> Path:
    """nvcc's toolkit folder (nvcc on PATH may be a wrapper script: `nvcc -dryrun` says where it runs)."""
    out = subprocess.run([nvcc, "-dryrun", "-cubin", "x.cu"], capture_output=True, text=True, timeout=60)
    m = re.search(r"^#\$ TOP=(.+)$", out.stdout + out.stderr, re.M)
    return Path(m.group(1)).resolve() if m else Path(nvcc).resolve().parent.parent


def _full_version(library: Path) -> str | None:
    """The full version of a libnvrtc file when it can be told: the wheel's dist-info beside it, or a
    versioned file name (libnvrtc.so.13.0.88)."""
    for parent in library.parents:
        for info in parent.glob("nvidia_cuda_nvrtc-*.dist-info"):
            return info.name.removesuffix(".dist-info").split("-")[1]
        if parent.name == "site-packages":
            break
    m = re.search(r"\.so\.(\d+\.\d+\.\d+)$", str(library.resolve()))
    return m.group(1) if m else None


def _nvrtc_candidates(root: Path, version: str) -> list[Path]:
    places = [root / "lib64", root / "lib", root / "targets" / "x86_64-linux" / "lib",
              SIDE_FOLDER / version / "nvidia" / "cu13" / "lib",
              SIDE_FOLDER / version / "nvidia" / "cuda_nvrtc" / "lib"]
    found = [p for d in places for p in sorted(d.glob("libnvrtc.so*")) if ".alt." not in p.name
             and "builtins" not in p.name]
    if os.environ.get(ENV_NVRTC):
        found.append(Path(os.environ[ENV_NVRTC]))
    return found


def find_toolchain() -> Toolchain:
    """nvcc on PATH, the NVRTC of its version (see the module's docstring) and cuobjdump (grader.feedback.sass's
    search); raises Unavailable saying what is missing and how to get it."""
    nvcc = shutil.which("nvcc")
    if not nvcc:
        raise Unavailable("no nvcc on PATH (the CUDA toolkit, or the nvidia-cuda-nvcc wheel with its bin/ on PATH)")
    version = nvcc_version(nvcc)
    release = ".".join(version.split(".")[:2])
    tried = []
    for lib in _nvrtc_candidates(nvcc_root(nvcc), version):
        full = _full_version(lib)
        if full not in (None, version):
            tried.append(f"{lib} ({full})")
            continue
        got = subprocess.run([sys.executable, str(CHILD), "--version", str(lib)], capture_output=True, text=True,
                             timeout=60)
        if got.returncode == 0 and got.stdout.strip() == release:
            tool = find_tool("cuobjdump")
            if tool is None:
                raise Unavailable("no cuobjdump (pip install -e '.[sass]', or the CUDA toolkit's)")
            return Toolchain(nvcc, version, str(lib), tool.path)
        tried.append(f"{lib} ({got.stdout.strip() or got.stderr.strip()[-200:]})")
    raise Unavailable(
        f"no NVRTC of nvcc's version {version} (tried: {', '.join(tried) or 'none found'}); run "
        f"`python benchmarks/nvcc_oracle.py --install-nvrtc` (pip installs nvidia-cuda-nvrtc=={version} into "
        f"{SIDE_FOLDER.name}/{version}/), or set {ENV_NVRTC} to such a libnvrtc.so")


def install_nvrtc() -> int:
    """pip-install the nvidia-cuda-nvrtc wheel of nvcc's exact version into .oracle-nvrtc/VERSION (no
    dependencies); pip's exit status (2 when there is no nvcc)."""
    nvcc = shutil.which("nvcc")
    if not nvcc:
        print("no nvcc on PATH: nothing to match", file=sys.stderr)
        return 2
    version = nvcc_version(nvcc)
    target = SIDE_FOLDER / version
    if list(target.glob("nvidia/*/lib/libnvrtc.so*")):
        return 0
    return subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                           f"nvidia-cuda-nvrtc=={version}"]).returncode


class BuildFailed(Exception):
    """A compiler refused the text; the message is its log."""


def nvcc_cubin(tool: Toolchain, text: str, name: str) -> bytes:
    """nvcc's cubin of the whole program `text`, written as `name` in a fresh folder (so `__FILE__` is the
    name the grader gives NVRTC). Raises BuildFailed with nvcc's log."""
    with tempfile.TemporaryDirectory(prefix="oracle-") as tmp:
        src = Path(tmp, name)
        src.write_bytes(text.encode("utf-8"))
        cmd = [tool.nvcc, "-cubin", f"-arch={ARCH}", f"-std={STD}", "-o", "out.cubin", name]
        got = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=TIMEOUT_S)
        if got.returncode != 0:
            raise BuildFailed((got.stdout + got.stderr).strip())
        return Path(tmp, "out.cubin").read_bytes()


def nvrtc_cubin(tool: Toolchain, text: str, name: str, kernel: str = exercise.KERNEL_NAME) -> bytes:
    """The pinned NVRTC's cubin of `text` (the grader's compile text) under NVRTC_OPTIONS, with `kernel` as a
    name expression, as grader.compile.nvrtc compiles it. Raises BuildFailed with NVRTC's log."""
    job = json.dumps({"source": text, "name": name, "options": list(NVRTC_OPTIONS), "kernel": kernel})
    got = subprocess.run([sys.executable, str(CHILD), "--compile", tool.nvrtc], input=job.encode(),
                         capture_output=True, timeout=TIMEOUT_S)
    if got.returncode != 0:
        raise BuildFailed(got.stderr.decode("utf-8", "replace").strip())
    return got.stdout


# --- the cubin: sections, symbols, relocations (ELF64, little-endian) --------------------------------------

@dataclass(frozen=True)
class Section:
    index: int
    name: str
    kind: int  # sh_type: 8 is NOBITS (no bytes in the file)
    flags: int
    size: int
    align: int
    data: bytes


@dataclass(frozen=True)
class Symbol:
    name: str
    kind: int  # STT_*: 1 object, 2 function, 3 section
    section: int
    value: int
    size: int


class Cubin:
    """The parts of a cubin the comparison reads: sections by name, the symbol table, relocations."""

    def __init__(self, data: bytes) -> None:
        if data[:4] != b"\x7fELF" or data[4] != 2:
            raise ValueError("not a 64-bit ELF file")
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + k * shentsize) for k in range(shnum)]
        names = raw[shstrndx]
        self.sections: list[Section] = []
        self.links: list[tuple[int, int]] = []
        for k, (name, kind, flags, _, off, size, link, info, align, _) in enumerate(raw):
            label = _cstring(data, names[4] + name)
            body = b"" if kind == 8 else data[off:off + size]
            self.sections.append(Section(k, label, kind, flags, size, align, body))
            self.links.append((link, info))
        self.by_name = {s.name: s for s in self.sections}
        self.symbols: list[Symbol] = []
        symtab = self.by_name.get(".symtab")
        if symtab is not None:
            strtab = raw[self.links[symtab.index][0]][4]
            for k in range(0, len(symtab.data), 24):
                name, info, _, shndx, value, size = struct.unpack_from("<IBBHQQ", symtab.data, k)
                self.symbols.append(Symbol(_cstring(data, strtab + name), info & 0xF, shndx, value, size))

    def relocation(self, section: Section, offset: int) -> tuple[Symbol, int] | None:
        """The relocation that writes at `offset` of `section`: (its symbol, its addend), or None."""
        rela = self.by_name.get(".rela" + section.name)
        if rela is None:
            return None
        for k in range(0, len(rela.data), 24):
            where, info, addend = struct.unpack_from("<QQq", rela.data, k)
            if where == offset:
                return self.symbols[info >> 32], addend
        return None

    def covering(self, section: int, offset: int) -> Symbol | None:
        """The data symbol of section `section` whose bytes hold `offset`."""
        for sym in self.symbols:
            if sym.section == section and sym.kind in (0, 1) and sym.value <= offset < sym.value + max(sym.size, 1):
                return sym
        return None

    def describe(self, sym: Symbol, delta: int) -> str:
        """`sym`+`delta` named as both modules name it: a section symbol becomes the object it points into,
        a string `$str$N` becomes `$str`, and the object's size and initial bytes are part of the name."""
        if sym.kind == 3:
            inner = self.covering(sym.section, sym.value + delta)
            if inner is None:
                return f"{self.sections[sym.section].name}+{delta:#x}"
            sym, delta = inner, sym.value + delta - inner.value
        name = "$str" if sym.name.startswith("$str") else sym.name
        if not 0 < sym.section < len(self.sections):
            return f"{name}+{delta:#x}"
        section = self.sections[sym.section]
        data = section.data[sym.value:sym.value + sym.size] if section.kind != 8 else b""
        digest = data.hex() if len(data) <= 16 else hashlib.sha256(data).hexdigest()[:16]
        return f"{name}+{delta:#x}<{sym.size}:{digest}>"


def _cstring(data: bytes, at: int) -> str:
    return data[at:data.index(b"\0", at)].decode("utf-8", "replace")


def kernel_symbol(cubin: Cubin, kernel: str) -> str | None:
    """The kernel's symbol name: `kernel` itself (extern "C") or its C++ mangling `_Z<len><kernel>...`."""
    for sym in cubin.symbols:
        if sym.kind == 2 and (sym.name == kernel or sym.name.startswith(f"_Z{len(kernel)}{kernel}")):
            return sym.name
    return None


# --- the kernel's code, normalized ----------------------------------------------------------------------

_INSTR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*/\*\s*0x([0-9a-f]{16})\s*\*/\s*$")
_SECOND = re.compile(r"^\s*/\*\s*0x([0-9a-f]{16})\s*\*/\s*$")
_BANK = re.compile(r"c\[0x([0-9a-f]+)\]\[(0x[0-9a-f]+|RZ)\]")
_BANK_REGISTER = re.compile(r"c\[0x([0-9a-f]+)\]\[(R\d+)\]")
_MOV_IMMEDIATE = re.compile(r"^(?:@!?P\w+\s+)?(?:MOV|IMAD\.MOV\.U32) (R\d+), (?:RZ, RZ, )?(0x[0-9a-f]+)\b")
_SYMBOL_INDEX = re.compile(r"\(0x[0-9a-f]+\)")
_ENTRY_MARK = re.compile(r"^\s*<0x[0-9a-f]+>\s*$")


def _cuobjdump(tool: Toolchain, cubin: bytes, flag: str) -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        got = subprocess.run([tool.cuobjdump, flag, f.name], capture_output=True, text=True, timeout=TIMEOUT_S)
    if got.returncode != 0:
        raise BuildFailed(f"cuobjdump {flag}: {got.stderr.strip()}")
    return got.stdout


def _function_block(sass: str, symbol: str) -> list[str]:
    """The lines of `Function : symbol`'s listing in cuobjdump -sass's output."""
    lines, out, inside = sass.splitlines(), [], False
    for line in lines:
        if line.strip().startswith("Function :"):
            inside = line.split(":", 1)[1].strip() == symbol
        elif inside:
            out.append(line)
    return out


def _width(text: str) -> int:
    op = text.split()[0] if text.split() else ""
    return 16 if ".128" in op else 8 if ".64" in op else 4


def _bank_name(cubin: Cubin, kernel: str, number: int, offset: int, width: int) -> str | None:
    """What offset `offset` of constant bank `number` holds, as both modules name it (see the module's
    docstring); None for bank 0 (the kernel's parameters) or a bank the cubin has no section for."""
    if number == 0:
        return None
    section = cubin.by_name.get(f".nv.constant{number}.{kernel}") or cubin.by_name.get(f".nv.constant{number}")
    if section is None:
        return None
    rel = cubin.relocation(section, offset)
    if rel is not None:
        return "@" + cubin.describe(*rel)
    sym = cubin.covering(section.index, offset)
    if sym is not None:
        return cubin.describe(sym, offset - sym.value)
    return "=" + section.data[offset:offset + width].hex()


def _parse(block: list[str]) -> list[list[str]]:
    """[address, text, encoding's low word, high word] of each instruction of a cuobjdump -sass listing."""
    out, pending = [], None
    for line in block:
        m = _INSTR.match(line)
        second = None if m else _SECOND.match(line)
        if m:
            pending = m
        elif second and pending is not None:
            out.append([*pending.groups(), second.group(1)])
            pending = None
    return out


def _instructions(cubin: Cubin, kernel: str, block: list[str]) -> list[str]:
    """Each instruction of the kernel as 'ADDR TEXT | ENCODING' with module-wide bank offsets replaced: in an
    operand `c[B][0xOFF]`, and in the `MOV Rn, 0xOFF` that sets the register of a later `c[B][Rn]` (how a
    printf call loads vprintf's address), the offset becomes what it addresses."""
    rows = _parse(block)
    changed = [False] * len(rows)
    for k, row in enumerate(rows):
        width = _width(row[1])

        def direct(m: re.Match, width: int = width) -> str:
            offset = 0 if m.group(2) == "RZ" else int(m.group(2), 16)
            name = _bank_name(cubin, kernel, int(m.group(1), 16), offset, width)
            return m.group(0) if name is None else f"c[{m.group(1)}][{name}]"

        new = _BANK.sub(direct, row[1])
        changed[k], row[1] = new != row[1], new
        for m in _BANK_REGISTER.finditer(row[1]):
            setter = next((j for j in range(k - 1, -1, -1) if _writes(rows[j][1], m.group(2))), None)
            mov = _MOV_IMMEDIATE.match(rows[setter][1]) if setter is not None else None
            name = mov and _bank_name(cubin, kernel, int(m.group(1), 16), int(mov.group(2), 16), width)
            if name:
                rows[setter][1] = f"{rows[setter][1][:mov.start(2)]}[{name}]{rows[setter][1][mov.end(2):]}"
                changed[setter] = True
    return [f"{a} {text} | " + (f"sched:{int(high, 16) >> 41:06x}" if changed[k] else f"{low}{high}")
            for k, (a, text, low, high) in enumerate(rows)]


def _writes(text: str, register: str) -> bool:
    """Whether the instruction `text` writes `register` (its first operand, for the instructions that have a
    destination; a guess that errs towards yes, so a lookback stops early rather than late)."""
    words = text.replace(",", " ").split()
    while words and words[0].startswith("@"):
        words = words[1:]
    return len(words) > 1 and not words[0].startswith(("ST", "BRA", "EXIT", "RET", "CALL")) and words[1] == register


def _blocks(elf_text: str) -> dict[str, list[str]]:
    """cuobjdump -elf's output cut at its section headers (a line at column 0 that starts with `.`)."""
    blocks: dict[str, list[str]] = {}
    current: list[str] = []
    for line in elf_text.splitlines():
        if line.startswith("."):
            current = blocks.setdefault(line.removeprefix(".section ").split()[0], [])
        else:
            current.append(line)
    return blocks


def _entries(lines: list[str]) -> list[str]:
    """The attributes of one .nv.info block, each as one line, symbol indices removed."""
    entries, current = [], []
    for line in lines + ["\t<0x0>"]:
        if _ENTRY_MARK.match(line):
            if current:
                text = _SYMBOL_INDEX.sub("", " ".join(current))
                if "EIATTR_PARAM_CBANK" in text:  # its first value is the parameter bank's symbol index
                    text = re.sub(r"(Value:\s*)0x[0-9a-f]+\s", r"\1", text)
                entries.append(text)
            current = []
        elif line.strip():
            current.append(" ".join(line.split()))
    return entries


def unordered_externs(entry: str) -> str:
    """An attribute entry with the names of EIATTR_EXTERNS sorted: the list follows the module's symbol table,
    whose order a whole program changes without changing the kernel (the program fuzzer's third finding, a false
    difference: `externs: vprintf __assertfail` against `externs: __assertfail vprintf`, same instructions)."""
    head, sep, names = entry.partition("externs: ")
    return head + sep + " ".join(sorted(names.split())) if sep and "EIATTR_EXTERNS" in head else entry


def _attributes(cubin: Cubin, elf_text: str, symbol: str) -> list[str]:
    """The kernel's attributes (EIATTR_EXTERNS' names sorted: unordered_externs) and its own sections' sizes,
    each as a line."""
    blocks = _blocks(elf_text)
    out = [f"attr {unordered_externs(e)}" for e in _entries(blocks.get(f".nv.info.{symbol}", []))]
    out += [f"attr {e}" for e in _entries(blocks.get(".nv.info", []))
            if f"function: {symbol}" in e or f"${symbol}$" in e]
    out += [f"section {s.name} type={s.kind} flags={s.flags:#x} size={s.size:#x} align={s.align}"
            for s in cubin.sections if s.name.endswith("." + symbol)]
    return out


def kernel_code(tool: Toolchain, cubin_bytes: bytes, kernel: str = exercise.KERNEL_NAME) -> list[str]:
    """The kernel's normalized listing (see the module's docstring): its attributes and sections, then its
    instructions. Raises BuildFailed when the cubin has no such kernel."""
    cubin = Cubin(cubin_bytes)
    symbol = kernel_symbol(cubin, kernel)
    if symbol is None:
        raise BuildFailed(f"no kernel {kernel} in the cubin")
    block = _function_block(_cuobjdump(tool, cubin_bytes, "-sass"), symbol)
    return [f"kernel {symbol}", *_attributes(cubin, _cuobjdump(tool, cubin_bytes, "-elf"), symbol),
            *_instructions(cubin, symbol, block)]


def judge(tool: Toolchain, text: str, name: str, kernel: str = exercise.KERNEL_NAME) -> Outcome:
    """Build `text` (a submission as written) both ways and compare the kernel (see the module's docstring)."""
    name = safe_source_name(name)
    try:
        compile_text, extracted = prepare(text, name, kernel)
    except SubmissionError as err:
        return Outcome("refused", str(err))
    if extracted is None:
        return Outcome("not-a-program")
    try:
        theirs = kernel_code(tool, nvcc_cubin(tool, text, name), kernel)
    except BuildFailed as err:
        return Outcome("nvcc-rejects", str(err)[-4000:])
    try:
        ours = kernel_code(tool, nvrtc_cubin(tool, compile_text, name, kernel), kernel)
    except BuildFailed as err:
        return Outcome("nvrtc-rejects", str(err)[-4000:])
    if ours == theirs:
        return Outcome("same")
    diff = difflib.unified_diff(theirs, ours, "nvcc", "grader", n=2, lineterm="")
    return Outcome("different", "\n".join(list(diff)[:80]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path, help="submissions to judge")
    parser.add_argument("--install-nvrtc", action="store_true", help="pip-install the NVRTC of nvcc's version")
    args = parser.parse_args(argv)
    if args.install_nvrtc:
        return install_nvrtc()
    try:
        tool = find_toolchain()
    except Unavailable as err:
        print(f"nvcc oracle unavailable: {err}", file=sys.stderr)
        return 2
    bad = 0
    for path in args.files:
        outcome = judge(tool, path.read_bytes().decode("utf-8", "replace"), path.name)
        bad += outcome.disagrees
        print(f"{path}: {outcome.verdict}")
        if outcome.detail and outcome.verdict != "same":
            print("    " + outcome.detail.replace("\n", "\n    "))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
