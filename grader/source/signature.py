"""The kernel's parameter list, as written in the source and as compiled, checked against the contract.

The compiled kernel (the cubin's parameter list: grader.compile.cubin; on the GPU the driver's sizes too) is the
authority on the count and widths; the source text only tells pointers from integers and names parameters in
messages. The text is read as grader.source.lexer's tokens, without comments, preprocessor lines and `#if 0` blocks,
from the last definition of the kernel; where it cannot be read (a macro-built list, several disagreeing
definitions) only the compiled list is judged.
"""

from __future__ import annotations

import bisect
from typing import NamedTuple

from grader.source.contract import Contract
from grader.source.lexer import COMMENT, GAPS, IDENT, NEWLINE, PUNCT, Spliced, normalize, tokens

INTEGER_TYPE_WORDS = frozenset((
    "int", "unsigned", "signed", "long", "short", "char", "bool", "size_t", "ssize_t", "ptrdiff_t", "intptr_t",
    "uintptr_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
    "__int64", "__int128",
))
FLOAT_TYPE_WORDS = frozenset(("float", "double", "half", "__half", "__nv_bfloat16", "nv_bfloat16"))
_NOT_FLOAT32_POINTEES = FLOAT_TYPE_WORDS - {"float"}
_QUALIFIERS = frozenset((
    "const", "volatile", "__restrict__", "__restrict", "restrict", "register", "std", "__grid_constant__",
    "struct", "class", "typename", "enum",
))


def source_signature(text: str, kernel: str) -> list[str] | None:
    """The parameter declarations of `kernel` as written in `text` (e.g. ['const float* x', 'size_t cols']),
    comments removed and spaces collapsed, or None when they cannot be read from the text.

    The text is read as grader.source.lexer's tokens: comments, preprocessor lines and the `#if 0` / `#if 1 ...
    #else` branches are dropped first (a string or raw string literal is one token, whatever it holds); then
    the last `__global__ void kernel(...)` definition (one followed by a body) is taken, or the last
    declaration when there is no definition. None when the list uses a macro defined in the file (a
    macro-built signature), when several definitions disagree (e.g. under #ifdef), or when no signature is
    found: the compiled kernel is then the only evidence. Used for messages and to tell pointers from
    integers; the compiled kernel is the authority on the count and widths (see check_params).

    Linear in the length of `text`, whatever it holds (thousands of copies of the header, unclosed or
    nested, deep conditionals): every look-up is a bisection in positions found in one pass, and a header
    inside another one's parentheses is not read (no parameter list holds a kernel definition)."""
    code, macros = _live_code(text)
    definitions, declarations = _kernel_lists(code, kernel, macros)
    found = definitions or declarations
    if not found or any(p is None for p in found):
        return None
    if len({tuple((_param_kind(q), *sorted(set(_type_words(q)) & FLOAT_TYPE_WORDS)) for q in p)
            for p in found if p is not None}) > 1:
        return None
    return found[-1]


class _Code(NamedTuple):
    """A token of the code the compiler keeps: its lexer kind and text, and whether a blank, comment or
    dropped line stood before it."""

    kind: str
    text: str
    spaced: bool


class _Conditionals:
    """The `#if` groups open at a point of the text. Each open conditional is "zero" (#if 0, skipped), "else"
    (a branch after a taken #if 1, skipped), "one" (#if 1, kept) or "live" (any other condition: both
    branches kept); `skipping` counts the open conditionals that skip, so a line costs O(1) at any depth."""

    def __init__(self) -> None:
        self.stack: list[str] = []
        self.skipping = 0

    def apply(self, directive: list[tuple[str, str]], macros: set[str]) -> None:
        """Apply one directive, (kind, text) of its tokens after the `#`; add the name a `#define` in kept
        code defines to `macros`."""
        word = directive[0][1] if directive and directive[0][0] == IDENT else ""
        rest = directive[1:]
        stack = self.stack
        if word in ("if", "ifdef", "ifndef"):
            value = rest[0][1] if word == "if" and len(rest) == 1 else ""
            stack.append("zero" if value in ("0", "false") else "one" if value in ("1", "true") else "live")
            self.skipping += stack[-1] == "zero"
        elif word in ("else", "elif", "elifdef", "elifndef") and stack:
            new = {"zero": "live", "one": "else"}.get(stack[-1], stack[-1])
            self.skipping += (new in ("zero", "else")) - (stack[-1] in ("zero", "else"))
            stack[-1] = new
        elif word == "endif" and stack:
            self.skipping -= stack.pop() in ("zero", "else")
        elif word == "define" and not self.skipping and rest and rest[0][0] == IDENT:
            macros.add(rest[0][1].split("\\", 1)[0])


