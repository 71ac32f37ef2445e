"""Part of stage 1, source: the declarator reader: what each declaration of a whole program is, for
grader.source.program.

`Describer` takes the declarations grader.source.program_split cut from the tokens and sets, on each, the names it
declares, its kind (Part.kind: 'kernel', 'function', 'variable', 'macro', 'type'), whether NVRTC may compile it
(device code, a constant, a macro, a type) and whether it is device-only code. A function definition is read
from its head (`describe_function`); a declaration ending at `;` (`describe_declaration`) by one pass over its
tokens (`read_declarators`: the first words at depth 0, each declarator's name, the execution-space words, a
parameter list, an `=`, a `const` object), then sorted into a typedef or alias, a class, a prototype or a
variable. Execution-space words may come from macros (`#define DEV __device__`: `macro_spaces`).
Not a C++ parser: enough to tell which names a declaration gives. Linear in the number of tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grader.source.program_split import (
    ATTRIBUTE_WORDS,
    OPEN,
    Decl,
    attribute_end,
    matching_brace,
    matching_paren,
    skip_angles,
)
from grader.source.program_tokens import Tokens

__all__ = ["KEYWORDS", "Declarators", "Describer", "macro_spaces", "read_declarators"]

_FUNCTION_SPACES = frozenset({"__global__", "__device__", "__host__"})
_VARIABLE_SPACES = frozenset({"__device__", "__constant__", "__shared__", "__managed__"})
_SPACES = _FUNCTION_SPACES | _VARIABLE_SPACES
_CLASS_KEYS = frozenset({"struct", "class", "union", "enum"})
KEYWORDS = frozenset({
    "alignas", "alignof", "auto", "bool", "break", "case", "catch", "char", "char16_t", "char32_t", "char8_t",
    "class", "const", "constexpr", "consteval", "constinit", "const_cast", "continue", "decltype", "default",
    "delete", "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float",
    "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "nullptr",
    "operator", "private", "protected", "public", "register", "reinterpret_cast", "return", "short", "signed",
    "sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template", "this", "throw", "true",
    "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
    "wchar_t", "while", "__forceinline__", "__noinline__", "__restrict__", "__restrict", "__inline__",
    "__grid_constant__", *_SPACES, *ATTRIBUTE_WORDS,
})
"""Words that are never a declared name."""
_NOT_PLAIN = frozenset({"typedef", "using", "namespace", "template", "extern", "static_assert"})
_OPENERS, _CLOSERS = ("(", "[", "{", "<%"), (")", "]", "}", "%>")


def macro_spaces(tokens: Tokens) -> dict[str, set[str]]:
    """Each macro name mapped to the execution-space words its replacement holds (`#define DEV __device__`),
    following macros named in it, so that `DEV float f()` is seen as device code; macros with none left out."""
    bodies: dict[str, set[str]] = {}
    for t, sub in tokens.subs.items():
        if tokens.texts[t] == "define" and len(sub) > 2 and sub[2][0] == "i":
            bodies.setdefault(sub[2][1], set()).update(x[1] for x in sub[3:] if x[0] == "i")
    spaces: dict[str, set[str]] = {}
    for macro in bodies:
        if macro in spaces:
            continue
        stack, order, seen = [macro], [], {macro}
        while stack:  # every macro reachable from this one, each visited once
            m = stack.pop()
            order.append(m)
            for w in bodies[m]:
                if w in bodies and w not in seen and w not in spaces:
                    seen.add(w)
                    stack.append(w)
        found: set[str] = set()
        for m in order:
            found |= bodies[m] & _SPACES
            for w in bodies[m]:
                found |= spaces.get(w, set())
        for m in order:
            spaces[m] = found
    return {m: sp for m, sp in spaces.items() if sp}


@dataclass
class Declarators:
    """What one pass over a declaration's tokens found (read_declarators).

    lead: its first three words at depth 0 (['typedef', 'struct', 'Tag']); names: each declarator's name, in
    order; spaces: the execution-space words, macros expanded; function: the first declarator has a parameter
    list (a prototype, or an object built by a constructor call); eq: an `=` at depth 0; const: the first
    declarator's object is const (`const float k`, `constexpr float k`; not `const float* p`).
    """

    lead: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    spaces: set[str] = field(default_factory=set)
    function: bool = False
    eq: bool = False
    const: bool = False


def read_declarators(tokens: Tokens, macros: dict[str, set[str]], head: int, end: int) -> Declarators:
    """The Declarators of tokens head..end-1 (a declaration after its `template <...>` and `extern "C"`, without
    its `;`). macros: macro_spaces' map. Attributes (`[[...]]`, `__align__(8)`, ...) are skipped, a
    declarator in parentheses (`(*fp)`) gives its name, `operator+` is one name."""
    return _DeclaratorReader(tokens, macros, head, end).run()


class _DeclaratorReader:
    """The state of one read_declarators pass, besides what it found."""

    def __init__(self, tokens: Tokens, macros: dict[str, set[str]], head: int, end: int) -> None:
        self.kinds, self.texts, self.macros, self.head, self.end = tokens.kinds, tokens.texts, macros, head, end
        self.found = Declarators()
        self.last = ""  # the current declarator's name so far
        self.stopped = False  # the current declarator's name is complete (after a `(`, `[`, `=` or `:`)
        self.angle = 0  # template argument lists open at depth 0
        self.part = 0  # which declarator (0: the first)
        self.depth = 0  # brackets open
        self.const_done = False  # whether the first declarator's object is const is decided

    def run(self) -> Declarators:
        j = self.head
        while j < self.end:
            kind = self.kinds[j]
            j = self._word(j) if kind == "i" else self._punctuator(j) if kind == "p" else j + 1
        if self.last:
            self.found.names.append(self.last)
        return self.found

    def _word(self, j: int) -> int:
        """An identifier at token j; the token to go on from."""
        t, found, macros = self.texts[j], self.found, self.macros
        if t in _SPACES:
            found.spaces.add(t)
        elif t in macros:
            found.spaces |= macros[t]
        if self.depth != 0:
            return j + 1
        if len(found.lead) < 3:
            found.lead.append(t)
        if t == "operator" and not self.stopped:  # `float4 operator+(float4, float4);`
            self.last, j = operator_name(self.texts, j, self.end)
            return j
        if t in ATTRIBUTE_WORDS and j + 1 < self.end and self.texts[j + 1] == "(":
            return matching_paren(self.texts, j + 1, self.end) + 1
        if self.part == 0 and not self.const_done:
            if t == "constexpr":
                found.const = self.const_done = True
            elif t == "const":
                found.const = True
        if not self.stopped and t not in KEYWORDS and t not in macros:
            self.last = t
        return j + 1

    def _punctuator(self, j: int) -> int:
        """A punctuator at token j; the token to go on from."""
        t, texts = self.texts[j], self.texts
        if t == "[" and self.depth == 0 and j + 1 < self.end and texts[j + 1] == "[":  # `[[maybe_unused]]`
            return attribute_end(texts, j, self.end)
        if t in _OPENERS:
            return self._opener(j)
        if t in _CLOSERS:
            self.depth -= 1
        elif self.depth == 0:
            self._separator(j)
        return j + 1

    def _opener(self, j: int) -> int:
        """`(`, `[` or `{` at token j: a declarator in parentheses is read whole; at depth 0 any other ends the
        current declarator's name (a `(` of the first one makes a prototype). The token to go on from."""
        t, texts, found = self.texts[j], self.texts, self.found
        if self.depth == 0:
            if t == "(" and j + 1 < self.end and texts[j + 1] in ("*", "&", "^"):
                close = matching_paren(texts, j, self.end)  # a declarator in parentheses: `(*fp)`
                inner = [texts[x] for x in range(j + 1, close) if self.kinds[x] == "i" and texts[x] not in KEYWORDS]
                if inner and not self.stopped:
                    self.last = inner[-1]
                return close + 1
            if not self.stopped and self.angle == 0:
                found.function = found.function or (t == "(" and self.part == 0)
                self.stopped = True
            self.const_done = self.const_done or self.part == 0
        self.depth += 1
        return j + 1

    def _separator(self, j: int) -> None:
        """Any other punctuator at token j, at depth 0: `,` starts the next declarator, `=` and `:` end the
        current one's name, `<`/`>` after a name open and close template arguments, and `*`/`&` make the first
        declarator a pointer or reference (not a const object)."""
        t, found = self.texts[j], self.found
        if t == "," and self.angle == 0:
            if self.last:
                found.names.append(self.last)
            self.last, self.stopped, self.part = "", False, self.part + 1
            self.const_done = True
        elif t == "=":
            found.eq = True
            if self.angle == 0:
                self.stopped = self.const_done = True
        elif t == ":" and self.angle == 0:
            self.stopped = True
        elif t == "<" and j > self.head and self.kinds[j - 1] == "i":
            self.angle += 1
        elif t == ">" and self.angle:
            self.angle -= 1
        elif t in ("*", "&", "&&") and self.part == 0 and not self.const_done:
            found.const = False


