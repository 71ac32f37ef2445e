"""The include policy: a small lexer for the C preprocessor's first phases, so no include form reaches NVRTC.

NVRTC reads an absolute `#include` from disk and echoes the file's lines in its log (and a stringizing macro
can print a whole included file inside an error message), so the grader must be sure that NVRTC opens no
file. Text filters are bypassed by line splices, comments between `#` and the keyword, strings holding
`/*`, carriage returns, digit separators and macro tricks. Instead this module does what the compiler
does, in order (C++17 [lex.phases]):

1. line endings: CR LF and lone CR become LF (NVRTC treats CR as a line end or a blank, and a filter that
   does not know that is bypassed); a UTF-8 byte order mark is dropped;
2. line splices: a backslash, optional blanks, then a newline are removed;
3. tokens: comments, string and character literals (raw strings too), pp-numbers (with digit separators)
   and identifiers are skipped as units, so a `#` or `/*` inside one of them is never mistaken for code.

A `#` or `%:` that is the first token of a line starts a directive. Allowed: define, undef, if, ifdef,
ifndef, elif, else, endif, pragma, error, warning and the null directive; an `#include` of an allow-listed
header (blanked: nothing is read); everything else (include, include_next, import, embed, line, a line
marker `# 1 "file"`, unknown names) is refused. Anywhere in code, `__has_include`, `__has_include_next`
and `__has_embed` are refused, and so is token pasting (`##`, `%:%:`), which can build them.
The text NVRTC compiles is exactly the text scanned here (grader.source compiles `normalized`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ALLOWED_INCLUDES = frozenset({"cuda_runtime.h", "cuda.h", "stdint.h", "cstdint", "math.h", "cmath"})
"""Headers a student may name. NVRTC has their contents built in (math functions, size_t) or the grader's
prelude supplies them (fixed-width integers), so each is blanked; nothing is read."""

ALLOWED_DIRECTIVES = frozenset({"define", "undef", "if", "ifdef", "ifndef", "elif", "else", "endif",
                                "pragma", "error", "warning"})
FORBIDDEN_IDENTIFIERS = frozenset({"__has_include", "__has_include_next", "__has_embed"})

_SPLICE = re.compile(r"\\[ \t\f\v]*\n")
_BLANK = re.compile(r"[ \t\f\v]+")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_PP_NUMBER = re.compile(r"\.?\d(?:[eEpP][+-]|'[A-Za-z0-9_]|[A-Za-z0-9_.])*")
_RAW_PREFIX = re.compile(r"(?:u8|u|U|L)?R\"")
_PASTES = ("%:%:", "##", "#%:", "%:#")
_ALLOWED_INCLUDE = re.compile(r"[ \t\f\v]*[<\"]([A-Za-z0-9_.]+)[>\"][ \t\f\v]*(?://[^\n]*|/\*[^\n]*?\*/[ \t]*)?$")


@dataclass
class Scan:
    """Result of scanning a submission: the normalized text (what NVRTC compiles, with allowed includes
    blanked) or the first refusal as (line, token, reason)."""

    normalized: str = ""
    refusal: tuple[int, str, str] | None = None
    blanked: list[int] = field(default_factory=list)


def normalize(text: str) -> str:
    """Drop a leading byte order mark; turn CR LF and lone CR into LF."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def scan(text: str) -> Scan:
    """Scan `text` (any line endings) and return its normalized form with allowed includes blanked, or the
    first refused construct with its 1-based line in the normalized text."""
    text = normalize(text)
    spliced, lines = _splice(text)
    lexer = _Lexer(spliced, lines)
    refusal = lexer.run()
    if refusal:
        return Scan(refusal=refusal)
    out = text.split("\n")
    for line in lexer.blank_lines:
        out[line - 1] = ""
    return Scan(normalized="\n".join(out), blanked=sorted(lexer.blank_lines))


def _splice(text: str) -> tuple[str, list[int]]:
    """Text with line splices removed, and the original line of each of its characters."""
    pieces, lines, pos, line = [], [], 0, 1
    for m in _SPLICE.finditer(text):
        chunk = text[pos : m.start()]
        pieces.append(chunk)
        for ch in chunk:
            lines.append(line)
            line += ch == "\n"
        line += 1
        pos = m.end()
    chunk = text[pos:]
    pieces.append(chunk)
    for ch in chunk:
        lines.append(line)
        line += ch == "\n"
    return "".join(pieces), lines


