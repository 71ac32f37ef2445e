"""Stage 2, compile: NVRTC (through cuda.core's Program) to a cubin for one compute capability.

Never PTX for loading: NVRTC from PyPI is newer than the GPU machine's driver, which refuses its PTX with
CUDA_ERROR_UNSUPPORTED_PTX_VERSION; a cubin for the device's own arch loads (docs/h200.md).
The kernel's parameter list (count and sizes) is read from the cubin's own metadata (grader.compile.cubin), never from
text a submission can write; the PTX NVRTC produced on the way (read from the same NVRTC program through
cuda.bindings) gives each parameter's type, where its one `.entry` agrees with the cubin, and the code hints.
Diagnostics come back as `file:line: message`; only diagnostics about the submission's own file are shown, and the log
is capped, so no line of another file can reach the output.
Every NVRTC call runs confined by grader.compile.sandbox (Landlock): NVRTC can open no file but its builtins library,
so an include that got past grader.source.includes fails with "cannot open source file", reported as such.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field

from grader.compile import sandbox
from grader.compile.cubin import CubinError, entry_names
from grader.compile.cubin import kernel_params as cubin_params
from grader.core.errors import GraderFault, Stage, SubmissionError

DEFAULT_ARCH = "sm_90"
"""Arch compiled for when no GPU is present (`--arch` changes it): the course's H200 is compute capability 9.0."""

MAX_LOG_CHARS = 16_000
"""Cap on the compile log kept and shown."""
MAX_DIAGNOSTICS = 20
"""Diagnostics of one kind (errors, warnings) kept, each with its source excerpt; the rest are counted."""
MAX_DIAGNOSTIC_CHARS = 8_000
"""Cap on the characters of the diagnostics kept of one kind (a 55 KB file made 3,000 warnings, each echoing
a long source line: a 245 MB report)."""
MAX_LINE_CHARS = 500
"""Cap on one line of a diagnostic (an excerpt echoes a source line, however long)."""

_DIAG = re.compile(r"^(?P<file>[^\n()]+)\((?P<line>\d+)\): (?P<kind>error|warning|remark|catastrophic error)"
                   r"(?P<rest>[^\n]*)$", re.M)
_OPEN_REFUSED = re.compile(r'(?:cannot|could not) open source file ("[^"\n]{0,200}"|<[^>\n]{0,200}>)')
_PTXAS_ERROR = re.compile(r"^ptxas\s+(?:error|fatal)\s*:[^\n]*", re.M)
"""ptxas's own errors (too much __constant__ or __shared__ data, ...): in the log without a file(line)."""
_PTX_COMMENT = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*[\s\S]*?(?:\*/|\Z)')
"""A PTX string literal (kept) or comment (removed) (PTX ISA, "Comments": C/C++ style)."""
_PTX_TOP = re.compile(r"[{}]|(?<![\w$.%])\.entry\s+([\w$%]+)\s*(\()?")
_PTX_TYPE = re.compile(r"\.([busf](?:8|16|32|64|128)|pred)\b")
_PTX_COUNT = re.compile(r"\[(\d+)\]\s*$")


@dataclass(frozen=True)
class PtxParam:
    """One kernel parameter: its type as PTX declares it ('u64', 'u32', 'f32', 'b8', ...) and its size in
    bytes as the cubin records it (grader.compile.cubin; the PTX's size must agree)."""

    ptx_type: str
    size: int


@dataclass(frozen=True)
class KernelInfo:
    """One kernel of a compiled module: its mangled name, its parameters (the cubin's list, typed from the
    PTX: grader.compile.cubin, _kernel_params), and ptxas's resource report (registers; stack frame and spills in bytes;
    None where the report has no line)."""

    name: str
    mangled: str
    params: tuple[PtxParam, ...]
    registers: int | None = None
    spill_stores: int | None = None
    spill_loads: int | None = None
    stack_frame: int | None = None
    shared_bytes: int | None = None
    """Static shared memory per block, bytes (ptxas: "N bytes smem"); None where the report has no line."""


