"""Stage 1, source: read a submission file safely and prepare the text NVRTC will see.

Reading refuses what cannot be a CUDA source (missing, a folder or other non-regular file, empty, binary,
not UTF-8, over the size cap) with an `InputError`. Preparing refuses every include form but a short
allow-list, line markers, `__has_include` and token pasting with a `SubmissionError` (the lexer and the
reasons are in grader.source.includes). The file name goes into a `#line` directive, so it is reduced to safe
characters first (a name holding a quote and a newline could inject an include). The `// grade:` block is
parsed by `grader.source.contract`. A whole program (host code around the kernel) is reduced to the kernel and the
device code it uses by `grader.source.program`; `Submission.program` says what was kept and what was left out.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from grader.core.errors import InputError
from grader.core.exercise import Exercise
from grader.source.contract import Contract, parse_contract
from grader.source.includes import normalize
from grader.source.prelude import prelude
from grader.source.program import Extracted, extract

MAX_SOURCE_BYTES = 256 * 1024
"""Size cap of a submission file; a solution to the exercise is under 5 KiB."""

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._+-]")


@dataclass(frozen=True)
class Submission:
    """One submission, read and prepared.

    path: where it was read from; name: the file name NVRTC reports in diagnostics; text: the file as
    written (normalized: LF line ends); compile_text: what NVRTC compiles (prelude, then `#line 1` and the text
    with allowed includes blanked, so diagnostics keep the student's line numbers; for a whole program the
    kernel and the device code it uses, each piece after a `#line` of its own line); sha256: of the file's
    bytes; program: for a whole program, what was kept and ignored (grader.source.program.Extracted: `kept`,
    `ignored`, `summary()`), else None.
    """

    path: Path
    name: str
    text: str
    compile_text: str
    sha256: str
    contract: Contract
    program: Extracted | None = None


def read_submission(path: str | Path, ex: Exercise) -> Submission:
    """Read, check and prepare the `.cu` file at `path`, a submission of the exercise `ex` (its kernel name and
    parameter roles: grader.core.exercise.Exercise).

    Raises InputError (exit 2) for a missing path, a folder, a file not named .cu (a .cpp or .c file), a link
    to a file outside the link's own folder (never read: an upload may link to the grading machine's files), a
    file that cannot be read (permissions), an empty, binary, UTF-16, non-UTF-8 or oversized file and a malformed
    `// grade:` block; SubmissionError (stage "source") for a refused include, or a whole program whose kernel
    cannot be separated from its host code (grader.source.program.extract).
    """
    p = Path(path)
    try:
        if not p.exists():
            raise InputError(f"{p}: no such file; give the path of a .cu file")
        if p.is_dir():
            raise InputError(f"{p}: is a folder; give one .cu file, or use `grade batch {p}` for a class folder")
        if not p.is_file():
            raise InputError(f"{p}: not a regular file (a device, pipe or socket); give the path of a .cu file")
        if p.suffix.lower() != ".cu":
            raise InputError(f"{p}: {_not_cuda(p.suffix.lower())}; give the .cu file that holds your __global__ "
                             "kernel (rename it to .cu if that is where your kernel is)")
        real = p.resolve(strict=True)
        if p.is_symlink() and real.parent != p.parent.resolve():
            # an upload (a zip, a Git repository) may hold a link to a file of the grading machine
            raise InputError(f"{p}: a link to a file outside its folder; refused without reading it (hand in the "
                             "file itself)")
        raw = read_capped(real)
    except OSError as err:
        raise InputError(f"{p}: cannot be read ({err.strerror or err}); check the file's permissions "
                         "(or those of its folders)") from None
    if len(raw) > MAX_SOURCE_BYTES:
        raise InputError(f"{p}: over the {MAX_SOURCE_BYTES}-byte cap for a submission")
    text = normalize(decode_source(raw, str(p)))
    contract = parse_contract(text, str(p), ex)
    name = safe_source_name(p.name)
    compile_text, program = prepare(text, name, ex.kernel_name)
    return Submission(
        path=p,
        name=name,
        text=text,
        compile_text=compile_text,
        sha256=hashlib.sha256(raw).hexdigest(),
        contract=contract,
        program=program,
    )


def read_capped(path: str | os.PathLike) -> bytes:
    """At most MAX_SOURCE_BYTES + 1 bytes of the file at `path`, opened without following a
    final symlink and without blocking on a FIFO (grader.batch.command hashes a submission with this, the worker
    reads the same bytes with it). Raises OSError (a link, a missing or unreadable file)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        return f.read(MAX_SOURCE_BYTES + 1)


