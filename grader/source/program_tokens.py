"""Part of stage 1, source: the tokens of a whole program, as grader.source.program splits it into declarations.

`Tokens` takes a submission's text after grader.source.includes' scan (normalized: LF line ends, no byte order
mark) and the offsets where that scan saw a directive, and gives:

- the text with line splices (backslash-newline) removed, `s`, and the maps between its indices and the
  file's (`offset`), and the file's lines (`line`, `tok_line`);
- four parallel token lists, `kinds` ('i' identifier, 'p' punctuator, 's' literal, 'n' number, 'd' a whole
  directive, its own tokens in `subs`), `texts`, `starts`, `ends` (positions in `s`), with comments and
  blanks dropped;
- the tokens of `#if` branches NVRTC certainly skips dropped (the conditional directives stay), and each
  token's `#if` branch node in `nodes`, so grader.source.program can tell alternatives apart.

The tokens are grader.source.lexer's, the same the include policy read, less comments and blanks; for the
splitter, punctuators other than `::` and `->` are given one character at a time (`>>` closes two template
argument lists, `<<<` opens a launch), and the bracket digraphs as their brackets (`<%` is `{`, `<:` is
`[`). Enough to split a program into declarations, not a C++ parser. Linear in the text's length.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from grader.source.lexer import GAPS, IDENT, LITERALS, NEWLINE, NUMBER, PUNCT, Spliced, Token, tokens

CONDITIONALS = frozenset({"if", "ifdef", "ifndef", "elif", "else", "endif", "elifdef", "elifndef"})
"""The conditional directives' names."""

_DIGRAPHS = {"<%": "{", "%>": "}", "<:": "[", ":>": "]"}


def _punctuator_pieces(text: str) -> list[tuple[str, int]]:
    """A punctuator as the splitter reads it, as (text, width in the source) pieces: `::`, `->` and `%:`
    whole, a bracket digraph as its bracket, anything else one character at a time (`->*` is `->` `*`,
    `<<=` is `<` `<` `=`)."""
    if text in _DIGRAPHS:
        return [(_DIGRAPHS[text], 2)]
    pieces, k = [], 0
    while k < len(text):
        width = 2 if text[k : k + 2] in ("::", "->", "%:") else 1
        pieces.append((text[k : k + width], width))
        k += width
    return pieces


def _pieces(s: str, tok: Token) -> Iterator[tuple[str, str, int, int]]:
    """(kind, text, start, end) of the splitter's tokens in one of grader.source.lexer's: kind 'i' identifier, 'p'
    punctuator (or any other character), 's' literal, 'n' number."""
    kind = tok.kind
    if kind == PUNCT and tok.end - tok.start > 1:
        at = tok.start
        for piece, width in _punctuator_pieces(tok.text(s)):
            yield "p", piece, at, at + width
            at += width
        return
    letter = "i" if kind == IDENT else "n" if kind == NUMBER else "s" if kind in LITERALS else "p"
    yield letter, tok.text(s), tok.start, tok.end


_NVRTC_PREDEFINED = frozenset({"__CUDACC__", "__CUDA_ARCH__", "__CUDACC_RTC__", "__cplusplus"})
"""Macros NVRTC defines with a nonzero value (checked with NVRTC 13). Its built-in headers define many more,
some without a leading underscore (CUDART_VERSION, NULL, assert): compiler_defines tells those."""