@dataclass(frozen=True)
class Compiled:
    """A compiled module: cubin bytes for `arch`, PTX text, the compile log (ptxas -v report), warnings about
    the source file (at most MAX_DIAGNOSTICS; `warnings_dropped` counts the rest), and one KernelInfo per
    requested kernel name."""

    arch: str
    cubin: bytes
    ptx: str
    log: str
    kernels: dict[str, KernelInfo]
    warnings: tuple[str, ...] = field(default=())
    warnings_dropped: int = 0


def compile_kernels(text: str, name: str, kernels: tuple[str, ...], arch: str, lineinfo: bool = False) -> Compiled:
    """Compile `text` with NVRTC to a cubin for `arch` (e.g. 'sm_90'); `name` is the file name diagnostics use.
    `lineinfo`: the cubin also carries the source line of each instruction (NVRTC's -lineinfo; it changes no
    instruction, tests/test_causes.py): the hints name the student's lines with it (grader.feedback.sass_access).

    Each name in `kernels` is found whether it is declared `extern "C"` or as a C++ function (NVRTC name
    expressions). Raises SubmissionError(stage "compile") with `file:line: message` lines for a compile error,
    and with the list of kernels found when a name is missing or is not a __global__ function; SandboxError
    when the sandbox is required (grader.compile.sandbox.require) but not available.
    NVRTC runs inside grader.compile.sandbox.confined: it can read no file but its own builtins library.
    """
    return sandbox.confined(_compile, text, name, kernels, arch, lineinfo)


def _compile(text: str, name: str, kernels: tuple[str, ...], arch: str, lineinfo: bool = False) -> Compiled:
    from cuda.core import Program, ProgramOptions

    if name.startswith("-"):  # NVRTC would read the program's name as an option
        name = "_" + name
    options = ProgramOptions(name=name, arch=arch, std="c++17", ptxas_options="-v", no_source_include=True,
                             lineinfo=lineinfo)
    program = Program(text, "c++", options)
    log = io.StringIO()
    try:
        obj = program.compile("cubin", name_expressions=kernels, logs=log)
    except Exception as err:  # NVRTCError: the log is in its message
        raw = str(err).replace("\x00", "")  # cuda.core passes on NVRTC's log with its terminating NUL bytes
        lines, dropped = _diagnostics(raw, name, "error")
        if "__nv_name_map" in raw and not lines:
            raise SubmissionError(Stage.COMPILE, _missing_kernel_message(text, name, kernels, arch)) from None
        what = "compile error"
        if not lines:  # ptxas's errors have no file(line): too much __constant__ or __shared__ data, ...
            lines = [_cut(m.group()) for m in _PTXAS_ERROR.finditer(raw)][:MAX_DIAGNOSTICS]
            what = ("ptxas (the assembler) refused the compiled code; its error is below (e.g. __constant__ "
                    "data over 64 KiB, __shared__ data over a block's limit)") if lines else what
        lines = (lines or ["(NVRTC gave no diagnostic for this file)"]) + (
            [f"({dropped} more errors not shown)"] if dropped else [])
        raise SubmissionError(Stage.COMPILE, f"{name}: {what}", details=_cap("\n".join(lines))) from None
    ptx = _ptx_of(program)
    cubin = bytes(obj.code)
    entries = _entry_names(cubin, name)
    raw_log = log.getvalue().replace("\x00", "")  # as the error's log: no NUL in any log shown or written
    warnings, warnings_dropped = _diagnostics(raw_log, name, "warning")
    infos = {}
    for kernel in kernels:
        mangled = obj.symbol_mapping[kernel]
        mangled = mangled.decode() if isinstance(mangled, bytes) else mangled
        if mangled not in entries:
            raise SubmissionError(
                Stage.COMPILE,
                f"{name}: `{kernel}` is not a __global__ kernel (declare it `__global__ void {kernel}(...)`)",
            )
        params = _kernel_params(cubin, ptx, name, kernel, mangled)
        infos[kernel] = KernelInfo(kernel, mangled, params, **_resources(raw_log, mangled))
    return Compiled(
        arch=arch,
        cubin=cubin,
        ptx=ptx,
        log=_cap(raw_log),
        kernels=infos,
        warnings=tuple(warnings),
        warnings_dropped=warnings_dropped,
    )