def operator_name(texts: list[str], j: int, b: int) -> tuple[str, int]:
    """For `operator` at token j (of tokens before b): its name ('operator+=', 'operator()') and the token of
    its parameter list's `(`."""
    symbol = []
    x = j + 1
    while x < min(b, j + 4):
        if texts[x] == "(" and symbol:
            break
        symbol.append(texts[x])
        x += 1
    return "operator" + "".join(symbol), x


class Describer:
    """Sets what each declaration is (names, kind_name, device, strict, template, operator, target) on the
    Decls of `tokens`. macros: macro_spaces(tokens)."""

    def __init__(self, tokens: Tokens, macros: dict[str, set[str]]) -> None:
        self.tokens, self.macros = tokens, macros
        self.kinds, self.texts, self.subs = tokens.kinds, tokens.texts, tokens.subs

    def head(self, d: Decl, end: int) -> int:
        """The first token of d after `template <...>` and `extern "C"` (setting d.template)."""
        kinds, texts = self.kinds, self.texts
        j = d.first
        while j < end:
            t = texts[j]
            if t == "template" and j + 1 < end and texts[j + 1] == "<":
                d.template = True
                j = skip_angles(self.tokens, j + 1, end)
            elif t == "extern" and j + 1 < end and kinds[j + 1] == "s":
                j += 2
            else:
                break
        return j

    def spaces(self, a: int, b: int) -> set[str]:
        """The execution-space words among tokens a..b-1, macros expanded."""
        found: set[str] = set()
        kinds, texts, macros = self.kinds, self.texts, self.macros
        for j in range(a, b):
            if kinds[j] == "i":
                t = texts[j]
                if t in _SPACES:
                    found.add(t)
                elif t in macros:
                    found |= macros[t]
        return found

    def describe_function(self, d: Decl) -> None:
        """A function definition: its name, execution space, template-ness."""
        head = self.head(d, d.body)
        spaces = self.spaces(head, d.body)
        d.names, d.operator = self.function_name(head, d.body)
        d.device = bool(spaces & {"__device__", "__global__"})
        d.kind_name = "kernel" if "__global__" in spaces else "function"
        d.strict = d.device and "__host__" not in spaces

    def describe_directive(self, d: Decl) -> None:
        """`#define X`: a macro named X; `#undef X`: its target X."""
        sub = self.subs[d.first]
        if d.directive in ("define", "undef") and len(sub) > 2 and sub[2][0] == "i":
            if d.directive == "define":
                d.names, d.kind_name, d.device = (sub[2][1],), "macro", True
            else:
                d.target = sub[2][1]

    def describe_declaration(self, d: Decl, after_class: bool = False) -> None:
        """A declaration ending at `;`: a typedef or alias, a class, a variable, or a prototype; its names,
        in one pass over its tokens (read_declarators). after_class: d is what follows a class body
        (`struct S { } a, *b;`): declarators only, never another class (`struct A {} struct B {} ...;` is not
        C++, and read as one would recurse once per class)."""
        if self._plain(d):
            return
        head = self.head(d, d.last)
        self._classify(d, read_declarators(self.tokens, self.macros, head, d.last), head, after_class)

    def _plain(self, d: Decl) -> bool:
        """The common case first: a declaration of words only (`static const float k;`), a variable; whether d
        was one (and is now described)."""
        kinds, texts, macros, end = self.kinds, self.texts, self.macros, d.last
        words = texts[d.first:end]
        if not words or kinds[d.first:end].count("i") != len(words) or words[0] in _NOT_PLAIN or \
                not _CLASS_KEYS.isdisjoint(words):
            return False
        spaces = _SPACES.intersection(words)
        for w in words if macros else ():
            spaces |= macros.get(w, spaces)
        name = next((w for w in reversed(words) if w not in KEYWORDS and w not in macros), None)
        d.names, d.kind_name = ((name,) if name else ()), "variable"
        d.device = d.strict = bool(spaces & _VARIABLE_SPACES) or "const" in words or "constexpr" in words
        return True

    def _classify(self, d: Decl, found: Declarators, head: int, after_class: bool) -> None:
        """Set d's names, kind and space from what read_declarators found in tokens head..d.last-1."""
        lead, names, end = found.lead, found.names, d.last
        first_word = lead[0] if lead else ""
        if first_word == "typedef" and len(lead) > 1 and lead[1] in _CLASS_KEYS and not after_class:
            tags = self.class_names(head + 1, end)  # `typedef struct [Tag] { ... } Name;`: Tag and Name
            d.names, d.kind_name, d.device = tags or tuple(n for n in names if n != "typedef"), "type", True
        elif first_word == "typedef":
            d.names, d.kind_name, d.device = tuple(n for n in names if n != "typedef"), "type", True
        elif first_word == "using":
            if len(lead) > 2 and lead[1] == "namespace":
                d.target = lead[2]
            elif found.eq:
                d.names, d.kind_name, d.device = tuple(lead[1:2]), "type", True
            elif len(lead) > 1:  # `using ns::name;`: kept only for a namespace of the file (see grader.source.program)
                d.target, d.names = lead[1], tuple(names[-1:])
        elif first_word in ("namespace", "static_assert", "asm", "__asm__"):
            pass
        elif not after_class and (first_word in _CLASS_KEYS or (len(lead) > 1 and lead[1] in _CLASS_KEYS and first_word
                                  in ("const", "constexpr", "static", "volatile", "typedef"))) and \
                (tags := self.class_names(head, end)) is not None:
            d.names, d.kind_name, d.device = tags, "type", True
        elif found.function:  # a prototype (or an object built by a constructor call)
            d.names = tuple(names)
            d.device = bool(found.spaces & {"__device__", "__global__"})
            d.kind_name = "kernel" if "__global__" in found.spaces else "function"
        else:
            d.names, d.kind_name = tuple(names), "variable"
            d.device = d.strict = bool(found.spaces & _VARIABLE_SPACES) or found.const

    def function_name(self, a: int, b: int) -> tuple[tuple[str, ...], bool]:
        """(the name of the function whose head is tokens a..b-1, whether it is an operator): the identifier
        before its last parameter list at depth 0 (not __launch_bounds__, decltype, ...), or `operator<sym>`."""
        kinds, texts = self.kinds, self.texts
        name, depth = "", 0
        for j in range(a, b):
            t = texts[j]
            if kinds[j] == "p":
                if t == "(":
                    if depth == 0 and j > a and kinds[j - 1] == "i" and texts[j - 1] not in ATTRIBUTE_WORDS:
                        name = texts[j - 1]
                    depth += 1
                elif t in ("[", "{", "<%"):
                    depth += 1
                elif t in _CLOSERS:
                    depth -= 1
            elif depth == 0 and t == "operator" and kinds[j] == "i":
                return (operator_name(texts, j, b)[0],), True
        return ((name,) if name else ()), False

    def class_names(self, a: int, b: int) -> tuple[str, ...] | None:
        """A class, struct, union or enum declaration (tokens a..b-1): its tag, its enumerators and the
        names declared after its body; None when it is a variable or function of that type instead
        (`struct S* p;`, `struct S f();`)."""
        kinds, texts = self.kinds, self.texts
        brace, depth = None, 0
        for j in range(a, b):
            t = texts[j]
            if kinds[j] == "p":
                if depth == 0 and t in OPEN:
                    brace = j
                    break
                if t in ("(", "["):
                    depth += 1
                elif t in (")", "]"):
                    depth -= 1
        tag_part = range(a, brace if brace is not None else b)
        words = [texts[j] for j in tag_part if kinds[j] == "i" and texts[j] not in KEYWORDS]
        if brace is None:  # `struct S;` only: anything more is a variable or function of type `struct S`
            rest = [texts[j] for j in tag_part if texts[j] not in _CLASS_KEYS and texts[j] != "typedef"]
            return tuple(words[:1]) if len(rest) == 1 else None
        close = matching_brace(self.tokens, brace)
        names = words[:1]
        if any(texts[j] == "enum" for j in tag_part):
            names += self._enumerators(brace + 1, close)
        after = Decl(close + 1, b, "declaration")
        self.describe_declaration(after, after_class=True)
        return tuple(names) + after.names

    def _enumerators(self, a: int, b: int) -> list[str]:
        """The enumerators' names among tokens a..b-1 (an enum's body): the first word of each item."""
        kinds, texts = self.kinds, self.texts
        names, expect, depth = [], True, 0
        for j in range(a, b):
            t = texts[j]
            if t in _OPENERS:
                depth += 1
            elif t in _CLOSERS:
                depth -= 1
            elif depth == 0:
                if expect and kinds[j] == "i":
                    names.append(t)
                expect = t == ","
        return names