class Tokens:
    """The tokens of `text` (see the module's docstring). text: a scanned submission (grader.source.includes.Scan's
    `normalized`); directive_offsets: where that scan saw a directive (its `directives`' offsets).
    compiler_defines: asked which of the names the conditionals test NVRTC itself defines
    (grader.compile.predefined.nvrtc_defines; it answers None when it cannot tell); without it, or without an answer,
    no branch is decided on a name without a leading underscore. defined_before: names the grader's prelude
    defines for this file (never decided: grader.source.prelude.header_macro_names)."""

    def __init__(self, text: str, directive_offsets: Iterable[int],
                 compiler_defines: Callable[[frozenset[str]], frozenset[str] | None] | None = None,
                 defined_before: frozenset[str] = frozenset()) -> None:
        self.text = text
        self.compiler_defines, self.defined_before = compiler_defines, defined_before
        self.spliced = Spliced(text)
        self.s = self.spliced.s
        starts = {self.spliced.index(o) for o in directive_offsets if text.startswith(("#", "%:"), o)}
        self._tokenize(starts)
        self._live_tokens()

    # --- text positions ---------------------------------------------------------------------------------

    def offset(self, k: int) -> int:
        """The index in the text of spliced index k."""
        return self.spliced.offset(k)

    def line(self, offset: int) -> int:
        """The 1-based line of the text's character at `offset`."""
        return self.spliced.text_line(offset)

    def tok_line(self, t: int) -> int:
        """The 1-based line of token t in the student's file."""
        return self.line(self.offset(self.starts[t])) if self.starts else 1

    # --- tokens -------------------------------------------------------------------------------------------

    def _tokenize(self, directive_starts: set[int]) -> None:
        """Tokens of the spliced text: kind 'i' identifier, 'p' punctuator, 's' literal, 'n' number, 'd'
        directive (text: its name, '' for the null directive; its own tokens, (kind, text, start, end), in
        `subs`). Comments and blanks are dropped; a directive runs from its `#` to the end of its logical
        line (`directive_starts`: where grader.source.includes saw one)."""
        kinds: list[str] = []
        texts: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        subs: dict[int, list] = {}
        current: list | None = None
        for tok in tokens(self.s):
            if tok.kind in GAPS:
                continue
            if tok.kind == NEWLINE:
                current = None
                continue
            for piece in _pieces(self.s, tok):
                if current is None and piece[2] not in directive_starts:
                    kinds.append(piece[0])
                    texts.append(piece[1])
                    starts.append(piece[2])
                    ends.append(piece[3])
                elif current is None:  # a directive starts: one token to the end of its logical line
                    current = [piece]
                    subs[len(kinds)] = current
                    kinds.append("d")
                    texts.append("")
                    starts.append(piece[2])
                    ends.append(piece[3])
                else:
                    current.append(piece)
                    ends[-1] = piece[3]
        for t, sub in subs.items():
            texts[t] = sub[1][1] if len(sub) > 1 and sub[1][0] == "i" else ""
        self.kinds, self.texts, self.starts, self.ends, self.subs = kinds, texts, starts, ends, subs

    def _live_tokens(self) -> None:
        """Drop the tokens of the `#if` branches NVRTC certainly skips (see `_condition`), keeping the
        conditional directives themselves, and give every token the node of the `#if` branches around it
        (`self.nodes`, for telling alternatives apart)."""
        kinds, texts, subs = self.kinds, self.texts, self.subs
        self._known_names()
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
            self.kinds, self.texts = [kinds[t] for t in keep], [texts[t] for t in keep]
            self.starts, self.ends = [self.starts[t] for t in keep], [self.ends[t] for t in keep]
            self.subs = {k: subs[t] for k, t in enumerate(keep) if t in subs}
        self.nodes = nodes

    def _known_names(self) -> None:
        """The names the file's `#define`/`#undef` lines and the prelude give (`file_macros`), and which of
        the other names its conditionals test NVRTC defines itself (`compiler_defined`, None when not known)."""
        texts, subs = self.texts, self.subs
        self.file_macros = {sub[2][1] for t, sub in subs.items()
                            if texts[t] in ("define", "undef") and len(sub) > 2 and sub[2][0] == "i"}
        self.file_macros |= self.defined_before
        tested = frozenset(x[1] for t, sub in subs.items() if texts[t] in CONDITIONALS for x in sub[2:]
                           if x[0] == "i" and not x[1].startswith("_") and x[1] not in self.file_macros
                           and x[1] not in ("defined", "true", "false"))
        self.compiler_defined = (self.compiler_defines(tested) if self.compiler_defines else None) \
            if tested else frozenset()

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
            if len(words) == 1 and words[0] in ("0", "false", "1", "true"):
                return words[0] in ("1", "true")
            negate = words[:1] == ["!"]
            rest = sub[2 + negate :]
            shape = [x[1] if x[1] in ("defined", "(", ")") else x[0] for x in rest]
            if shape in (["i"], ["defined"]):
                name, bare = rest[0][1], True
            elif shape in (["defined", "i"], ["defined", "defined"], ["defined", "(", "i", ")"],
                           ["defined", "(", "defined", ")"]):
                name = rest[-1][1] if len(rest) == 2 else rest[2][1]
            else:
                return None
        if not name or name in self.file_macros:
            return None
        if name in _NVRTC_PREDEFINED:
            return not negate
        if name.startswith("_") or self.compiler_defined is None:
            return None
        if name in self.compiler_defined:
            return None if word not in ("ifdef", "ifndef", "elifdef", "elifndef") and bare else not negate
        return negate
