"""Part of stage 1, source: the C preprocessor's first phases and C++ preprocessing tokens, as NVRTC reads them.

The one tokenizer of a submission's text. Every reader of C source reads its tokens: the include policy
(grader.source.includes), the whole-program tokens the extractor splits (grader.source.program_tokens), the parameter
list as written (grader.source.signature), the comments the student's claims are read from (grader.source.claims) and
the lines of the `// grade:` block (grader.source.contract: none inside a literal or a block comment).

The phases (C++17 [lex.phases]):

1. `normalize`: a UTF-8 byte order mark is dropped; CR LF and a lone CR become LF (NVRTC treats a CR as a
   line end or a blank; a reader that does not know that is bypassed).
2. `Spliced`: line splices (a backslash right before a newline) are removed, with the map back from the
   spliced text to the file's offsets, lines and columns.
3. `token_at` / `tokens`: the spliced text as a list of tokens that cover it with no gap: newlines, blanks,
   comments, string, character and raw string literals (encoding prefixes `u8 u U L`, user-defined-literal
   suffixes: `"a"_x`, `""R`), pp-numbers with digit separators (`1'000'000`, `0x1p-3`, `1.5_km`),
   identifiers, punctuators (maximal munch, digraphs `<% %> <: :> %: %:%:`, the `<::` rule), and single
   characters that are none of these.

Where NVRTC departs from the standard it is followed here (each measured with NVRTC 13; tests/test_lexer.py
and tests/test_directives.py hold a case each):

- a backslash followed by blanks and then a newline is no splice (NVRTC warns and ends the line there);
- an identifier is ASCII letters, digits and `_` (NVRTC calls any other character an unrecognized token),
  and `\\u` or `\\U` joins an identifier whatever follows: NVRTC reads `\\uR` and the malformed `\\u00R` as
  one identifier, so `\\uR"(` starts no raw string;
- an escape never takes a newline: a literal whose line ends (a backslash last, left by `\\\\` before a
  splice, included) ends there, unclosed, as NVRTC's does;
- in code a `'` after a pp-number's first digit is a digit separator whatever follows (`1'+'` is one
  number, and `1e'+5` goes on as an exponent), while in a group the preprocessor skips (`#if 0`) it never
  is: there it opens a character literal (`skipped=True`). The include policy refuses the texts on which
  the two readings (and a directive's, which takes a `'` only before a digit, letter or `_`) differ;
- a raw string's delimiter holds at most 16 characters of the basic source character set but space, `(`,
  `)`, `\\`, tab, vertical tab, form feed and newline; `"` and `'` are allowed (`R"a"b( ... )a"b"`, which
  NVRTC and g++ accept). NVRTC reports "invalid character in raw string delimiter" for any other character
  (`$`, `@`, non-ASCII); such a raw string is BAD_RAW here.

Every function is linear in the length of the text.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterator
from typing import NamedTuple

NEWLINE, BLANK, COMMENT, STRING, CHAR, RAW, NUMBER, IDENT, PUNCT, OTHER = (
    "newline", "blank", "comment", "string", "char", "raw", "number", "ident", "punct", "other")
OPEN_COMMENT, OPEN_RAW, BAD_RAW = "open-comment", "open-raw", "bad-raw"
"""Token kinds. COMMENT is `// ...` (to the line's end) or a closed `/* ... */`; OPEN_COMMENT a `/*` with no
`*/` (to the end of the text); STRING and CHAR run from the encoding prefix to the closing quote and its
suffix, or to the line's end when unclosed; RAW a closed raw string with its suffix; OPEN_RAW a raw string
with no closing `)delim"` (to the end of the text); BAD_RAW the prefix and quote of a raw string whose
delimiter is malformed (over 16 characters, or one not allowed, before its `(`), the text after it lexed
again; OTHER one character that starts no token (a stray backslash, `$`, `@`, a non-ASCII character)."""

LITERALS = frozenset({STRING, CHAR, RAW, OPEN_RAW, BAD_RAW})
GAPS = frozenset({BLANK, COMMENT, OPEN_COMMENT})
"""Kinds that separate tokens without being one (comments count as blanks from phase 3 on)."""


class Token(NamedTuple):
    """One token of the spliced text `s`: kind (the constants above), start and end (indices in `s`);
    suffix: for a closed STRING, CHAR or RAW literal, where its user-defined-literal suffix starts (`end`
    when it has none), -1 for an unclosed literal; `end` for every other kind."""

    kind: str
    start: int
    end: int
    suffix: int

    def text(self, s: str) -> str:
        """The token's characters in the spliced text `s`."""
        return s[self.start : self.end]


_PUNCTUATORS = ("%:%:", "...", "->*", "<<=", ">>=", "::", "->", ".*", "++", "--", "<<", ">>", "<=", ">=", "==",
                "!=", "&&", "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "##", "<:", ":>", "<%", "%>",
                "%:")
"""C++17's multi-character punctuators, longest first (C++17 [lex.operators]; `<=>` is C++20)."""
_SUFFIX = r"(?:[A-Za-z_][A-Za-z0-9_]*)?"
_LITERAL = (r"(?P<string>(?:u8|[uUL])?\"(?:[^\"\\\n]+|\\.)*+\\?(?:(?P<sq>\")" + _SUFFIX + ")?)"
            r"|(?P<char>(?:u8|[uUL])?'(?:[^'\\\n]+|\\.)*+\\?(?:(?P<cq>')" + _SUFFIX + ")?)")
_PUNCT = (r"(?P<punct><(?=::(?![:>]))|" + "|".join(re.escape(p) for p in _PUNCTUATORS)
          + r"|[{}\[\]#()<>%:;.?*+\-/^&|~!=,])")


def _master(number: str) -> re.Pattern:
    return re.compile("|".join((
        r"(?P<newline>\n)", r"(?P<blank>[ \t\f\v]+)", r"(?P<line>//[^\n]*)", r"(?P<block>/\*)",
        r"(?P<raw>(?:u8|[uUL])?R\")", _LITERAL, rf"(?P<number>{number})",
        r"(?P<ident>(?:[A-Za-z_]|\\[uU])(?:[A-Za-z0-9_]+|\\[uU])*+)", _PUNCT, r"(?P<other>[\s\S])")))


# A pp-number: a digit (after a `.` or not), then letters, digits, `_`, `.`, an exponent's sign after e, E, p
# or P, and in code `'`. Here and in identifiers and literals, runs of characters in possessive loops (`*+`,
# which keep no backtracking state: a long token is matched in linear time).
_CODE = _master(r"\.?[0-9](?:[A-DF-OQ-Za-df-oq-z0-9_.]+|[eEpP][+-]?|')*+")
_SKIPPED = _master(r"\.?[0-9](?:[A-DF-OQ-Za-df-oq-z0-9_.]+|[eEpP][+-]?)*+")
_RAW_DELIMITER = re.compile(r"[A-Za-z0-9_{}\[\]#<>%:;.?*+\-/^&|~!=,\"']{0,16}\(")
_RAW_SUFFIX = re.compile(_SUFFIX)


def normalize(text: str) -> str:
    """Phase 1: drop a leading byte order mark; turn CR LF and lone CR into LF."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def token_at(s: str, i: int, *, skipped: bool = False) -> Token:
    """The token that starts at index `i` (< len(s)) of the spliced text `s`. skipped: read a pp-number as
    NVRTC does in a group the preprocessor skips (a `'` after it opens a character literal) instead of as in
    code."""
    m = (_SKIPPED if skipped else _CODE).match(s, i)
    kind = m.lastgroup
    end = m.end()
    if kind == "block":
        close = s.find("*/", i + 2)
        return Token(OPEN_COMMENT, i, len(s), len(s)) if close < 0 else Token(COMMENT, i, close + 2, close + 2)
    if kind == "raw":
        return _raw(s, i, end)
    if kind == "string" or kind == "char":
        quote = m.end("sq" if kind == "string" else "cq")
        return Token(STRING if kind == "string" else CHAR, i, end, quote if quote >= 0 else -1)
    return Token(COMMENT if kind == "line" else kind, i, end, end)


def _raw(s: str, i: int, body: int) -> Token:
    """The raw string whose prefix starts at `i` and whose delimiter starts at `body` (after the quote)."""
    m = _RAW_DELIMITER.match(s, body)
    if m is None:
        return Token(BAD_RAW, i, body, body)
    close = s.find(")" + s[body : m.end() - 1] + '"', m.end() - 1)
    if close < 0:
        return Token(OPEN_RAW, i, len(s), -1)
    quote = close + m.end() - body + 1
    return Token(RAW, i, _RAW_SUFFIX.match(s, quote).end(), quote)


def tokens(s: str, start: int = 0, *, skipped: bool = False) -> Iterator[Token]:
    """Every token of the spliced text `s` from index `start` on, in order, covering it with no gap."""
    i, n = start, len(s)
    while i < n:
        tok = token_at(s, i, skipped=skipped)
        yield tok
        i = tok.end


def literal_quote(s: str, tok: Token) -> int:
    """The index of a literal token's opening quote (after its encoding prefix and a raw string's `R`)."""
    return min(q for q in (s.find('"', tok.start, tok.end), s.find("'", tok.start, tok.end)) if q >= 0)


class Spliced:
    """Phase 2 of a normalized text (`normalize`): `s`, the text with every line splice (a backslash right
    before a newline) removed; `splices`, the indices of `s` where one was removed (sorted); and the maps
    from an index of `s` back to the text's offsets, lines and columns. A backslash followed by blanks
    before a newline is no splice (NVRTC's reading)."""

    def __init__(self, text: str) -> None:
        self.text = text
        pieces: list[str] = []
        self.splices: list[int] = []
        self._after: list[int] = [0]  # text offset where the piece after each splice starts
        pos = length = 0
        at = text.find("\\\n")
        while at >= 0:
            pieces.append(text[pos:at])
            length += at - pos
            pos = at + 2
            self.splices.append(length)
            self._after.append(pos)
            at = text.find("\\\n", pos)
        pieces.append(text[pos:])
        self.s = "".join(pieces)
        self._starts = [0, *self.splices]
        # the offset of every newline: each line's length, plus its newline, added up
        self.newlines = list(itertools.accumulate((len(line) + 1 for line in text.split("\n")[:-1]), initial=-1))[1:]

    def offset(self, k: int) -> int:
        """The index in the text of index k of `s` (len(text) for k == len(s))."""
        j = bisect.bisect_right(self._starts, k) - 1
        return self._after[j] + k - self._starts[j]

    def index(self, offset: int) -> int:
        """The index in `s` of the text's character at `offset` (of the character after it, for a splice's
        own backslash or newline)."""
        j = bisect.bisect_right(self._after, offset) - 1
        k = self._starts[j] + offset - self._after[j]
        return min(k, self._starts[j + 1]) if j + 1 < len(self._starts) else k

    def text_line(self, offset: int) -> int:
        """The 1-based line of the text's character at `offset`."""
        return bisect.bisect_left(self.newlines, offset) + 1

    def line(self, k: int) -> int:
        """The 1-based line in the text of index k of `s` (of its last character for k >= len(s))."""
        return self.text_line(self.offset(min(k, len(self.s) - 1))) if self.s else 1

    def column(self, k: int) -> int:
        """The 1-based column in its line of the text of index k of `s`."""
        at = self.offset(min(k, len(self.s) - 1)) if self.s else 0
        j = bisect.bisect_left(self.newlines, at)
        return at - (self.newlines[j - 1] + 1 if j else 0) + 1
