"""The include policy over the C preprocessor's first phases, so no include form reaches NVRTC.

NVRTC reads an absolute `#include` from disk and echoes the file's lines in its log (and a stringizing macro
can print a whole included file inside an error message), so the grader must be sure that NVRTC opens no
file. Text filters are bypassed by line splices, comments between `#` and the keyword, strings holding
`/*`, carriage returns, digit separators and macro tricks. Instead the text is read as the compiler reads
it, in order (C++17 [lex.phases]), and where NVRTC departs from the standard as NVRTC reads it (each rule
was checked against NVRTC 13 with an `#warning` canary; tests/test_directives.py holds one case each).
grader.source.lexer does the reading, for every reader of a submission:

1. line endings: CR LF and lone CR become LF (NVRTC treats CR as a line end or a blank, and a filter that
   does not know that is bypassed); a UTF-8 byte order mark is dropped;
2. line splices: a backslash right before a newline is removed. A backslash followed by blanks and then a
   newline is no splice for NVRTC (it warns and ends the line there), so it is none here either;
3. tokens: comments, string and character literals (raw strings too, and a user-defined-literal suffix
   such as the `R` of `""R`, which therefore starts no raw string), pp-numbers and identifiers (ASCII only:
   NVRTC calls any other character an unrecognized token) are units, so a `#` or `/*` inside one of them
   is never mistaken for code. An escape does not reach over a newline: a literal whose last character is
   a backslash ends at the line's end, as NVRTC's does.

This module is the policy over those tokens.

A `#` or `%:` that is the first token of a line starts a directive. For NVRTC a comment that spans lines
also starts a new line (`int x; /*` newline `*/ #include` is a directive), except inside a directive.
Allowed: define, undef, if, ifdef, ifndef, elif, else, endif, pragma, error, warning and the null directive;
an `#include` of an allow-listed header on a plain line (`<name>` or `"name"`, then only blanks and
comments that close on the line; its text is blanked from the `#` to the line's end, so a comment closing
before it on that line stays closed: nothing is read); everything else (include, include_next,
import, embed, line, a line marker `# 1 "file"`, unknown names) is refused. Anywhere in code,
`__has_include`, `__has_include_next` and `__has_embed` are refused, and so is token pasting (`##`,
`%:%:`, and `#%:`, `%:#`, looked for at every character of punctuation), which can build them. The
directives nvcc's preprocessor honours and NVRTC ignores (`#pragma push_macro`, a `_Pragma` not written out, a
`#` in an `#if`, ...) are refused by grader.source.pragmas' rules, which this lexer calls where it reads a `#pragma`,
a `_Pragma` or a `#` inside a directive.

Refused too, because NVRTC reads them in ways a lexer cannot follow exactly, and no working submission needs
them: a backslash outside a literal or comment (a stray one, one followed by blanks at a line's end, or a
universal character name such as `\\u0041` in code: NVRTC makes `\\uR` an identifier, so `\\uR"(` starts
no raw string); a malformed raw string (a delimiter over 16 characters or with a character NVRTC calls
invalid there, such as `$`: grader.source.lexer's BAD_RAW), an unterminated one, and a line splice inside one; a
name right after a character literal (NVRTC takes it as a suffix after `'a'` but not after `''`);
trigraphs; and digit separators that NVRTC could read in more than one way. NVRTC takes the `'` after a number's digits
into the number in live code
(`1'+'/*'` holds no comment there, and `1e'+` goes on as an exponent), only before a digit or letter in a
live directive, and never in a skipped group (`#if 0`), where it opens a character literal. So a `'` after
a number that is not followed by a digit, letter or `_` is refused, and since which groups are skipped is
not known here, a line holding a digit separator is accepted only when its live reading and its skipped
reading end at the same place and neither finds a refused construct (`1'000'000;`, with or without a
comment closed on the same line, is fine).

The text NVRTC compiles is exactly the text scanned here (grader.source.read compiles `normalized`).
`Scan.directives` lists every directive the lexer saw, which is how benchmarks/fuzz_lexer.py compares
this lexer with NVRTC. Linear in the text's length.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from grader.source.lexer import (
    BAD_RAW,
    BLANK,
    CHAR,
    COMMENT,
    IDENT,
    LITERALS,
    NEWLINE,
    NUMBER,
    OPEN_COMMENT,
    OPEN_RAW,
    OTHER,
    PUNCT,
    RAW,
    STRING,
    Spliced,
    Token,
    literal_quote,
    normalize,
    token_at,
)
from grader.source.pragmas import ASSERTION_REFUSAL, name_refusal, pragma_operator_refusal, pragma_refusal

ALLOWED_INCLUDES = frozenset({"cuda_runtime.h", "cuda.h", "stdint.h", "cstdint", "math.h", "cmath", "float.h",
                              "cfloat", "limits.h", "climits"})
"""Headers a student may name. NVRTC has their contents built in (math functions, size_t) or the grader's
prelude supplies them (fixed-width integers, M_PI, INFINITY, FLT_MAX, INT_MAX, ...: grader.source.read.prelude),
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
"""Headers a whole program may name besides ALLOWED_INCLUDES (grader.source.program): host-only headers of the C and
C++ standard libraries and the CUDA runtime API. Each is blanked like the others, never read; the kernel
extracted from the program cannot use what they declare (`std::` names, `printf` is NVRTC's own). Headers
whose contents device code needs (cuda_fp16.h, cooperative_groups.h, curand_kernel.h) are not here."""

