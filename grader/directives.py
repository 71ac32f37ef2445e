"""The include policy: a small lexer for the C preprocessor's first phases, so no include form reaches NVRTC.

NVRTC reads an absolute `#include` from disk and echoes the file's lines in its log (and a stringizing macro
can print a whole included file inside an error message), so the grader must be sure that NVRTC opens no
file. Text filters are bypassed by line splices, comments between `#` and the keyword, strings holding
`/*`, carriage returns, digit separators and macro tricks. Instead this module does what the compiler
does, in order (C++17 [lex.phases]), and where NVRTC departs from the standard it follows NVRTC (each rule
below was checked against NVRTC 13 with an `#warning` canary; tests/test_directives.py holds one case each):

1. line endings: CR LF and lone CR become LF (NVRTC treats CR as a line end or a blank, and a filter that
   does not know that is bypassed); a UTF-8 byte order mark is dropped;
2. line splices: a backslash right before a newline is removed. A backslash followed by blanks and then a
   newline is no splice for NVRTC (it warns and ends the line there), so it is none here either;
3. tokens: comments, string and character literals (raw strings too, and a user-defined-literal suffix
   such as the `R` of `""R`, which therefore starts no raw string), pp-numbers and identifiers (ASCII only:
   NVRTC calls any other character an unrecognized token) are skipped as units, so a `#` or `/*` inside one
   of them is never mistaken for code. An escape does not reach over a newline: a literal whose last
   character is a backslash ends at the line's end, as NVRTC's does.

A `#` or `%:` that is the first token of a line starts a directive. For NVRTC a comment that spans lines
also starts a new line (`int x; /*` newline `*/ #include` is a directive), except inside a directive.
Allowed: define, undef, if, ifdef, ifndef, elif, else, endif, pragma, error, warning and the null directive;
an `#include` of an allow-listed header (its text is blanked from the `#` to the line's end, so a comment
closing before it on that line stays closed: nothing is read); everything else (include, include_next,
import, embed, line, a line marker `# 1 "file"`, unknown names) is refused. Anywhere in code,
`__has_include`, `__has_include_next` and `__has_embed` are refused, and so is token pasting (`##`,
`%:%:`), which can build them.

Refused too, because NVRTC reads them in ways a lexer cannot follow exactly, and no working submission needs
them: a backslash outside a literal or comment (a stray one, one followed by blanks at a line's end, or a
universal character name such as `\\u0041` in code: NVRTC makes `\\uR` an identifier, so `\\uR"(` starts
no raw string); a line splice inside a raw string literal; a name right after a character literal (NVRTC
takes it as a suffix after `'a'` but not after `''`); trigraphs; and digit separators that NVRTC could
read in more than one way. NVRTC takes the `'` after a number's digits into the number in live code
(`1'+'/*'` holds no comment there, and `1e'+` goes on as an exponent), only before a digit or letter in a
live directive, and never in a skipped group (`#if 0`), where it opens a character literal. So a `'` after
a number that is not followed by a digit, letter or `_` is refused, and since which groups are skipped is
not known here, a line holding a digit separator is accepted only when its live reading and its skipped
reading end at the same place and neither finds a refused construct (`1'000'000;`, with or without a
comment closed on the same line, is fine).

The text NVRTC compiles is exactly the text scanned here (grader.source compiles `normalized`).
`Scan.directives` lists every directive the lexer saw, which is how benchmarks/fuzz_lexer.py compares
this lexer with NVRTC.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

ALLOWED_INCLUDES = frozenset({"cuda_runtime.h", "cuda.h", "stdint.h", "cstdint", "math.h", "cmath", "float.h",
                              "cfloat", "limits.h", "climits"})
"""Headers a student may name. NVRTC has their contents built in (math functions, size_t) or the grader's
prelude supplies them (fixed-width integers, M_PI, INFINITY, FLT_MAX, INT_MAX, ...: grader.source.prelude),
so each is blanked; nothing is read."""

PROGRAM_INCLUDES = ALLOWED_INCLUDES | frozenset({
    # C headers and their C++ forms
    "assert.h", "cassert", "ctype.h", "cctype", "errno.h", "cerrno", "inttypes.h", "cinttypes", "stdbool.h",
    "stddef.h", "cstddef", "stdio.h", "cstdio", "stdlib.h",
    "cstdlib", "string.h", "cstring", "time.h", "ctime",
    # C++ standard library headers a host program uses
    "algorithm", "array", "chrono", "fstream", "functional", "iomanip", "iostream", "limits", "map", "memory",
    "numeric", "random", "set", "sstream", "string", "tuple", "unordered_map", "utility", "vector",
    # the CUDA runtime's host API
    "cuda_runtime_api.h", "device_launch_parameters.h",
})
"""Headers a whole program may name besides ALLOWED_INCLUDES (grader.program): host-only headers of the C and
C++ standard libraries and the CUDA runtime API. Each is blanked like the others, never read; the kernel
extracted from the program cannot use what they declare (`std::` names, `printf` is NVRTC's own). Headers
whose contents device code needs (cuda_fp16.h, cooperative_groups.h, curand_kernel.h) are not here."""

ALLOWED_DIRECTIVES = frozenset({"define", "undef", "if", "ifdef", "ifndef", "elif", "else", "endif",
                                "pragma", "error", "warning"})
FORBIDDEN_IDENTIFIERS = frozenset({"__has_include", "__has_include_next", "__has_embed"})

_SPLICE = re.compile(r"\\\n")
_BLANK = re.compile(r"[ \t\f\v]+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A pp-number, taking every `'` after its first digit as a digit separator. NVRTC does so in live code
# (and reads `1e'+` on as an exponent's sign in decimals but not in hex); in a live directive it takes a `'`
# only before a digit, letter or `_`; in a skipped group (`#if 0`) never: there the `'` opens a literal.
# A `'` that is not followed by a digit, letter or `_` is refused, so the first two readings are one.
_PP_NUMBER = re.compile(r"\.?[0-9](?:[eEpP][+-]|'|[A-Za-z0-9_.])*")
_PP_NUMBER_SKIPPED = re.compile(r"\.?[0-9](?:[eEpP][+-]|[A-Za-z0-9_.])*")
_LOOSE_SEPARATOR = re.compile(r"'(?![A-Za-z0-9_])")
_RAW_PREFIX = re.compile(r"(?:u8|u|U|L)?R\"")
_PASTES = ("%:%:", "##", "#%:", "%:#")
_TRIGRAPH_ENDS = frozenset("=/'()!<>-")
_ALLOWED_INCLUDE = re.compile(r"[ \t\f\v]*[<\"]([A-Za-z0-9_.]+)[>\"][ \t\f\v]*(?://[^\n]*|/\*[^\n]*?\*/[ \t]*)?$")

Refusal = tuple[int, str, str]


@dataclass(frozen=True)
class Directive:
    """One directive as the lexer saw it.

    line: 1-based line of its `#` (or `%:`) in the normalized text; offset: that character's index in the
    normalized text; name: the directive's name ('define', 'include', ...), '' for the null directive, or
    the token that stood where a name should be (a line marker's number, `##`); text: the rest of its logical
    line after the name, splices removed (for `#warning X`, ' X').
    """

    line: int
    offset: int
    name: str
    text: str


@dataclass
class Scan:
    """Result of scanning a submission.

    normalized: the text NVRTC compiles (LF line ends, allowed includes blanked, same lines), '' when refused;
    refusal: the first refused construct as (1-based line, token, reason), or None; blanked: the lines an
    allowed include was blanked on; directives: every directive seen, in order, up to and including a
    refused one; listed_before: for a refused text, the line before which `directives` is complete (the
    refused line, or the earlier line where a look-ahead that found the refused construct began), else None.
    """

    normalized: str = ""
    refusal: Refusal | None = None
    blanked: list[int] = field(default_factory=list)
    directives: list[Directive] = field(default_factory=list)
    listed_before: int | None = None


def normalize(text: str) -> str:
    """Drop a leading byte order mark; turn CR LF and lone CR into LF."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def scan(text: str, allowed: frozenset[str] = ALLOWED_INCLUDES) -> Scan:
    """Scan `text` (any line endings) and return its normalized form with allowed includes blanked, or the
    first refused construct with its 1-based line in the normalized text. Never raises for any input text.

    allowed: the header names an `#include` may name (ALLOWED_INCLUDES; grader.program passes
    PROGRAM_INCLUDES for a whole program). Every other include form is refused whatever `allowed` holds."""
    text = normalize(text)
    lexer = _Lexer(text, allowed)
    stop, refusal = lexer.run(0)
    if refusal:
        return Scan(refusal=refusal, directives=lexer.directives, listed_before=min(refusal[0], lexer.line(stop)))
    out = list(text)
    blanked: set[int] = set()
    for start, end in lexer.blank_spans:
        for k in range(start, end):
            if out[k] != "\n":
                out[k] = " "
        blanked.update(range(text.count("\n", 0, start) + 1, text.count("\n", 0, max(start, end - 1)) + 2))
    return Scan(normalized="".join(out), blanked=sorted(blanked), directives=lexer.directives)


class _Lexer:
    """Lexes the spliced text; `lines[k]` and `offsets[k]` are the normalized text's line and index of spliced
    character k, `splices` the spliced indices a splice was removed just before."""

    def __init__(self, text: str, allowed: frozenset[str] = ALLOWED_INCLUDES) -> None:
        self.allowed = allowed
        pieces, self.lines, self.offsets, self.splices = [], [], [], []
        pos, line, length = 0, 1, 0
        for m in [*_SPLICE.finditer(text), None]:
            stop = len(text) if m is None else m.start()
            for k in range(pos, stop):
                self.lines.append(line)
                self.offsets.append(k)
                line += text[k] == "\n"
            pieces.append(text[pos:stop])
            length += stop - pos
            if m is not None:
                self.splices.append(length)
                line += 1
                pos = m.end()
        self.s = "".join(pieces)
        self.text = text
        self.blank_spans: list[tuple[int, int]] = []
        self.directives: list[Directive] = []

    def line(self, at: int) -> int:
        return self.lines[min(at, len(self.lines) - 1)] if self.lines else 1

    def offset(self, at: int) -> int:
        return self.offsets[at] if at < len(self.offsets) else len(self.text)

    def run(self, start: int, *, skipped: bool = False, probe: bool = False, line_start: bool = True,
            in_directive: bool = False) -> tuple[int, Refusal | None]:
        """Lex from spliced index `start` to the end, recording directives; return (where it stopped, the
        first refusal or None).

        skipped: read pp-numbers as NVRTC does in a skipped group (a `'` after digits opens a character
        literal), instead of as in live code and directives. probe: lex the rest of one line only, recording
        nothing, and return the index where the next line starts (after a newline, or after a comment
        spanning lines outside a directive), so that two readings of a digit separator can be compared.
        """
        s, n, i = self.s, len(self.s), start
        checked_to = -1  # both readings of digit separators agree up to here
        while i < n:
            c = s[i]
            if c == "\n":
                i += 1
                if probe:
                    return i, None
                line_start, in_directive = True, False
            elif c in " \t\f\v":
                i += 1
            elif s.startswith("//", i):
                end = s.find("\n", i)
                i = n if end < 0 else end
            elif s.startswith("/*", i):
                end = s.find("*/", i + 2)
                if end < 0:
                    return i, (self.line(i), "/*", "unterminated comment")
                if not in_directive and s.find("\n", i, end) >= 0:
                    if probe:
                        return end + 2, None
                    line_start = True  # NVRTC: a comment spanning lines ends the line, outside a directive
                i = end + 2
            elif s.startswith(_PASTES, i):
                token = next(p for p in _PASTES if s.startswith(p, i))
                return i, (self.line(i), token, ("token pasting is not allowed in a submission (it can build "
                                                 "`__has_include`); write the names out"))
            elif s.startswith("??", i) and s[i + 2 : i + 3] in _TRIGRAPH_ENDS:
                return i, (self.line(i), s[i : i + 3], "trigraphs are not allowed in a submission")
            elif c == "#" or s.startswith("%:", i):
                width = 1 if c == "#" else 2
                if line_start and not probe:
                    i, refusal = self.directive(i, width)
                    if refusal:
                        return i, refusal
                    in_directive = True
                else:
                    i += width
                line_start = False
            elif c == "\\":
                return i, self.backslash(i)
            elif c in "\"'":
                end = self.literal(i, c)
                if c == "'" and s[end - 1] == "'" and end - 1 > i and _IDENT.match(s, end):
                    # NVRTC takes a suffix after some character literals and not after others ('' or too
                    # long), so `''R"(` may or may not open a raw string.
                    return i, (self.line(i), s[i:end] + _IDENT.match(s, end).group(0), (
                        "a name right after a character literal (a user-defined-literal suffix) is not allowed "
                        "in a submission"))
                i = self.suffix(end)
                line_start = False
            elif _RAW_PREFIX.match(s, i):
                end, refusal = self.raw_string(i, _RAW_PREFIX.match(s, i).end())
                if refusal:
                    return i, refusal
                i = self.suffix(end)
                line_start = False
            elif (m := (_PP_NUMBER_SKIPPED if skipped else _PP_NUMBER).match(s, i)):
                if not skipped and _LOOSE_SEPARATOR.search(m.group(0)):
                    return i, (self.line(i), m.group(0), (
                        "a digit separator (') must stand between digits: NVRTC reads a number followed by a "
                        "quote one way in code, another in directives and a third in `#if 0` groups"))
                if "'" in m.group(0) and not probe and i >= checked_to:
                    checked_to, refusal = self.separator_readings(i, in_directive)
                    if refusal:
                        return i, refusal
                i = m.end()
                line_start = False
            elif (m := _IDENT.match(s, i)):
                word = m.group(0)
                if s.startswith(("\"", "'"), m.end()) and word in ("u8", "u", "U", "L"):
                    i = m.end()  # an encoding prefix: the literal follows
                    continue
                if word in FORBIDDEN_IDENTIFIERS:
                    return i, (self.line(i), word, "`__has_include` and its kind probe files on the grading machine")
                i = m.end()
                line_start = False
            else:
                i += 1
                line_start = False
        return n, None

    def separator_readings(self, at: int, in_directive: bool) -> tuple[int, Refusal | None]:
        """Lex the rest of the line from the pp-number at `at` as NVRTC does in live code (or a live
        directive) and as it does in a skipped group, where the `'` opens a character literal; return where
        both end, or a refusal when they end apart or either refuses."""
        end_live, refusal = self.run(at, probe=True, line_start=False, in_directive=in_directive)
        if refusal:
            return at, refusal
        end_skipped, refusal = self.run(at, skipped=True, probe=True, line_start=False, in_directive=in_directive)
        if refusal:
            return at, refusal
        if end_live != end_skipped:
            m = _PP_NUMBER.match(self.s, at)
            return at, (self.line(at), m.group(0), (
                "NVRTC reads a digit separator as a character literal's quote in an `#if 0` group, and on this "
                "line that changes where a comment or literal ends; use no digit separator here, or end the "
                "comment on this line"))
        return end_live, None

    def backslash(self, at: int) -> Refusal:
        """The refusal for a backslash outside a literal or comment at spliced index `at`."""
        s = self.s
        blank = _BLANK.match(s, at + 1)
        if blank and (blank.end() == len(s) or s[blank.end()] == "\n"):
            return self.line(at), "\\", ("a backslash followed by spaces or tabs at a line's end: NVRTC does not "
                                         "join the lines; delete the blanks after the backslash")
        if s[at + 1 : at + 2] in ("u", "U"):
            return self.line(at), s[at : at + 2], "universal character names are not allowed outside literals"
        return self.line(at), "\\", "a backslash outside a string, character literal or comment"

    def directive(self, at: int, width: int) -> tuple[int, Refusal | None]:
        """Read the directive whose `#` is at `at`; return where lexing goes on, and a refusal if any."""
        s = self.s
        j = self.skip_gap(at + width)
        m = _IDENT.match(s, j)
        eol = s.find("\n", j)
        eol = len(s) if eol < 0 else eol
        name = m.group(0) if m else s[j : j + 1] if j < eol else ""
        after = m.end() if m else min(j + 1, eol)
        self.directives.append(Directive(self.line(at), self.offset(at), name, s[after:eol]))
        if m is None:
            if j >= eol:
                return j, None  # the null directive
            if s[j].isdigit():
                return at, (self.line(at), s[at : j + 1].strip(), "line markers are not allowed in a submission")
            return at, (self.line(at), s[at : j + 1], "not a directive a submission may use")
        if name in ALLOWED_DIRECTIVES:
            return m.end(), None
        if name == "include":
            rest = s[m.end() : eol]
            inc = _ALLOWED_INCLUDE.match(rest)
            if inc and inc.group(1) in self.allowed and "/*" not in rest[: inc.start(1)]:
                # Blank from the `#` to the line's end only: text before the `#` (a comment's `*/`) stays.
                self.blank_spans.append((self.offset(at), self.offset(eol)))
                return eol, None
        return at, (self.line(at), f"{s[at:at + width]}{name}", (
            self.include_refusal() if name in ("include", "include_next", "import", "embed")
            else f"the directive `{name}` is not allowed in a submission"))

    def include_refusal(self) -> str:
        """Why an include is refused: the exercise's allow-list, or the whole program's (grader.program)."""
        if self.allowed == ALLOWED_INCLUDES:
            return (f"the exercise needs no header; only {', '.join(sorted(ALLOWED_INCLUDES))} may be included, "
                    "each as a plain #include line")
        return ("the grader reads no header: a program may include only standard C and C++ headers and the CUDA "
                "runtime's (cstdio, vector, cuda_runtime.h, ...: PROGRAM_INCLUDES in grader/directives.py), each as "
                "a plain #include line, and they are never read; paste what the kernel needs from any other header "
                "into the file")

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
        """End of the string or character literal opened at `at`: after its closing quote, or at the line's
        end when it has none (NVRTC reports it and goes on with the next line). An escape never takes a
        newline, so a backslash that ends the line (left by `\\\\` before a splice) does not continue it."""
        s, j, n = self.s, at + 1, len(self.s)
        while j < n and s[j] != "\n":
            if s[j] == "\\" and j + 1 < n and s[j + 1] != "\n":
                j += 2
                continue
            if s[j] == quote:
                return j + 1
            j += 1
        return j

    def suffix(self, end: int) -> int:
        """After a string literal ending at `end`: the end of its user-defined-literal suffix (`""R` is a
        string with suffix R for NVRTC, so `""R"(` starts no raw string), or `end` when it has none."""
        m = _IDENT.match(self.s, end)
        return m.end() if m and end > 0 and self.s[end - 1] == '"' else end

    def raw_string(self, at: int, body: int) -> tuple[int, Refusal | None]:
        """End of the raw string literal whose prefix is at `at` and whose delimiter starts at `body`."""
        s = self.s
        open_paren = s.find("(", body)
        delim = s[body:open_paren] if open_paren >= 0 else ""
        if open_paren < 0 or len(delim) > 16 or any(ch in delim for ch in " ()\\\t\v\f\n"):
            return at, (self.line(at), s[at:body], "malformed raw string literal")
        end = s.find(")" + delim + '"', open_paren + 1)
        if end < 0:
            return at, (self.line(at), s[at:body], "unterminated raw string literal")
        end += len(delim) + 2
        k = bisect.bisect_right(self.splices, at)
        if k < len(self.splices) and self.splices[k] < end:
            # NVRTC undoes some splices inside a raw string and not others: where it ends is not certain.
            return at, (self.line(at), s[at:body], "a line splice (a backslash ending a line) inside a raw string "
                                                   "literal is not allowed in a submission")
        return end, None