def _missing_kernel_message(text: str, name: str, kernels: tuple[str, ...], arch: str) -> str:
    from cuda.core import Program, ProgramOptions

    program = Program(text, "c++", ProgramOptions(name=name, arch=arch, std="c++17"))
    try:
        kernels_in = entry_names(bytes(program.compile("cubin").code))
        order = {m: i for i, (m, _, _) in enumerate(_top_entries(_ptx_of(program)))}  # the file's order
        found = [_demangled_base(m) for m in sorted(kernels_in, key=lambda m: (order.get(m, len(order)), m))]
    except Exception:
        found = []
    listing = ", ".join(found) if found else "none"
    missing = [k for k in kernels if k not in found]
    if not missing:  # the name is there, but a name expression cannot reach it
        return (f"{name}: found {found.count(kernels[0])} kernel(s) named `{kernels[0]}`, but as a template, an "
                f"overload or inside a namespace; declare exactly one plain `__global__ void {kernels[0]}(...)` "
                "at file scope")
    return (
        f"{name}: no __global__ kernel named `{missing[0]}`; kernels found: {listing}. "
        f"Name your kernel `{missing[0]}`"
    )


def _entry_names(cubin: bytes, name: str) -> frozenset[str]:
    """The mangled names of the kernels in `cubin` (grader.compile.cubin); GraderFault when it cannot be read."""
    try:
        return frozenset(entry_names(cubin))
    except CubinError as err:
        raise GraderFault(f"{name}: the grader cannot read the cubin NVRTC made ({err}): this is not your code's "
                          "fault, report it to the course staff with your file") from None


def _ptx_of(program) -> str:
    from cuda.bindings import nvrtc

    err, size = nvrtc.nvrtcGetPTXSize(program.handle)
    buf = b" " * size
    (err,) = nvrtc.nvrtcGetPTX(program.handle, buf)
    return buf.rstrip(b"\x00 ").decode("utf-8", "replace")


def _kernel_params(cubin: bytes, ptx: str, name: str, kernel: str, mangled: str) -> tuple[PtxParam, ...]:
    """The parameters of `mangled`: their count and sizes from the cubin's metadata (grader.compile.cubin), their PTX
    types ('u64', 'f32', 'b8') from the PTX's one `.entry` of that name, which must agree with the cubin.
    Raises GraderFault (the grader's, not the submission's: nothing is judged) when the cubin cannot be read
    or the two disagree."""
    try:
        params = cubin_params(cubin, mangled)
    except CubinError as err:
        raise GraderFault(f"{name}: the grader cannot read the parameter list of `{kernel}` from the cubin NVRTC "
                          f"made ({err}); the grader does not know this cubin layout: this is not your code's "
                          "fault, report it to the course staff with your file") from None
    typed = _ptx_params(ptx, mangled)
    sizes = [p.size for p in params]
    if typed is None or [size for _, size in typed] != sizes:
        found = "no single .entry" if typed is None else f"sizes {[size for _, size in typed]}"
        raise GraderFault(f"{name}: the PTX of `{kernel}` has {found} where the cubin has parameter sizes {sizes}; "
                          "the grader cannot tell the parameter list, so it judges nothing: report it to the course "
                          "staff with your file")
    return tuple(PtxParam(ptype, p.size) for (ptype, _), p in zip(typed, params, strict=True))