def _live_code(text: str) -> tuple[list[_Code], set[str]]:
    """The tokens of `text` the compiler keeps: no blanks, comments or preprocessor lines, and not those of
    the branches a literal `#if 0` / `#if 1` rules out (both branches of any other conditional are kept);
    and the names of the macros #defined in kept code. A `#` that is the first token of a line (after a
    newline, or after a comment spanning lines) starts a directive, which runs to its logical line's end."""
    s = Spliced(normalize(text)).s
    code: list[_Code] = []
    macros: set[str] = set()
    groups = _Conditionals()
    directive: list[tuple[str, str]] | None = None
    line_start, last_end = True, -1
    for tok in tokens(s):
        kind = tok.kind
        if kind == NEWLINE or (kind == COMMENT and directive is None and s.find("\n", tok.start, tok.end) >= 0):
            if kind == NEWLINE and directive is not None:
                groups.apply(directive, macros)
                directive = None
            line_start = True
        elif kind in GAPS:
            continue
        elif directive is not None:
            directive.append((kind, tok.text(s)))
        elif line_start and kind == PUNCT and tok.text(s) in ("#", "%:"):
            directive, line_start = [], False
        else:
            line_start = False
            if not groups.skipping:
                code.append(_Code(kind, tok.text(s), tok.start != last_end))
                last_end = tok.end
    if directive is not None:
        groups.apply(directive, macros)
    return code, macros


_OPENING, _CLOSING = ("(", "[", "{", "<%", "<:"), (")", "]", "}", "%>", ":>")


def _kernel_lists(code: list[_Code], kernel: str, macros: set[str]) -> tuple[list, list]:
    """The parameter lists (as _split_params gives them, None for one that uses a macro of the file) of
    every `__global__ void kernel(...)` in `code`: (those of definitions, those of declarations)."""
    texts = [c.text for c in code]
    closing = _matching_parens(texts)
    stops = [j for j, t in enumerate(texts) if t in (";", "{", "}", "<%", "%>")]  # where a declaration can start after
    global_words = [j for j, c in enumerate(code) if c.kind == IDENT and c.text == "__global__"]
    void_words = [j for j, c in enumerate(code) if c.kind == IDENT and c.text == "void"]
    bodies = [j for j, t in enumerate(texts) if t in ("{", ";", "<%")]
    definitions: list[list[str] | None] = []
    declarations: list[list[str] | None] = []
    read_to = -1  # end of the last parameter list read
    for j, c in enumerate(code):
        if c.text != kernel or c.kind != IDENT or texts[j + 1 : j + 2] != ["("] or j < read_to or \
                texts[j - 1 : j] == ["::"]:
            continue
        at = bisect.bisect_left(stops, j)
        before = stops[at - 1] if at else -1
        if not (_any_between(global_words, before, j) and _any_between(void_words, before, j)):
            continue
        close = closing.get(j + 1)
        if close is None:
            continue
        read_to = close
        inside = code[j + 2 : close]
        params = None if {x.text for x in inside if x.kind == IDENT} & macros else _split_params(inside)
        follow = bisect.bisect_right(bodies, close)
        body = follow < len(bodies) and texts[bodies[follow]] in ("{", "<%")
        (definitions if body else declarations).append(params)
    return definitions, declarations


def _matching_parens(texts: list[str]) -> dict[int, int]:
    """{index of a `(` token: index of its `)`} for every closed pair, found in one pass."""
    pairs, opened = {}, []
    for j, t in enumerate(texts):
        if t == "(":
            opened.append(j)
        elif t == ")" and opened:
            pairs[opened.pop()] = j
    return pairs


def _any_between(positions: list[int], low: int, high: int) -> bool:
    """True when the sorted `positions` hold one strictly between `low` and `high`."""
    at = bisect.bisect_right(positions, low)
    return at < len(positions) and positions[at] < high


def _split_params(inside: list[_Code]) -> list[str] | None:
    """Split a parameter list's tokens at their top-level commas (not inside (), [], {} or <>) into the
    declarations' texts, spaces collapsed; [] for `()` or `(void)`; None for an empty entry (a stray comma)."""
    parts: list[list[_Code]] = [[]]
    depth = angle = 0
    for c in inside:
        t = c.text
        if t in _OPENING:
            depth += 1
        elif t in _CLOSING:
            depth -= 1
        elif t == "<" and depth == 0:
            angle += 1
        elif t in (">", ">>") and depth == 0 and angle:
            angle = max(0, angle - len(t))
        elif t == "," and depth == 0 and angle == 0:
            parts.append([])
            continue
        parts[-1].append(c)
    params = [" ".join("".join((" " if c.spaced else "") + c.text for c in p).split()) for p in parts]
    if params in ([""], ["void"]):
        return []
    return None if "" in params else params