def _not_cuda(suffix: str) -> str:
    """What a file of this suffix is, for the refusal of a file that is not a .cu file."""
    if suffix in (".c", ".h"):
        return f"a C file ({suffix}), not CUDA: the grader compiles a .cu file with NVRTC"
    if suffix in (".cpp", ".cc", ".cxx", ".c++", ".hpp", ".hh", ".cuh"):
        return f"a C++ file ({suffix}), not a .cu file: the grader compiles a .cu file with NVRTC"
    return f"not a .cu file ({suffix or 'no extension'})"


def decode_source(raw: bytes, where: str) -> str:
    """Decode a submission's bytes as UTF-8 text. Raises InputError for empty, UTF-16 or UTF-32, binary or
    non-UTF-8 input."""
    if not raw.strip():
        raise InputError(f"{where}: the file is empty; submit the .cu file that holds your kernel")
    wide = wide_encoding(raw)
    if wide:
        raise InputError(f"{where}: the file is {wide} text, not UTF-8; save the file as UTF-8 (in most editors: "
                         "Save As, encoding UTF-8)")
    if b"\x00" in raw:
        raise InputError(f"{where}: the file is binary (it holds NUL bytes); submit the .cu source, not a build")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise InputError(
            f"{where}:{line}: not UTF-8 text (byte 0x{raw[err.start]:02x}); save the file as UTF-8"
        ) from None


_BYTE_ORDER_MARKS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
                     (b"\xfe\xff", "UTF-16"))


def wide_encoding(raw: bytes) -> str | None:
    """"UTF-16" or "UTF-32" when `raw` starts with that encoding's byte order mark or, without one, when its
    first 4 KiB are NUL-interleaved like mostly-ASCII text in it (a NUL at every second byte, or at three
    bytes of every four, and almost none at the others); else None."""
    for mark, name in _BYTE_ORDER_MARKS:
        if raw.startswith(mark):
            return name
    head = raw[: 4096]
    head = head[: len(head) - len(head) % 4]
    if len(head) < 8:
        return None

    def nul_share(start: int, step: int) -> float:
        part = head[start::step]
        return part.count(0) / len(part)

    for text_at in (0, 3):  # UTF-32: little-endian text bytes at 0 mod 4, big-endian at 3 mod 4
        if nul_share(text_at, 4) < 0.1 and all(nul_share(k, 4) > 0.9 for k in range(4) if k != text_at):
            return "UTF-32"
    for text_at in (0, 1):  # UTF-16: little-endian at even bytes, big-endian at odd ones
        if nul_share(text_at, 2) < 0.1 and nul_share(1 - text_at, 2) > 0.9:
            return "UTF-16"
    return None


def prepare_for_nvrtc(text: str, name: str, kernel: str) -> str:
    """Return the text NVRTC compiles: the prelude, `#line 1 "name"`, then `text` normalized (LF line ends,
    no byte order mark) with allowed includes blanked (grader.source.includes); for a whole program, the prelude
    and the kernel `kernel` (the exercise's, Exercise.kernel_name) extracted from it (grader.source.program).

    Raises SubmissionError (stage "source") naming the line of any refused construct, or of a kernel that
    cannot be separated from its program.
    """
    return prepare(text, name, kernel)[0]


def prepare(text: str, name: str, kernel: str) -> tuple[str, Extracted | None]:
    """Prepare `text` (the submission, any line ends) for NVRTC under the file name `name` (made safe here);
    `kernel`: the kernel a whole program is reduced to (the exercise's, Exercise.kernel_name).

    Returns (the text NVRTC compiles, the extraction): for a file with device code only, prepare_for_nvrtc's
    text as it always was and None; for a whole program (grader.source.program), the prelude (with the macros of nvcc's
    implicit cuda_runtime.h and the host headers that the extracted text names: grader.source.prelude) and the kernel
    with the device code it uses, and the Extracted that says what was kept and ignored. Raises SubmissionError (stage
    "source") naming the line of a refused construct, or of a kernel that cannot be separated from its program.
    """
    name = safe_source_name(name)
    extracted = extract(normalize(text), name, kernel)
    if not extracted.whole_program:
        return prelude(extracted.headers) + extracted.text, None
    return prelude(extracted.headers, extracted.names) + extracted.text, extracted


def safe_source_name(name: str) -> str:
    """`name` with every character but letters, digits and `._+-` replaced by `_`, and a leading `-` too
    (NVRTC would read `-gold.cu` as an option), at most 100 characters: the name NVRTC reports in
    diagnostics and the one written into the `#line` directive."""
    safe = _UNSAFE_NAME.sub("_", name)[:100] or "submission.cu"
    return "_" + safe[1:] if safe.startswith("-") else safe
