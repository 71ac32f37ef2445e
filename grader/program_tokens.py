"""Part of stage 1, source: the tokens of a whole program, as grader.program splits it into declarations.

`Tokens` takes a submission's text after grader.directives' scan (normalized: LF line ends, no byte order
mark) and the offsets where that scan saw a directive, and gives:

- the text with line splices (backslash-newline) removed, `s`, and the maps between its indices and the
  file's (`offset`), and the file's lines (`line`, `tok_line`);
- four parallel token lists, `kinds` ('i' identifier, 'p' punctuator, 's' literal, 'n' number, 'd' a whole
  directive, its own tokens in `subs`), `texts`, `starts`, `ends` (positions in `s`), with comments and
  blanks dropped;
- the tokens of `#if` branches NVRTC certainly skips dropped (the conditional directives stay), and each
  token's `#if` branch node in `nodes`, so grader.program can tell alternatives apart.

It knows comments, string, character and raw string literals, numbers with digit separators, digraphs and
preprocessor lines: enough to split a program into declarations, not a C++ lexer. Linear in the text's length.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable

CONDITIONALS = frozenset({"if", "ifdef", "ifndef", "elif", "else", "endif", "elifdef", "elifndef"})
"""The conditional directives' names."""

_TOKEN = re.compile("|".join((
    r"(?P<p1>[{}()\[\];,=*&+!?~^|>])",  # punctuators that start no longer token: the common case first
    r"(?P<nl>\n)",
    r"(?P<skip>[ \t\f\v]+|//[^\n]*|/\*[\s\S]*?\*/)",
    r'(?P<raw>(?:u8|u|U|L)?R"(?P<delim>[^()\\ \t\v\f\n"]{0,16})\([\s\S]*?\)(?P=delim)"(?:[A-Za-z_]\w*)?)',
    r'(?P<str>(?:u8|u|U|L)?"(?:[^"\\\n]|\\[^\n]|\\(?=\n))*(?:"(?:[A-Za-z_]\w*)?)?)',
    r"(?P<chr>(?:u8|u|U|L)?'(?:[^'\\\n]|\\[^\n]|\\(?=\n))*'?)",
    r"(?P<num>\.?[0-9](?:[eEpP][+-]|'|[A-Za-z0-9_.])*)",
    r"(?P<id>[A-Za-z_]\w*)",
    r"(?P<p>::|->|<%|%>|%:|[\s\S])",
)), re.ASCII)
_KIND = {"p1": "p", "raw": "s", "str": "s", "chr": "s", "num": "n", "id": "i", "p": "p"}

_NVRTC_PREDEFINED = frozenset({"__CUDACC__", "__CUDA_ARCH__", "__CUDACC_RTC__", "__cplusplus"})
"""Macros NVRTC defines with a nonzero value (checked with NVRTC 13). Its built-in headers define many more,
some without a leading underscore (CUDART_VERSION, NULL, assert): compiler_defines tells those."""
_DEFINED = re.compile(r"(! )?defined (?:\( (\w+) \)|(\w+))", re.ASCII)
_BARE_NAME = re.compile(r"(! )?()([A-Za-z_]\w*)", re.ASCII)