ALLOWED_DIRECTIVES = frozenset({"define", "undef", "if", "ifdef", "ifndef", "elif", "else", "endif",
                                "pragma", "error", "warning"})
FORBIDDEN_IDENTIFIERS = frozenset({"__has_include", "__has_include_next", "__has_embed"})

_PASTES = ("%:%:", "##", "#%:", "%:#")
_HASHES = ("#", "%:")
_TRIGRAPH_ENDS = frozenset("=/'()!<>-")
_HEADER_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.")

Refusal = tuple[int, str, str]


@dataclass(frozen=True)
class Directive:
    """One directive as the lexer saw it.

    line: 1-based line of its `#` (or `%:`) in the normalized text; offset: that character's index in the
    normalized text; name: the directive's name ('define', 'include', ...), '' for the null directive, or
    the token that stood where a name should be (a line marker's number, `##`); text: the rest of its logical
    line after the name, splices removed (for `#warning X`, ' X'); header: for an allowed `#include`, the
    header it names ('cstdio'), else ''.
    """

    line: int
    offset: int
    name: str
    text: str
    header: str = ""


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


def scan(text: str, allowed: frozenset[str] = ALLOWED_INCLUDES) -> Scan:
    """Scan `text` (any line endings) and return its normalized form with allowed includes blanked, or the
    first refused construct with its 1-based line in the normalized text. Never raises for any input text.
    Linear in the length of `text`.

    allowed: the header names an `#include` may name (ALLOWED_INCLUDES; grader.source.program passes
    PROGRAM_INCLUDES for a whole program). Every other include form is refused whatever `allowed` holds."""
    text = normalize(text)
    lexer = _Lexer(text, allowed)
    stop, refusal = lexer.run(0)
    if refusal:
        return Scan(refusal=refusal, directives=lexer.directives, listed_before=min(refusal[0], lexer.line(stop)))
    pieces: list[str] = []
    blanked: set[int] = set()
    pos = 0
    for start, end in lexer.blank_spans:
        pieces += [text[pos:start], "\n".join(" " * len(part) for part in text[start:end].split("\n"))]
        pos = end
        blanked.update(range(lexer.src.text_line(start), lexer.src.text_line(max(start, end - 1)) + 1))
    pieces.append(text[pos:])
    return Scan(normalized="".join(pieces), blanked=sorted(blanked), directives=lexer.directives)


