"""Stage 1, source: read a submission file safely and prepare the text NVRTC will see.

Reading refuses what cannot be a CUDA source (missing, a folder, empty, binary, not UTF-8, over the size
cap) with an `InputError`. Preparing refuses every `#include` but a short allow-list (the fp32 exercise
needs no header at all) with a `SubmissionError`: NVRTC reads an absolute `#include` from disk and echoes
the file's lines in its log, so no include form may reach it (`#include`, `%:include`, `#include_next`,
`#import`, `#embed`, macro-built names, line splices, comments between `#` and the keyword, and
`__has_include`). The `// grade:` block is parsed by `grader.contract`.

Two text filters run on the spliced text (with and without comments), and a third that does not depend on
where strings and comments are: every `#` or `%:` anywhere, followed by blanks and `/* */` comments, then a
forbidden directive name, is refused (a string holding `/*` made the comment filter swallow a real
`#/**/include` and NVRTC read the file). Token pasting (`##`, `%:%:`) in a `#define` is refused because
`CAT(__has_, include)` builds a working `__has_include`. The file name goes into a `#line` directive, so it
is reduced to safe characters first (a name holding a quote and a newline could inject an include).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from grader.contract import Contract, parse_contract
from grader.errors import InputError, SubmissionError

MAX_SOURCE_BYTES = 256 * 1024
"""Size cap of a submission file; a solution to the exercise is under 5 KiB."""

ALLOWED_INCLUDES = frozenset({"cuda_runtime.h", "cuda.h", "stdint.h", "cstdint", "math.h", "cmath"})
"""Headers a student may name. NVRTC has their contents built in (math functions, size_t) or the grader's
prelude supplies them (fixed-width integers), so each is replaced by an empty line; nothing is read."""

PRELUDE = """\
typedef signed char int8_t; typedef unsigned char uint8_t;
typedef short int16_t; typedef unsigned short uint16_t;
typedef int int32_t; typedef unsigned int uint32_t;
typedef long long int64_t; typedef unsigned long long uint64_t;
"""
"""Fixed-width integer types, which NVRTC does not define without headers."""

_SPLICE = re.compile(r"\\[ \t]*\r?\n")
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_ALLOWED_LINE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"]([A-Za-z0-9_.]+)[>\"][ \t]*(//[^\n]*)?$", re.M)
_FORBIDDEN = re.compile(r"(#|%:)\s*(include|include_next|import|embed)\b|__has_include|__has_embed|\?\?=")
_HASH = re.compile(r"#|%:")
_GAP = re.compile(r"(?:[ \t\f\v]+|/\*.*?(?:\*/|\Z))*", re.S)
_IDENT = re.compile(r"[A-Za-z_]\w*")
_PASTE = re.compile(r"##|%:%:")
_FORBIDDEN_DIRECTIVES = frozenset({"include", "include_next", "import", "embed"})
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._+-]")


@dataclass(frozen=True)
class Submission:
    """One submission, read and prepared.

    path: where it was read from; name: the file name NVRTC reports in diagnostics; text: the file as
    written; compile_text: what NVRTC compiles (prelude, then `#line 1` and the text with allowed
    includes blanked, so diagnostics keep the student's line numbers); sha256: of the file's bytes.
    """

    path: Path
    name: str
    text: str
    compile_text: str
    sha256: str
    contract: Contract


def read_submission(path: str | Path) -> Submission:
    """Read, check and prepare the `.cu` file at `path`.

    Raises InputError (exit 2) for a missing path, a folder, an empty, binary, non-UTF-8 or oversized file
    and a malformed `// grade:` block; SubmissionError (stage "source") for a refused include.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file; give the path of a .cu file")
    if p.is_dir():
        raise InputError(f"{p}: is a folder; give one .cu file, or use `grade batch {p}` for a class folder")
    size = p.stat().st_size
    if size > MAX_SOURCE_BYTES:
        raise InputError(f"{p}: {size} bytes is over the {MAX_SOURCE_BYTES}-byte cap for a submission")
    raw = p.read_bytes()
    text = decode_source(raw, str(p))
    contract = parse_contract(text, str(p))
    name = safe_source_name(p.name)
    return Submission(
        path=p,
        name=name,
        text=text,
        compile_text=prepare_for_nvrtc(text, name),
        sha256=hashlib.sha256(raw).hexdigest(),
        contract=contract,
    )


def decode_source(raw: bytes, where: str) -> str:
    """Decode a submission's bytes as UTF-8 text. Raises InputError for empty, binary or non-UTF-8 input."""
    if not raw.strip():
        raise InputError(f"{where}: the file is empty; submit the .cu file that holds your kernel")
    if b"\x00" in raw:
        raise InputError(f"{where}: the file is binary (it holds NUL bytes); submit the .cu source, not a build")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise InputError(
            f"{where}:{line}: not UTF-8 text (byte 0x{raw[err.start]:02x}); save the file as UTF-8"
        ) from None


def prepare_for_nvrtc(text: str, name: str) -> str:
    """Return the text NVRTC compiles: the prelude, `#line 1 "name"`, then `text` with allowed includes blanked.

    Raises SubmissionError (stage "source") naming the line of any other include form.
    """

    def blank_allowed(m: re.Match[str]) -> str:
        if m.group(1) in ALLOWED_INCLUDES:
            return ""
        return m.group(0)

    name = safe_source_name(name)
    body = _ALLOWED_LINE.sub(blank_allowed, text)
    spliced = _SPLICE.sub("", body)
    for candidate in (spliced, _COMMENT.sub(" ", spliced)):
        m = _FORBIDDEN.search(candidate)
        if m:
            line = _line_of(body, m.group(0))
            raise SubmissionError(
                "source",
                f"{name}:{line}: refused `{m.group(0).strip()}`: the exercise needs no header; only "
                f"{', '.join(sorted(ALLOWED_INCLUDES))} may be included, each as a plain #include line",
            )
    found = _directive_refusal(spliced)
    if found:
        at, token, why = found
        line = _spliced_line(body, at)
        raise SubmissionError("source", f"{name}:{line}: refused `{token}`: {why}")
    return f'{PRELUDE}#line 1 "{name}"\n{body}'


def safe_source_name(name: str) -> str:
    """`name` with every character but letters, digits and `._+-` replaced by `_`, at most 100 characters:
    the name NVRTC reports in diagnostics and the one written into the `#line` directive."""
    return _UNSAFE_NAME.sub("_", name)[:100] or "submission.cu"


def _directive_refusal(spliced: str) -> tuple[int, str, str] | None:
    """(offset, token, reason) of the first forbidden directive in `spliced` (line splices removed), or None.

    Looks at every `#` and `%:`, wherever it is (inside strings and comments too, so no mistake about where
    they start can hide a directive); skips blanks and `/* */` comments after it and reads the name.
    """
    for m in _HASH.finditer(spliced):
        at = _GAP.match(spliced, m.end()).end()
        ident = _IDENT.match(spliced, at)
        if not ident:
            continue
        word = ident.group(0)
        if word in _FORBIDDEN_DIRECTIVES:
            return m.start(), f"{m.group(0)}{word}", (
                f"the exercise needs no header; only {', '.join(sorted(ALLOWED_INCLUDES))} may be included, "
                "each as a plain #include line")
        if word == "define":
            end = _directive_end(spliced, ident.end())
            paste = _PASTE.search(spliced, ident.end(), end)
            if paste:
                return paste.start(), paste.group(0), "token pasting is not allowed in a submission (it can build " \
                    "`__has_include`); write the names out"
    return None


def _directive_end(text: str, pos: int) -> int:
    """End of the directive line starting before `pos`: the first newline not inside a `/* */` comment.
    Every `/*` counts, even one inside a string, so the span is never shorter than the real one."""
    while True:
        nl = text.find("\n", pos)
        opening = text.find("/*", pos)
        if opening < 0 or nl < 0 or nl < opening:
            return len(text) if nl < 0 else nl
        closing = text.find("*/", opening + 2)
        if closing < 0:
            return len(text)
        pos = closing + 2


def _spliced_line(body: str, at: int) -> int:
    """Line in `body` of offset `at` in `body` with its line splices removed."""
    removed = 0
    for m in _SPLICE.finditer(body):
        if m.start() - removed > at:
            break
        removed += len(m.group(0))
    return body.count("\n", 0, at + removed) + 1


def _line_of(text: str, token: str) -> str:
    """Best-effort line number of the first line that holds the start of `token` (or '?')."""
    words = re.findall(r"\w+|\?\?=", token)
    key = words[-1] if words else token.strip()
    for i, line in enumerate(text.splitlines(), 1):
        if key and key in line:
            return str(i)
    return "?"
