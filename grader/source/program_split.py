"""Part of stage 1, source: a whole program's tokens split into declarations, for grader.source.program.

`split` cuts grader.source.program_tokens.Tokens into `Decl`s at `;` or a function body's `}` at depth 0, opening a
namespace or `extern "C"` block and splitting inside it; a directive is a declaration of its own. It raises
`Unsplittable` where braces or parentheses do not balance or a declaration does not end (grader.source.program turns
that into a SubmissionError). Also here: the bracket matchers the declarator reader
(grader.source.program_declarators) uses. Not a C++ parser; linear in the number of tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

from grader.source.program_tokens import Tokens

__all__ = ["ATTRIBUTE_WORDS", "CLOSE", "OPEN", "Decl", "Unsplittable", "attribute_end", "matching_brace",
           "matching_paren", "skip_angles", "split"]

OPEN, CLOSE = ("{", "<%"), ("}", "%>")
"""A brace as the tokens spell it: itself, or its digraph."""

ATTRIBUTE_WORDS = frozenset({
    "__launch_bounds__", "__align__", "alignas", "__attribute__", "__declspec", "decltype", "sizeof", "alignof",
    "noexcept", "throw", "static_assert", "__maxnreg__", "__cluster_dims__", "requires", "operator",
})
"""Words followed by a parenthesis that is not a parameter list (so the word before it names no function)."""


class Unsplittable(Exception):
    """The tokens cannot be split into declarations: `token` is where, `what` says why."""

    def __init__(self, token: int, what: str) -> None:
        super().__init__(what)
        self.token, self.what = token, what


@dataclass(slots=True)
class Decl:
    """One declaration (or directive, or the opening or closing brace of a block) of the program: tokens
    first..last (inclusive) of the live token list. `split` sets the first seven fields; the declarator reader
    (grader.source.program_declarators) the rest."""

    first: int
    last: int
    kind: str  # 'function' (with a body) | 'declaration' (ends at ;) | 'directive' | 'open' | 'close'
    parent: int | None = None  # the enclosing block's 'open' declaration
    node: tuple | None = None  # the #if branches around it: (group, branch, parent node)
    body: int = -1  # 'function': the token of its body's `{`
    inside: int | None = None  # a directive inside another declaration: that declaration
    names: tuple[str, ...] = ()
    kind_name: str = ""  # Part.kind: 'kernel' | 'function' | 'variable' | 'macro' | 'type' | ''
    device: bool = False  # may be compiled by NVRTC (device code, a constant, a macro, a type)
    strict: bool = False  # device-only code: a host function it calls or host variable it reads is refused
    template: bool = False
    operator: bool = False
    close: int = -1  # 'open': its 'close' declaration
    block: str = ""  # 'open': 'namespace NAME', 'namespace' (anonymous) or 'extern "C"'
    directive: str = ""  # 'directive': its name
    target: str = ""  # `using namespace X;`, `using X::y;`, `#undef X`: X


def split(tokens: Tokens) -> list[Decl]:
    """The declarations of `tokens`, in order: each directive; each declaration ending at `;` at depth 0; each
    function definition (to its body's `}`); for a namespace or `extern "C"` block, an 'open' and a 'close'
    declaration around the declarations inside (Decl.parent, Decl.close link them). Raises Unsplittable."""
    return _Splitter(tokens).run()


class _Splitter:
    """One pass of `split`: `decls` so far, and `blocks`, the 'open' declarations not yet closed."""

    def __init__(self, tokens: Tokens) -> None:
        self.tokens = tokens
        self.kinds, self.texts, self.nodes = tokens.kinds, tokens.texts, tokens.nodes
        self.decls: list[Decl] = []
        self.blocks: list[int] = []

    def run(self) -> list[Decl]:
        kinds, texts = self.kinds, self.texts
        i, n = 0, len(kinds)
        while i < n:
            parent = self.blocks[-1] if self.blocks else None
            if kinds[i] == "d":
                self.decls.append(Decl(i, i, "directive", parent, self.nodes[i], directive=texts[i]))
                i += 1
            elif kinds[i] == "p" and texts[i] in CLOSE:
                i = self._close_block(i)
            elif kinds[i] == "p" and texts[i] == ";":
                i += 1
            else:
                i = self._declaration(i, parent)
        if self.blocks:
            raise Unsplittable(self.decls[self.blocks[-1]].first, "a block that is not closed")
        return self.decls

    def _close_block(self, i: int) -> int:
        """The `}` at token i closes the innermost block (with a `;` after it); the token after it."""
        if not self.blocks:
            raise Unsplittable(i, "a `}` that closes nothing")
        end = i + 1 if i + 1 < len(self.texts) and self.texts[i + 1] == ";" else i
        self.decls[self.blocks[-1]].close = len(self.decls)
        self.decls.append(Decl(i, end, "close", self.blocks.pop(), self.nodes[i]))
        return end + 1

    def _declaration(self, start: int, parent: int | None) -> int:
        """Read the declaration that starts at token `start` (a block's opening, a function definition, or
        one that ends at `;`) into decls; the token after it."""
        kinds, texts, n = self.kinds, self.texts, len(self.kinds)
        i, paren, eq, function, operator = start, 0, False, False, False
        namespace = texts[i] == "namespace" or (texts[i] == "inline" and i + 1 < n and texts[i + 1] == "namespace")
        while True:
            if i >= n:
                raise Unsplittable(start, "a declaration that does not end (a `;` or `}` missing)")
            t = texts[i]
            if kinds[i] == "p":
                if t == "(":
                    operator = False  # `operator+=(`: the name ends at its parameter list
                    if paren == 0 and i > start and not eq:
                        pt = texts[i - 1]
                        if (kinds[i - 1] == "i" and pt not in ATTRIBUTE_WORDS) or pt == ">":
                            function = True
                    paren += 1
                elif t == ")":
                    paren -= 1
                    if paren < 0:
                        raise Unsplittable(i, "a `)` that closes nothing")
                elif paren == 0:
                    if t == ";":
                        self.decls.append(Decl(start, i, "declaration", parent, self.nodes[start]))
                        return i + 1
                    if t == "=":
                        eq = eq or not operator  # not the `=` of `operator=`, `operator==`, `operator<=`
                    elif t in OPEN:
                        i, done = self._brace(start, i, parent, namespace, function and not eq)
                        if done:
                            return i
                    elif t in CLOSE:
                        raise Unsplittable(i, "a `}` inside a declaration")
            elif paren == 0 and t == "operator" and kinds[i] == "i":
                function = operator = True
            elif paren == 0 and t == "template" and kinds[i] == "i" and i + 1 < n and texts[i + 1] == "<":
                i = skip_angles(self.tokens, i + 1, n)  # `template <int N = 4>`: not the declaration's `=`, `>`
                continue
            i += 1

    def _brace(self, start: int, i: int, parent: int | None, namespace: bool, body: bool) -> tuple[int, bool]:
        """The `{` at token i of the declaration that starts at `start`: a block opens (namespace or
        `extern "C"`), a function body ends the declaration (`body`: a parameter list came, no `=`), or a
        class body or brace initializer is skipped. (the token to go on from, whether the declaration ended)."""
        kinds, texts = self.kinds, self.texts
        if namespace or (i >= start + 2 and kinds[i - 1] == "s" and texts[i - 2] == "extern"):
            words = [texts[j] for j in range(start, i) if kinds[j] == "i" and texts[j] != "inline"]
            block = " ".join(("namespace", "::".join(words[1:]))).strip() if namespace else 'extern "C"'
            self.blocks.append(len(self.decls))
            self.decls.append(Decl(start, i, "open", parent, self.nodes[start], block=block))
            return i + 1, True
        close = matching_brace(self.tokens, i)
        if body:
            self.decls.append(Decl(start, close, "function", parent, self.nodes[start], body=i))
            return close + 1, True
        return close, False  # a class body or a brace initializer: the declaration goes on after it


def matching_brace(tokens: Tokens, i: int) -> int:
    """The token of the `}` that closes the `{` at token i; raises Unsplittable when none does."""
    depth, kinds, texts = 0, tokens.kinds, tokens.texts
    for j in range(i, len(kinds)):
        if kinds[j] == "p":
            t = texts[j]
            if t in OPEN:
                depth += 1
            elif t in CLOSE:
                depth -= 1
                if depth == 0:
                    return j
    raise Unsplittable(i, "a `{` that is never closed")


def matching_paren(texts: list[str], j: int, end: int) -> int:
    """The token of the `)` that closes the `(` at token j, or `end` when none does before it."""
    depth = 0
    for x in range(j, end):
        t = texts[x]
        if t == "(":
            depth += 1
        elif t == ")":
            depth -= 1
            if depth == 0:
                return x
    return end


def skip_angles(tokens: Tokens, j: int, end: int) -> int:
    """From the `<` at j, the index after its matching `>` (parentheses respected; `<<` and `<=` are
    operators, as in `template <int B = 1 << 8>`), at most `end`."""
    depth = paren = 0
    kinds, texts, starts, ends = tokens.kinds, tokens.texts, tokens.starts, tokens.ends
    while j < end:
        if kinds[j] == "p":
            t = texts[j]
            if t == "(":
                paren += 1
            elif t == ")":
                paren -= 1
            elif paren == 0 and t == "<" and depth and j + 1 < end and texts[j + 1] in ("<", "=") \
                    and starts[j + 1] == ends[j]:
                j += 2
                continue
            elif paren == 0 and t == "<":
                depth += 1
            elif paren == 0 and t == ">":
                depth -= 1
                if depth == 0:
                    return j + 1
        j += 1
    return end


def attribute_end(texts: list[str], j: int, end: int) -> int:
    """From the `[[` of an attribute at j, the index after its `]]` (at most `end`)."""
    depth = 0
    while j < end:
        if texts[j] == "[":
            depth += 1
        elif texts[j] == "]":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return end