class _Lexer:
    def __init__(self, s: str, lines: list[int]) -> None:
        self.s, self.lines, self.i = s, lines, 0
        self.blank_lines: set[int] = set()

    def line(self, at: int) -> int:
        return self.lines[min(at, len(self.lines) - 1)] if self.lines else 1

    def run(self) -> tuple[int, str, str] | None:
        s, n = self.s, len(self.s)
        line_start = True
        directive = None  # name of the directive whose line is being read
        while self.i < n:
            i, c = self.i, s[self.i]
            if c == "\n":
                line_start, directive = True, None
                self.i += 1
            elif c in " \t\f\v":
                self.i += 1
            elif s.startswith("//", i):
                end = s.find("\n", i)
                self.i = n if end < 0 else end
            elif s.startswith("/*", i):
                end = s.find("*/", i + 2)
                if end < 0:
                    return self.line(i), "/*", "unterminated comment"
                self.i = end + 2
            elif s.startswith(_PASTES, i):
                token = next(p for p in _PASTES if s.startswith(p, i))
                return self.line(i), token, ("token pasting is not allowed in a submission (it can build "
                                             "`__has_include`); write the names out")
            elif s.startswith("??", i) and s[i + 2 : i + 3] in set("=/'()!<>-"):
                return self.line(i), s[i : i + 3], "trigraphs are not allowed in a submission"
            elif c == "#" or s.startswith("%:", i):
                width = 1 if c == "#" else 2
                if line_start:
                    refusal = self.directive(i, width)
                    if refusal:
                        return refusal
                    directive = True
                else:
                    self.i += width
                line_start = False
            elif c in "\"'":
                self.i = self.literal(i, c)
                line_start = False
            elif _RAW_PREFIX.match(s, i):
                m = _RAW_PREFIX.match(s, i)
                refusal = self.raw_string(i, m.end())
                if refusal:
                    return refusal
                line_start = False
            elif _PP_NUMBER.match(s, i):
                self.i = _PP_NUMBER.match(s, i).end()
                line_start = False
            elif _IDENT.match(s, i):
                m = _IDENT.match(s, i)
                word = m.group(0)
                if s.startswith(("\"", "'"), m.end()) and word in ("u8", "u", "U", "L"):
                    self.i = m.end()  # an encoding prefix: the literal follows
                    continue
                if word in FORBIDDEN_IDENTIFIERS:
                    return self.line(i), word, "`__has_include` and its kind probe files on the grading machine"
                self.i = m.end()
                line_start = False
            else:
                self.i += 1
                line_start = False
        del directive
        return None

    def directive(self, at: int, width: int) -> tuple[int, str, str] | None:
        s = self.s
        j = self.skip_gap(at + width)
        m = _IDENT.match(s, j)
        if m is None:
            if j >= len(s) or s[j] == "\n":
                self.i = j  # the null directive
                return None
            if s[j].isdigit():
                return self.line(at), s[at:j + 1].strip(), "line markers are not allowed in a submission"
            return self.line(at), s[at : j + 1], "not a directive a submission may use"
        name = m.group(0)
        if name in ALLOWED_DIRECTIVES:
            self.i = m.end()
            return None
        if name == "include":
            end = s.find("\n", m.end())
            rest = s[m.end() : len(s) if end < 0 else end]
            inc = _ALLOWED_INCLUDE.match(rest)
            if inc and inc.group(1) in ALLOWED_INCLUDES and "/*" not in rest[: inc.start(1)]:
                first, last = self.line(at), self.line(len(s) - 1 if end < 0 else max(end - 1, at))
                self.blank_lines.update(range(first, last + 1))
                self.i = len(s) if end < 0 else end
                return None
        return self.line(at), f"{s[at:at + width]}{name}", (
            f"the exercise needs no header; only {', '.join(sorted(ALLOWED_INCLUDES))} may be included, each as a "
            "plain #include line" if name in ("include", "include_next", "import", "embed")
            else f"the directive `{name}` is not allowed in a submission")

    def skip_gap(self, j: int) -> int:
        s = self.s
        while j < len(s):
            b = _BLANK.match(s, j)
            if b:
                j = b.end()
            elif s.startswith("/*", j):
                end = s.find("*/", j + 2)
                j = len(s) if end < 0 else end + 2
            else:
                break
        return j

    def literal(self, at: int, quote: str) -> int:
        s, j = self.s, at + 1
        while j < len(s) and s[j] != "\n":
            if s[j] == "\\":
                j += 2
                continue
            if s[j] == quote:
                return j + 1
            j += 1
        return j  # unterminated: ends at the line's end, as the compiler's error would

    def raw_string(self, at: int, body: int) -> tuple[int, str, str] | None:
        s = self.s
        open_paren = s.find("(", body)
        delim = s[body:open_paren] if open_paren >= 0 else ""
        if open_paren < 0 or len(delim) > 16 or any(ch in delim for ch in " ()\\\t\v\f\n"):
            return self.line(at), s[at:body], "malformed raw string literal"
        end = s.find(")" + delim + '"', open_paren + 1)
        if end < 0:
            return self.line(at), s[at:body], "unterminated raw string literal"
        self.i = end + len(delim) + 2
        return None