def _ptx_params(ptx: str, mangled: str) -> list[tuple[str, int]] | None:
    """(PTX type, size in bytes) of each parameter of the one `.entry mangled` of `ptx` outside every function
    body, comments (`//`, `/* */`, string-literal aware) removed first, so that inline asm writing a comment or
    text inside a body cannot stand for it; None when there is not exactly one. Linear in the PTX's length."""
    found = [(clean, at) for name, clean, at in _top_entries(ptx) if name == mangled]
    if len(found) != 1:
        return None
    clean, at = found[0]
    if at < 0:  # `.entry name {`: no parameter list
        return []
    close = clean.find(")", at)
    if close < 0:
        return None
    params = []
    for decl in filter(str.strip, clean[at:close].split(",")):
        # e.g. ".param .u64 .ptr .align 1 name" (sm_100+), ".param .align 16 .b8 name[16]", ".param .u32 name"
        ptype = _PTX_TYPE.search(decl)
        count = _PTX_COUNT.search(decl)
        kind = ptype.group(1) if ptype else "b8"
        width = max(1, int(re.sub(r"\D", "", kind) or 8) // 8)
        params.append((kind, width * (int(count.group(1)) if count else 1)))
    return params


def _top_entries(ptx: str) -> list[tuple[str, str, int]]:
    """(name, the PTX without comments, where its parameter list starts there or -1) of each `.entry` outside
    every function body, in order, comments removed first (string-literal aware). Linear in the PTX's length."""
    clean = _PTX_COMMENT.sub(lambda m: m.group() if m.group().startswith('"') else " ", ptx)
    depth, found = 0, []
    for m in _PTX_TOP.finditer(clean):
        if m.group() in "{}":
            depth += 1 if m.group() == "{" else -1
        elif depth == 0:
            found.append((m.group(1), clean, m.end() if m.group(2) else -1))
    return found


def _demangled_base(mangled: str) -> str:
    """The function name inside an Itanium-mangled name (`_Z6kernelPKf...` -> kernel);
    extern "C" names are returned unchanged. Used only to list kernels in a message."""
    if not mangled.startswith("_Z"):
        return mangled
    pos, nested, name = 2, mangled.startswith("_ZN"), mangled
    pos += nested
    while True:  # <length><name>, repeated inside N...E for namespaces; the last one is the function
        m = re.match(r"L?(\d+)", mangled[pos:])
        if not m:
            return name
        start = pos + m.end()
        name = mangled[start : start + int(m.group(1))]
        pos = start + int(m.group(1))
        if not nested or mangled[pos : pos + 1] == "E":
            return name


def _diagnostics(log: str, name: str, kind: str) -> tuple[list[str], int]:
    """`file:line: kind: message` lines (with the source excerpt NVRTC prints under each) for `name` only,
    and how many such diagnostics were left out: MAX_DIAGNOSTICS are kept at most, within
    MAX_DIAGNOSTIC_CHARS, each line cut to MAX_LINE_CHARS. One pass over the log's lines."""
    out: list[str] = []
    kept = dropped = chars = 0
    excerpt = 0  # lines after a kept diagnostic that may be its excerpt (the source line and the caret)
    for line in log.splitlines():
        m = _DIAG.match(line)
        if not m:
            if excerpt and line.strip():
                out.append(_cut(line))
                chars += len(out[-1])
            excerpt = max(0, excerpt - 1)
            continue
        excerpt = 0
        if m.group("file") != name or not m.group("kind").endswith(kind):
            continue
        refused = _OPEN_REFUSED.search(m.group("rest"))
        if refused:  # an include that the sandbox (or a missing file) stopped: its name, never its content
            entry = _cut(f"{name}:{m.group('line')}: error: NVRTC may not open {refused.group(1)}: a submission "
                         "can include no file (the grader's sandbox refused it); remove the #include")
        else:
            entry = _cut(f"{name}:{m.group('line')}: {m.group('kind')}{m.group('rest')}")
        if kept >= MAX_DIAGNOSTICS or chars + len(entry) + 2 * MAX_LINE_CHARS > MAX_DIAGNOSTIC_CHARS:
            dropped += 1
            continue
        out.append(entry)
        kept, chars, excerpt = kept + 1, chars + len(entry), 2
    return out, dropped


def _cut(line: str) -> str:
    """`line` cut to MAX_LINE_CHARS with `...`."""
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 3] + "..."


def _resources(log: str, mangled: str) -> dict[str, int | None]:
    """Registers, spills, stack frame and static shared memory (bytes; 0 where ptxas's line names none) for `mangled`
    from ptxas's -v report (None where absent)."""
    at = log.find(f"Function properties for {mangled}")
    block = log[at:] if at >= 0 else ""
    regs = re.search(r"Used (\d+) registers", block)
    frame = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", block)
    smem = re.search(r"Used \d+ registers[^\n]*?, (\d+) bytes smem", block)
    return {
        "registers": int(regs.group(1)) if regs else None,
        "shared_bytes": int(smem.group(1)) if smem else (0 if regs else None),
        "stack_frame": int(frame.group(1)) if frame else None,
        "spill_stores": int(frame.group(2)) if frame else None,
        "spill_loads": int(frame.group(3)) if frame else None,
    }


def _cap(text: str) -> str:
    return text if len(text) <= MAX_LOG_CHARS else text[:MAX_LOG_CHARS] + "\n[log cut]"