class Tokens:
    """The tokens of `text` (see the module's docstring). text: a scanned submission (grader.directives.Scan's
    `normalized`); directive_offsets: where that scan saw a directive (its `directives`' offsets).
    compiler_defines: asked which of the names the conditionals test NVRTC itself defines
    (grader.predefined.nvrtc_defines; it answers None when it cannot tell); without it, or without an answer,
    no branch is decided on a name without a leading underscore. defined_before: names the grader's prelude
    defines for this file (never decided: grader.prelude.header_macro_names)."""

    def __init__(self, text: str, directive_offsets: Iterable[int],
                 compiler_defines: Callable[[frozenset[str]], frozenset[str] | None] | None = None,
                 defined_before: frozenset[str] = frozenset()) -> None:
        self.text = text
        self.compiler_defines, self.defined_before = compiler_defines, defined_before
        self.newlines = [m.start() for m in re.finditer("\n", text)]
        self._splice_map()
        starts = {self._spliced_at(o) for o in directive_offsets if text.startswith(("#", "%:"), o)}
        self._tokenize(starts)
        self._live_tokens()

    # --- text positions ---------------------------------------------------------------------------------

    def _splice_map(self) -> None:
        """The text with line splices removed (`self.s`), and the segments that map its indices back."""
        pieces, self.seg_spliced, self.seg_text = [], [0], [0]
        pos = length = 0
        for m in re.finditer(r"\\\n", self.text):
            pieces.append(self.text[pos:m.start()])
            length += m.start() - pos
            pos = m.end()
            self.seg_spliced.append(length)
            self.seg_text.append(pos)
        pieces.append(self.text[pos:])
        self.s = "".join(pieces)

    def offset(self, k: int) -> int:
        """The index in the text of spliced index k."""
        j = bisect.bisect_right(self.seg_spliced, k) - 1
        return self.seg_text[j] + k - self.seg_spliced[j]

    def _spliced_at(self, offset: int) -> int:
        j = bisect.bisect_right(self.seg_text, offset) - 1
        return self.seg_spliced[j] + offset - self.seg_text[j]

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self.newlines, offset - 1) + 1

    def tok_line(self, t: int) -> int:
        """The 1-based line of token t in the student's file."""
        return self.line(self.offset(self.starts[t])) if self.starts else 1

    # --- tokens -------------------------------------------------------------------------------------------

    def _tokenize(self, directive_starts: set[int]) -> None:
        """Tokens of the spliced text: kind 'i' identifier, 'p' punctuator, 's' literal, 'n' number, 'd'
        directive (text: its name, '' for the null directive; its own tokens, (kind, text, start, end), in
        `subs`). Comments and blanks are dropped; a directive runs from its `#` to the end of its logical
        line (`directive_starts`: where grader.directives saw one)."""
        kinds: list[str] = []
        texts: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        subs: dict[int, list] = {}
        current: list | None = None
        kind_of = _KIND
        for m in _TOKEN.finditer(self.s):
            group = m.lastgroup
            if group == "skip":
                continue
            if group == "nl":
                current = None
                continue
            start, end = m.span()
            if current is None and start not in directive_starts:
                kinds.append(kind_of[group])
                texts.append(m.group())
                starts.append(start)
                ends.append(end)
                continue
            tok = (kind_of[group], m.group(), start, end)
            if current is None:  # a directive starts: one token to the end of its logical line
                current = [tok]
                subs[len(kinds)] = current
                kinds.append("d")
                texts.append("")
                starts.append(start)
                ends.append(end)
            else:
                current.append(tok)
                ends[-1] = end
        for t, sub in subs.items():
            texts[t] = sub[1][1] if len(sub) > 1 and sub[1][0] == "i" else ""
        self.kinds, self.texts, self.starts, self.ends, self.subs = kinds, texts, starts, ends, subs

    def _live_tokens(self) -> None:
        """Drop the tokens of the `#if` branches NVRTC certainly skips (see `_condition`), keeping the
        conditional directives themselves, and give every token the node of the `#if` branches around it
        (`self.nodes`, for telling alternatives apart)."""
        kinds, texts, starts, ends, subs = self.kinds, self.texts, self.starts, self.ends, self.subs
        self.file_macros = {sub[2][1] for t, sub in subs.items()
                            if texts[t] in ("define", "undef") and len(sub) > 2 and sub[2][0] == "i"}
        self.file_macros |= self.defined_before
        tested = frozenset(x[1] for t, sub in subs.items() if texts[t] in CONDITIONALS for x in sub[2:]
                           if x[0] == "i" and not x[1].startswith("_") and x[1] not in self.file_macros
                           and x[1] not in ("defined", "true", "false"))
        self.compiler_defined = (self.compiler_defines(tested) if self.compiler_defines else None) \
            if tested else frozenset()
        keep: list[int] = []
        nodes: list[tuple | None] = []
        stack: list[list] = []  # per group: [id, branch, taken, dead, node before the group]
        dead = groups = 0
        node = None
        for t in range(len(kinds)):
            if kinds[t] == "d" and texts[t] in CONDITIONALS:
                word = texts[t]
                outer = dead  # the groups around this directive's own group
                if word in ("if", "ifdef", "ifndef"):
                    known = self._condition(word, subs[t])
                    groups += 1
                    stack.append([groups, 0, known is True, known is False, node])
                    dead += known is False
                    node = (groups, 0, node)
                elif word == "endif":
                    if stack:
                        g = stack.pop()
                        dead -= g[3]
                        node = g[4]
                    outer = dead
                elif stack:
                    g = stack[-1]
                    outer = dead - g[3]
                    known = True if word == "else" else self._condition(word, subs[t])
                    now_dead = g[2] or known is False
                    g[2] = g[2] or known is True
                    g[1] += 1
                    dead += now_dead - g[3]
                    g[3] = now_dead
                    node = (g[0], g[1], g[4])
                if not outer:  # kept, taken or not, so the conditional structure stays whole
                    keep.append(t)
                    nodes.append(node)
            elif not dead:
                keep.append(t)
                nodes.append(node)
        if len(keep) != len(kinds):
            self.kinds = [kinds[t] for t in keep]
            self.texts = [texts[t] for t in keep]
            self.starts = [starts[t] for t in keep]
            self.ends = [ends[t] for t in keep]
            self.subs = {k: subs[t] for k, t in enumerate(keep) if t in subs}
        self.nodes = nodes

    def _condition(self, word: str, sub: list) -> bool | None:
        """The value of a conditional directive's condition where it is certain, else None: `0`, `1`, `false`,
        `true`; `#ifdef X`, `#ifndef X`, `defined(X)`, `!defined X`, and `#if X`, `#if !X`, for a macro X that
        NVRTC predefines (`__CUDACC__`, `__CUDA_ARCH__`, ...: defined, and nonzero; CUDART_VERSION, NULL, ...
        as compiler_defines says: defined, value unknown) or that nothing defines (a name without a leading
        `_` that no `#define` or `#undef` of the file names, the prelude does not define and NVRTC does not,
        as the grader passes no -D: not defined, and 0 in `#if`, as the preprocessor reads an unknown
        name)."""
        words = [x[1] for x in sub[2:]]
        negate, bare = word in ("ifndef", "elifndef"), False
        if word in ("ifdef", "ifndef", "elifdef", "elifndef"):
            name = words[0] if len(words) == 1 else ""
        else:
            text = " ".join(words)
            if text in ("0", "false", "1", "true"):
                return text in ("1", "true")
            m = _DEFINED.fullmatch(text) or _BARE_NAME.fullmatch(text)
            if not m:
                return None
            negate, name = bool(m.group(1)), m.group(2) or m.group(3)
            bare = m.re is _BARE_NAME
        if not name or name in self.file_macros:
            return None
        if name in _NVRTC_PREDEFINED:
            return not negate
        if name.startswith("_") or self.compiler_defined is None:
            return None
        if name in self.compiler_defined:
            return None if word not in ("ifdef", "ifndef", "elifdef", "elifndef") and bare else not negate
        return negate