class _Lexer:
    """The include policy over the tokens of the spliced text (grader.source.lexer): `src` maps their indices
    back to the normalized text's offsets and lines."""

    def __init__(self, text: str, allowed: frozenset[str] = ALLOWED_INCLUDES) -> None:
        self.allowed = allowed
        self.src = Spliced(text)
        self.s = self.src.s
        self.blank_spans: list[tuple[int, int]] = []
        self.directives: list[Directive] = []

    def line(self, at: int) -> int:
        return self.src.line(at)

    def offset(self, at: int) -> int:
        return self.src.offset(at)

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
            tok = token_at(s, i, skipped=skipped)
            kind = tok.kind
            if kind == NEWLINE or (kind == COMMENT and not in_directive and s.find("\n", i, tok.end) >= 0):
                if probe:  # NVRTC: a comment spanning lines ends the line too, outside a directive
                    return tok.end, None
                line_start, in_directive = True, False
            elif kind == OPEN_COMMENT:
                return i, (self.line(i), "/*", "unterminated comment")
            elif kind not in (BLANK, COMMENT):
                refused = self.refused(tok, skipped)
                if refused:
                    return refused
                if line_start and not probe and kind == PUNCT and tok.text(s) in _HASHES:
                    i, refusal = self.directive(i, tok.end - i)
                    if refusal:
                        return i, refusal
                    line_start, in_directive = False, True
                    continue
                if in_directive and not probe and kind == PUNCT and tok.text(s) in _HASHES \
                        and self.directives[-1].name in ("if", "elif"):
                    return i, (self.line(i), tok.text(s), ASSERTION_REFUSAL)  # grader.source.pragmas
                if kind == NUMBER and "'" in tok.text(s) and not probe and i >= checked_to:
                    checked_to, refusal = self.separator_readings(i, in_directive)
                    if refusal:
                        return i, refusal
                line_start = False
            i = tok.end
        return n, None

    def refused(self, tok: Token, skipped: bool) -> tuple[int, Refusal] | None:
        """Where in a token of code (not a blank or comment) a refused construct starts, and the refusal;
        None when the token is not refused."""
        s, at, kind = self.s, tok.start, tok.kind
        text = tok.text(s)
        if kind == PUNCT:
            return self.punctuator(tok)
        if kind == OTHER:
            return (at, self.backslash(at)) if text == "\\" else None
        if kind == IDENT:
            word = text.split("\\", 1)[0]
            if word in FORBIDDEN_IDENTIFIERS:
                return at, (self.line(at), word, "`__has_include` and its kind probe files on the grading machine")
            if word == "_Pragma" and (why := pragma_operator_refusal(s, tok.end)):
                return at, (self.line(at), word, why)  # grader.source.pragmas
            if why := name_refusal(word):
                return at, (self.line(at), word, why)  # grader.source.pragmas
            return (at + len(word), self.backslash(at + len(word))) if len(word) < len(text) else None
        if kind == CHAR and tok.suffix not in (-1, tok.end):
            # NVRTC takes a suffix after some character literals and not after others ('' or too long), so
            # `''R"(` may or may not open a raw string.
            quote = literal_quote(s, tok)
            return quote, (self.line(quote), s[quote : tok.end], (
                "a name right after a character literal (a user-defined-literal suffix) is not allowed in a "
                "submission"))
        if kind in (RAW, BAD_RAW, OPEN_RAW):
            refusal = self.raw_refusal(tok)
            return (at, refusal) if refusal else None
        if kind == NUMBER and not skipped and _loose_separator(text):
            return at, (self.line(at), text, (
                "a digit separator (') must stand between digits: NVRTC reads a number followed by a quote one "
                "way in code, another in directives and a third in `#if 0` groups"))
        return None

    def punctuator(self, tok: Token) -> tuple[int, Refusal] | None:
        """Where token pasting (`##`, `%:%:`, `#%:`, `%:#`) or a trigraph starts in a punctuator, and its
        refusal; None when there is none."""
        s, at = self.s, tok.start
        # Looked for at every character, as if punctuators were read one character at a time: `<%:%:` is
        # `<%` `:` `%:` by maximal munch, and refused all the same.
        for k in range(at, tok.end):
            paste = next((p for p in _PASTES if s.startswith(p, k)), None)
            if paste:
                return k, (self.line(k), paste, ("token pasting is not allowed in a submission (it can build "
                                                 "`__has_include`); write the names out"))
        if s.startswith("??", at) and s[at + 2 : at + 3] in _TRIGRAPH_ENDS:
            return at, (self.line(at), s[at : at + 3], "trigraphs are not allowed in a submission")
        return None

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
            return at, (self.line(at), token_at(self.s, at).text(self.s), (
                "NVRTC reads a digit separator as a character literal's quote in an `#if 0` group, and on this "
                "line that changes where a comment or literal ends; use no digit separator here, or end the "
                "comment on this line"))
        return end_live, None

    def backslash(self, at: int) -> Refusal:
        """The refusal for a backslash outside a literal or comment at spliced index `at`."""
        s = self.s
        after = token_at(s, at + 1) if at + 1 < len(s) else None
        if after and after.kind == BLANK and (after.end == len(s) or s[after.end] == "\n"):
            return self.line(at), "\\", ("a backslash followed by spaces or tabs at a line's end: NVRTC does not "
                                         "join the lines; delete the blanks after the backslash")
        if s[at + 1 : at + 2] in ("u", "U"):
            return self.line(at), s[at : at + 2], "universal character names are not allowed outside literals"
        return self.line(at), "\\", "a backslash outside a string, character literal or comment"

    def directive(self, at: int, width: int) -> tuple[int, Refusal | None]:
        """Read the directive whose `#` is at `at`; return where lexing goes on, and a refusal if any."""
        s = self.s
        j = self.skip_gap(at + width)
        eol = s.find("\n", j)
        eol = len(s) if eol < 0 else eol
        word = self.name_at(j) if j < eol else ""
        name = (word or s[j : j + 1]) if j < eol else ""
        after = j + len(word) if word else min(j + 1, eol)
        header = self.include_header(after, eol) if word == "include" else ""
        self.directives.append(Directive(self.line(at), self.offset(at), name, s[after:eol], header))
        if not word:
            if j >= eol:
                return j, None  # the null directive
            if s[j].isdigit():
                return at, (self.line(at), s[at : j + 1].strip(), "line markers are not allowed in a submission")
            return at, (self.line(at), s[at : j + 1], "not a directive a submission may use")
        if name == "pragma" and (found := pragma_refusal(s, after)):
            return at, (self.line(at), f"{s[at:at + width]}pragma {found[0]}", found[1])  # grader.source.pragmas
        if name in ALLOWED_DIRECTIVES:
            return after, None
        if header:
            # Blank from the `#` to the line's end only: text before the `#` (a comment's `*/`) stays.
            self.blank_spans.append((self.offset(at), self.offset(eol)))
            return eol, None
        return at, (self.line(at), f"{s[at:at + width]}{name}", (
            self.include_refusal() if name in ("include", "include_next", "import", "embed")
            else f"the directive `{name}` is not allowed in a submission"))

    def name_at(self, j: int) -> str:
        """The ASCII name that starts at spliced index `j`: an identifier up to any backslash in it, or a
        literal's encoding prefix (`u8` of `u8"x"`, `R` of `R"(`); '' when no name starts there."""
        tok = token_at(self.s, j)
        if tok.kind == IDENT:
            return tok.text(self.s).split("\\", 1)[0]
        return self.s[j : literal_quote(self.s, tok)] if tok.kind in LITERALS else ""

    def include_header(self, after: int, eol: int) -> str:
        """The header an `#include` names on its line, from spliced index `after` (past `include`) to `eol`,
        when the line is a plain one (blanks, `<name>` or `"name"`, then blanks and comments that close on
        the line) and the name is allowed; else ''."""
        s, i, toks = self.s, after, []
        while i < eol:
            tok = token_at(s, i)
            if tok.end > eol:  # a comment or literal that goes on past the line
                return ""
            toks.append(tok)
            i = tok.end
        k = 1 if toks and toks[0].kind == BLANK else 0
        if k == len(toks):
            return ""
        first = toks[k]
        if first.kind == STRING and s[first.start] == '"' and first.suffix == first.end:
            name, rest = s[first.start + 1 : first.end - 1], toks[k + 1 :]
        elif first.kind == PUNCT and first.text(s) == "<":
            close = next((m for m in range(k + 1, len(toks)) if toks[m].text(s) == ">"), None)
            if close is None:
                return ""
            name, rest = s[first.end : toks[close].start], toks[close + 1 :]
        else:
            return ""
        plain = name and set(name) <= _HEADER_CHARS and all(t.kind in (BLANK, COMMENT) for t in rest)
        return name if plain and name in self.allowed else ""

    def include_refusal(self) -> str:
        """Why an include is refused: the exercise's allow-list, or the whole program's (grader.source.program)."""
        if self.allowed == ALLOWED_INCLUDES:
            return (f"the exercise needs no header; only {', '.join(sorted(ALLOWED_INCLUDES))} may be included, "
                    "each as a plain #include line")
        return ("the grader reads no header: a program may include only standard C and C++ headers and the CUDA "
                "runtime's (cstdio, vector, cuda_runtime.h, ...: PROGRAM_INCLUDES in grader/source/includes.py), "
                "each as a plain #include line, and they are never read; paste what the kernel needs from any other "
                "header into the file")

    def skip_gap(self, j: int) -> int:
        """Past the blanks and block comments (closed or not) from spliced index `j`."""
        while j < len(self.s):
            tok = token_at(self.s, j)
            if not (tok.kind in (BLANK, OPEN_COMMENT) or (tok.kind == COMMENT and self.s.startswith("/*", j))):
                break
            j = tok.end
        return j

    def raw_refusal(self, tok: Token) -> Refusal | None:
        """The refusal of a raw string literal: malformed, unterminated, or holding a line splice; else None."""
        at, body = tok.start, literal_quote(self.s, tok) + 1
        if tok.kind == BAD_RAW:
            return self.line(at), self.s[at:body], "malformed raw string literal"
        if tok.kind == OPEN_RAW:
            return self.line(at), self.s[at:body], "unterminated raw string literal"
        k = bisect.bisect_right(self.src.splices, at)
        if k < len(self.src.splices) and self.src.splices[k] < tok.suffix:
            # NVRTC undoes some splices inside a raw string and not others: where it ends is not certain.
            return self.line(at), self.s[at:body], ("a line splice (a backslash ending a line) inside a raw "
                                                    "string literal is not allowed in a submission")
        return None


def _loose_separator(number: str) -> bool:
    """Whether a pp-number holds a `'` that no digit, letter or `_` follows."""
    return any(ch == "'" and not (k + 1 < len(number) and (number[k + 1].isascii() and number[k + 1].isalnum()
                                                          or number[k + 1] == "_"))
               for k, ch in enumerate(number))