def _words(decl: str) -> tuple[list[str], set[str]]:
    """One written declaration read as grader.source.lexer's tokens, up to a default argument's `=`: its
    identifiers in order, and the set of its punctuators."""
    idents: list[str] = []
    puncts: set[str] = set()
    for tok in tokens(decl):
        text = tok.text(decl)
        if tok.kind == PUNCT and text == "=":
            break
        if tok.kind == IDENT:
            idents.append(text)
        elif tok.kind == PUNCT:
            puncts.add(text)
    return idents, puncts


def _type_words(decl: str) -> list[str]:
    """The type words of one declaration: its identifiers less qualifiers and less its name (the last
    identifier, when there are two or more)."""
    words = [w for w in _words(decl)[0] if w not in _QUALIFIERS]
    return words[:-1] if len(words) >= 2 else words


def _param_kind(param: str) -> str:
    """Classify one written parameter by its type: 'reference' (&), 'pointer' (* or []), 'integer' (only
    integer type words), 'floating' (a float/double/half type word) or 'unknown' (a typedef, a macro, a
    struct: the text says nothing and only the compiled kernel is judged)."""
    puncts = _words(param)[1]  # up to a default argument
    if puncts & {"&", "&&"}:
        return "reference"
    if puncts & {"*", "[", "<:"}:
        return "pointer"
    if puncts & {"(", "<", "<<", "<=", "<<="}:  # a function type, a template: leave it to the compiled kernel
        return "unknown"
    words = _type_words(param)
    if words and all(w in INTEGER_TYPE_WORDS for w in words):
        return "integer"
    if any(w in FLOAT_TYPE_WORDS for w in words):
        return "floating"
    return "unknown"


def check_params(c: Contract, compiled: list[tuple[str, int]], written: list[str] | None,
                 kernel: str) -> tuple[int, ...]:
    """Check the compiled kernel's parameters against the contract; return each parameter's width in bytes.

    compiled: (PTX type, size in bytes) per parameter, e.g. [('u64', 8), ('u32', 4)], as grader.compile.nvrtc reads
    them (count and sizes from the cubin's metadata, types from PTX that agrees with it); written: the list from
    `source_signature`, ignored when its length differs from the compiled list (a macro expansion). Pointers
    (x, bias, out) must be 8-byte integers in PTX; rows, cols and n 4- or 8-byte integers. The written text
    refuses a parameter only on clear evidence: a pointer role written as an integer, a floating-point
    value, a reference or a double/half pointer; an integer role written as a pointer, a reference or a
    float/double. A type the text cannot classify (a typedef, a macro) is judged by the compiled kernel
    alone. Raises SubmissionError(stage "contract") printing both lists on any mismatch.
    """
    from grader.core.errors import Stage, SubmissionError

    if written is not None and len(written) != len(compiled):
        written = None
    problems = []
    if len(compiled) != len(c.params):
        problems.append(f"the kernel has {len(compiled)} parameters, the launch passes {len(c.params)}")
    for i, (role, (ptype, size)) in enumerate(zip(c.params, compiled, strict=False)):
        is_int = ptype[0] in "usb"
        text = written[i] if written else None
        kind = _param_kind(text) if text is not None else "unknown"
        shown = text or f".{ptype}"
        if role in c.pointers:
            why = ""
            if not (is_int and size == 8):
                why = f"the compiled kernel has .{ptype} ({size} bytes) there"
            elif kind == "reference":
                why = "it is a reference; pass the pointer by value"
            elif kind in ("integer", "floating"):
                why = f"it is written as {'an integer' if kind == 'integer' else 'a floating-point value'}"
            elif kind == "pointer" and set(_type_words(text)) & _NOT_FLOAT32_POINTEES:
                why = "it points to " + "/".join(sorted(set(_type_words(text)) & _NOT_FLOAT32_POINTEES))
            if why:
                problems.append(f"parameter {i + 1} ({shown}) should be a float pointer ({role}): {why}")
        else:
            why = ""
            if not (is_int and size in (4, 8)):
                why = f"the compiled kernel has .{ptype} ({size} bytes) there"
            elif kind == "reference":
                why = "it is a reference; pass the integer by value"
            elif kind == "pointer":
                why = "it is written as a pointer"
            elif kind == "floating":
                why = "it is written as a floating-point type"
            if why:
                problems.append(f"parameter {i + 1} ({shown}) should be a 32- or 64-bit integer ({role}): {why}")
    if problems:
        have = f"{kernel}({', '.join(written)})" if written else f"{kernel}(" + ", ".join(
            f".{t} ({s} bytes)" for t, s in compiled) + ")"
        declared = "declared in the // grade: block" if "params" in c.declared else "the page's default"
        raise SubmissionError(
            Stage.CONTRACT,
            f"{kernel}: parameter list does not match the launch: {problems[0]}",
            details=f"  kernel:   {have}\n  expected: {kernel}{c.signature()}   ({declared})\n"
            "  Fix the kernel, or declare its parameters with `// grade: params = ...` (README).",
        )
    return tuple(size for _, size in compiled)

