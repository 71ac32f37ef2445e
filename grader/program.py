"""Part of stage 1, source: a whole program is a valid submission; find the kernel in it and extract what NVRTC
compiles.

A student may hand in the course program itself (`elementwise.cu`: `#include <cstdio>`, constants, device
helpers, the page's other kernels, a host `main` with cudaMalloc, launches, event timing and printf). NVRTC
compiles device code only: it refuses every host function and host variable ("not allowed in JIT mode"), and
the grader reads no header. So for a whole program this module keeps `biasGeluFused` and the device code it
needs, transitively, and leaves the rest out:

- kept: the kernel (and its forward declarations); the `__device__` and `__host__ __device__` functions,
  `__device__`, `__constant__`, `const` and `constexpr` variables, `#define` macros, structs, enums, typedefs
  and `using` aliases that kept code names, and what those name in turn; device operator overloads (used
  without their name); the `#if`/`#elif`/`#else`/`#endif` groups that hold kept code, whole (and the macros
  they test); `#pragma`, `#error` and `#warning` lines outside groups that are left out; `#undef` of a kept
  macro; the `extern "C" { }` or namespace braces around kept code, and `using namespace` of such a namespace.
  A `#define` inside left-out code (in main's body) that kept code uses is kept alone.
- left out: `main`, host functions, other kernels the kernel does not launch, host variables, unused device
  code and macros, `#if` groups that hold no kept code, and everything inside `#if 0`.
- refused (SubmissionError, stage "source", one message that says what to change): the kernel calls a host
  function or reads a host variable, it is a template, it lives in a namespace, it is defined twice (other
  than in the branches of one `#if`/`#else`), it is missing, or the file cannot be split into declarations.

Nothing here reads a file or gives text a new path to NVRTC: the whole file first passes grader.directives'
lexer (with PROGRAM_INCLUDES blanked instead of read), the extracted pieces are then scanned again, as one
text, by the same lexer with the exercise's own allow-list, and NVRTC compiles exactly what that scan
returned. The only text not scanned is the grader's own `#line N "name"` before each piece (so diagnostics
keep the student's line numbers): each stands where the scan saw a placeholder directive on a line of its own.

This is not a C++ parser. The tokens (grader.program_tokens: grader.lexer's, the include policy's own, with
preprocessor lines and the `#if` branches NVRTC certainly skips told apart) are split into declarations at `;` or `}` at depth 0 (a namespace or
`extern "C"` block is opened and split inside), and a declaration's references are the identifiers in it.
Everything is linear in the file's length: every token is looked at a bounded number of times, and every name
is resolved once.

A file that is only device code (today's submissions) is not a whole program: it compiles as before, byte for
byte. A whole program is one that includes a host header (PROGRAM_INCLUDES beyond ALLOWED_INCLUDES) or defines
a host function (`main`, or any function not marked `__device__` or `__global__`).
"""

from __future__ import annotations

import bisect
import heapq
import re
from dataclasses import dataclass

from grader import exercise
from grader.directives import PROGRAM_INCLUDES, Scan, scan
from grader.errors import SubmissionError
from grader.predefined import nvrtc_defines
from grader.prelude import header_macro_names
from grader.program_tokens import CONDITIONALS, Tokens

__all__ = ["PROGRAM_INCLUDES", "Extracted", "Part", "extract"]

LINE_PLACEHOLDER = "#pragma grader_line"
"""Stands where a `#line` directive goes while the extracted text is scanned (the lexer refuses `#line`)."""

_OPEN, _CLOSE = ("{", "<%"), ("}", "%>")
_KEPT_DIRECTIVES = CONDITIONALS | {"pragma", "error", "warning"}
_FUNCTION_SPACES = frozenset({"__global__", "__device__", "__host__"})
_VARIABLE_SPACES = frozenset({"__device__", "__constant__", "__shared__", "__managed__"})
_SPACES = _FUNCTION_SPACES | _VARIABLE_SPACES
_ATTRIBUTE_WORDS = frozenset({
    "__launch_bounds__", "__align__", "alignas", "__attribute__", "__declspec", "decltype", "sizeof", "alignof",
    "noexcept", "throw", "static_assert", "__maxnreg__", "__cluster_dims__", "requires", "operator",
})
_CLASS_KEYS = frozenset({"struct", "class", "union", "enum"})
_KEYWORDS = frozenset({
    "alignas", "alignof", "auto", "bool", "break", "case", "catch", "char", "char16_t", "char32_t", "char8_t",
    "class", "const", "constexpr", "consteval", "constinit", "const_cast", "continue", "decltype", "default",
    "delete", "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float",
    "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "nullptr",
    "operator", "private", "protected", "public", "register", "reinterpret_cast", "return", "short", "signed",
    "sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template", "this", "throw", "true",
    "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
    "wchar_t", "while", "__forceinline__", "__noinline__", "__restrict__", "__restrict", "__inline__",
    "__grid_constant__", *_SPACES, *_ATTRIBUTE_WORDS,
})
# A name right after one of these words is not being declared (`return x;`, `else f(x);`).
_NOT_A_TYPE = frozenset({"return", "else", "case", "goto", "do", "throw", "new", "delete", "sizeof", "co_return",
                         "co_yield", "co_await", "typeid", "alignof", "decltype", "static_assert", "not", "and",
                         "or", "operator", "defined"})
_AFTER_DECLARED = frozenset({"=", ";", ",", "[", ")", ":", "{", "(", "<%"})
_TYPE_WORDS = frozenset({"void", "bool", "char", "short", "int", "long", "float", "double", "signed", "unsigned",
                         "auto", "wchar_t", "char8_t", "char16_t", "char32_t", "dim3", "half", "__half", "__half2",
                         "__nv_bfloat16", "__nv_bfloat162"})
_VECTOR_TYPE = re.compile(r"u?(?:char|short|int|long|longlong)[1-4]|(?:float|double)[1-4]", re.ASCII)
_MAX_KERNEL_DEFINITIONS = 16
_NOT_PLAIN = frozenset({"typedef", "using", "namespace", "template", "extern", "static_assert"})


@dataclass(frozen=True)
class Part:
    """One named declaration of a whole program, as the extraction saw it.

    name: the declared name ('geluErf', 'main', 'kInvSqrt2', 'CUDA_CHECK', 'operator+'); kind: 'kernel' (a
    __global__ function), 'function', 'variable', 'macro' or 'type'; line: its 1-based line in the student's
    file; kept: whether it is in the text NVRTC compiles.
    """

    name: str
    kind: str
    line: int
    kept: bool


@dataclass(frozen=True)
class Extracted:
    """The translation unit NVRTC compiles for one submission, and what was kept of it.

    text: what follows the grader's prelude: `#line 1 "name"` and the file (allowed includes blanked) for a file
    that is not a whole program, byte for byte as before; for a whole program, each kept piece preceded by
    `#line N "name"` (N its line in the student's file). whole_program: whether the file had host code (and so
    was extracted). kept: the names kept besides the kernel, in file order ('geluErf', 'kInvSqrt2'); ignored:
    the names left out ('main', 'copyFloor', ...); both empty for a file that is not a whole program.
    kernel_line: the line of the kernel's definition (0 when not a whole program). headers: the headers the
    file includes (each blanked, never read; grader.source.prelude supplies the macros of some). parts: every
    named declaration with its kind, line and fate. names: the identifiers of the extracted text (directives
    included), for a whole program: the prelude defines those a host header would (grader.prelude).
    """

    text: str
    kept: tuple[str, ...]
    ignored: tuple[str, ...]
    whole_program: bool
    kernel: str = exercise.KERNEL_NAME
    kernel_line: int = 0
    headers: tuple[str, ...] = ()
    parts: tuple[Part, ...] = ()
    names: frozenset[str] = frozenset()

    def summary(self, most: int = 6) -> str:
        """One line for a report: "graded biasGeluFused from your program; kept geluErf, kInvSqrt2; ignored
        main and 11 other functions, 2 variables, 1 macro". '' for a file that is not a whole program. At most
        `most` kept names are listed (then "and N more")."""
        if not self.whole_program:
            return ""
        kept = ", ".join(self.kept[:most]) + (f" and {len(self.kept) - most} more" if len(self.kept) > most else "")
        counts: dict[str, int] = {}
        for p in self.parts:
            if not p.kept:
                kind = "function" if p.kind == "kernel" else p.kind
                counts[kind] = counts.get(kind, 0) + 1
        has_main = any(p.name == "main" and not p.kept for p in self.parts)
        ignored = []
        for kind in ("function", "variable", "macro", "type"):
            n = counts.get(kind, 0)
            if kind == "function" and has_main:
                ignored.append("main" + (f" and {n - 1} other function{'s' * (n > 2)}" if n > 1 else ""))
            elif n:
                ignored.append(f"{n} {kind}{'s' * (n > 1)}")
        return (f"graded {self.kernel} from your program; kept {kept or 'nothing else'}; "
                f"ignored {', '.join(ignored) or 'nothing'}")


def extract(text: str, name: str, kernel: str = exercise.KERNEL_NAME,
            compiler_defines=nvrtc_defines) -> Extracted:
    """Decide whether `text` is a whole program and return the translation unit NVRTC compiles for `kernel`.

    text: the submission as written, normalized (LF line ends, no byte order mark: grader.directives.normalize);
    name: the safe file name written into `#line` directives (grader.source.safe_source_name).
    compiler_defines: which names NVRTC defines itself (grader.predefined.nvrtc_defines; None: decide no
    `#if` on a name without a leading underscore), so that `#ifdef CUDART_VERSION` is not read as false.
    A file that passes grader.directives' lexer with its own allow-list and defines no host function is not a
    whole program: its `Extracted.text` is `#line 1 "name"` and the scanned text, as grader.source always
    compiled it. Otherwise the file must pass the lexer with PROGRAM_INCLUDES allowed, and the kernel and the
    device code it uses are extracted (see the module's docstring).

    Raises SubmissionError (stage "source") naming the line: a refused construct anywhere in the file (an
    include form, `__has_include`, token pasting, ...: grader.directives), or a kernel that cannot be separated
    from the program (it calls a host function or reads a host variable, it is a template, it is in a
    namespace, it is defined twice, it is missing, or the file cannot be split into declarations). Never
    reads a file; linear in the length of `text`.
    """
    strict = scan(text)
    if strict.refusal is None:
        headers = _headers(strict)
        as_is = Extracted(f'#line 1 "{name}"\n{strict.normalized}', (), (), False, headers=headers)
        if "(" not in strict.normalized:  # no function at all, so no host function (the hostile case: braces)
            return as_is
        program = _Program(strict, name, kernel, headers, compiler_defines)
        if not program.split_ok:
            if program.defines_main():  # host code that cannot be taken out: NVRTC would only say "host code"
                program.raise_unsplittable()
            return as_is
        if not program.has_host_code:
            return as_is
        return program.extract()
    wide = scan(text, PROGRAM_INCLUDES)
    if wide.refusal is not None:
        same = wide.refusal[:2] == strict.refusal[:2]
        line, token, why = strict.refusal if same else wide.refusal
        raise SubmissionError("source", f"{name}:{line}: refused `{token}`: {why}")
    program = _Program(wide, name, kernel, _headers(wide), compiler_defines)
    if not program.split_ok:
        program.raise_unsplittable()
    return program.extract()


def _headers(result: Scan) -> tuple[str, ...]:
    """The header names of the allowed includes `result`'s scan blanked, in order, each once."""
    return tuple(dict.fromkeys(d.header for d in result.directives if d.header))


class _Unsplittable(Exception):
    def __init__(self, token: int, what: str) -> None:
        super().__init__(what)
        self.token, self.what = token, what


@dataclass(slots=True)
class _Decl:
    """One declaration (or directive, or the opening or closing brace of a block) of the program: tokens
    first..last (inclusive) of the live token list."""

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


class _Program:
    """A scanned submission split into declarations; `extract` does the rest.

    Its tokens are grader.program_tokens.Tokens' parallel lists (`kinds`, `texts`, `starts`, `ends`), `subs`
    (a directive's own tokens) and `nodes` (the `#if` branches around each token).
    """

    def __init__(self, result: Scan, name: str, kernel: str, headers: tuple[str, ...] = (),
                 compiler_defines=None) -> None:
        self.text, self.name, self.kernel, self.headers = result.normalized, name, kernel, headers
        tokens = self.tokens = Tokens(result.normalized, (d.offset for d in result.directives), compiler_defines,
                                      header_macro_names(headers))
        self.kinds, self.texts, self.starts, self.ends = tokens.kinds, tokens.texts, tokens.starts, tokens.ends
        self.subs, self.nodes, self.tok_line = tokens.subs, tokens.nodes, tokens.tok_line
        self.decls: list[_Decl] = []
        self.inner: list[_Decl] = []  # `#define`/`#undef` lines inside other declarations
        self.host_only: dict[str, list[int]] = {}  # names only host code defines
        self.type_names: set[str] = set()  # names of the file's structs, typedefs and aliases
        self.macro_spaces: dict[str, set[str]] = {}
        self.has_host_code = False
        self.split_ok, self.unsplittable = True, None
        try:
            self._split()
        except _Unsplittable as err:
            self.split_ok, self.unsplittable = False, err
            return
        self._macros()
        for d in self.decls:
            if d.kind == "function":
                self._describe_function(d)
                self.has_host_code = self.has_host_code or not d.device

    # --- declarations -----------------------------------------------------------------------------------

    def _split(self) -> None:
        """Split the tokens into declarations at `;` or a function body's `}` at depth 0; open a namespace or
        `extern "C"` block and split inside it. Raises _Unsplittable where braces or parentheses do not
        balance or a declaration does not end."""
        kinds, texts, nodes = self.kinds, self.texts, self.nodes
        decls: list[_Decl] = self.decls
        blocks: list[int] = []
        i, n = 0, len(kinds)
        while i < n:
            kind, text = kinds[i], texts[i]
            parent = blocks[-1] if blocks else None
            if kind == "d":
                decls.append(_Decl(i, i, "directive", parent, nodes[i], directive=text))
                i += 1
                continue
            if kind == "p":
                if text in _CLOSE:
                    if not blocks:
                        raise _Unsplittable(i, "a `}` that closes nothing")
                    end = i + 1 if i + 1 < n and texts[i + 1] == ";" else i
                    decls[blocks[-1]].close = len(decls)
                    decls.append(_Decl(i, end, "close", blocks.pop(), nodes[i]))
                    i = end + 1
                    continue
                if text == ";":
                    i += 1
                    continue
            start, paren, eq, function, operator = i, 0, False, False, False
            namespace = text == "namespace" or (text == "inline" and i + 1 < n and texts[i + 1] == "namespace")
            while True:
                if i >= n:
                    raise _Unsplittable(start, "a declaration that does not end (a `;` or `}` missing)")
                if kinds[i] == "p":
                    t = texts[i]
                    if t == "(":
                        operator = False  # `operator+=(`: the name ends at its parameter list
                        if paren == 0 and i > start and not eq:
                            pt = texts[i - 1]
                            if (kinds[i - 1] == "i" and pt not in _ATTRIBUTE_WORDS) or pt == ">":
                                function = True
                        paren += 1
                    elif t == ")":
                        paren -= 1
                        if paren < 0:
                            raise _Unsplittable(i, "a `)` that closes nothing")
                    elif paren == 0:
                        if t == ";":
                            decls.append(_Decl(start, i, "declaration", parent, nodes[start]))
                            i += 1
                            break
                        if t == "=":
                            eq = eq or not operator  # not the `=` of `operator=`, `operator==`, `operator<=`
                        elif t in _OPEN:
                            if namespace or (i >= start + 2 and kinds[i - 1] == "s" and texts[i - 2] == "extern"):
                                words = [texts[j] for j in range(start, i) if kinds[j] == "i" and texts[j] != "inline"]
                                blocks.append(len(decls))
                                decls.append(_Decl(start, i, "open", parent, nodes[start], block=" ".join(
                                    ("namespace", "::".join(words[1:]))).strip() if namespace else 'extern "C"'))
                                i += 1
                                break
                            close = self._matching_brace(i)
                            if function and not eq:
                                decls.append(_Decl(start, close, "function", parent, nodes[start], body=i))
                                i = close + 1
                                break
                            i = close  # a class body or a brace initializer: the declaration goes on
                        elif t in _CLOSE:
                            raise _Unsplittable(i, "a `}` inside a declaration")
                elif paren == 0 and texts[i] == "operator" and kinds[i] == "i":
                    function = operator = True
                elif paren == 0 and texts[i] == "template" and kinds[i] == "i" and i + 1 < n and texts[i + 1] == "<":
                    i = self._skip_angles(i + 1, n)  # `template <int N = 4>`: its `=` and `>` are not the declaration's
                    continue
                i += 1
        if blocks:
            raise _Unsplittable(decls[blocks[-1]].first, "a block that is not closed")

    def _matching_brace(self, i: int) -> int:
        """The token of the `}` that closes the `{` at token i."""
        depth, kinds, texts = 0, self.kinds, self.texts
        for j in range(i, len(kinds)):
            if kinds[j] == "p":
                t = texts[j]
                if t in _OPEN:
                    depth += 1
                elif t in _CLOSE:
                    depth -= 1
                    if depth == 0:
                        return j
        raise _Unsplittable(i, "a `{` that is never closed")

    def _matching_paren(self, j: int, end: int) -> int:
        """The token of the `)` that closes the `(` at token j, or `end` when none does before it."""
        depth, texts = 0, self.texts
        for x in range(j, end):
            t = texts[x]
            if t == "(":
                depth += 1
            elif t == ")":
                depth -= 1
                if depth == 0:
                    return x
        return end

    def defines_main(self) -> bool:
        """Whether the file names `main(` outside a directive: a host program, even where it cannot be split."""
        texts = self.texts
        return any(t == "main" and k == "i" and texts[j + 1:j + 2] == ["("] for j, (k, t) in
                   enumerate(zip(self.kinds, texts)))

    def raise_unsplittable(self) -> None:
        """Raise the SubmissionError for a program that could not be split into declarations."""
        err = self.unsplittable
        raise SubmissionError("source", (
            f"{self.name}:{self.tok_line(err.token)}: cannot split your program into declarations here "
            f"({err.what}; a declaration split across #if/#else, or a macro that opens or closes braces?), so "
            f"{self.kernel} cannot be taken out of it: fix that, or hand in {self.kernel} and the device code "
            "it uses without the host code"))

    # --- what each declaration is ------------------------------------------------------------------------

    def _macros(self) -> None:
        """Map each macro name to the execution-space words its replacement holds (`#define DEV __device__`),
        following macros named in it, so that `DEV float f()` is seen as device code."""
        bodies: dict[str, set[str]] = {}
        for t, sub in self.subs.items():
            if self.texts[t] == "define" and len(sub) > 2 and sub[2][0] == "i":
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
        self.macro_spaces = {m: sp for m, sp in spaces.items() if sp}

    def _head(self, d: _Decl, end: int) -> int:
        """The first token of d after `template <...>` and `extern "C"` (setting d.template)."""
        kinds, texts = self.kinds, self.texts
        j = d.first
        while j < end:
            t = texts[j]
            if t == "template" and j + 1 < end and texts[j + 1] == "<":
                d.template = True
                j = self._skip_angles(j + 1, end)
            elif t == "extern" and j + 1 < end and kinds[j + 1] == "s":
                j += 2
            else:
                break
        return j

    def _spaces(self, a: int, b: int) -> set[str]:
        """The execution-space words among tokens a..b-1, macros expanded."""
        found: set[str] = set()
        kinds, texts, macros = self.kinds, self.texts, self.macro_spaces
        for j in range(a, b):
            if kinds[j] == "i":
                t = texts[j]
                if t in _SPACES:
                    found.add(t)
                elif t in macros:
                    found |= macros[t]
        return found

    def _describe_function(self, d: _Decl) -> None:
        """A function definition: its name, execution space, template-ness."""
        head = self._head(d, d.body)
        spaces = self._spaces(head, d.body)
        d.names, d.operator = self._function_name(head, d.body)
        d.device = bool(spaces & {"__device__", "__global__"})
        d.kind_name = "kernel" if "__global__" in spaces else "function"
        d.strict = d.device and "__host__" not in spaces

    def _describe_all(self) -> None:
        """Describe every declaration that is not a function definition (done in __init__), find the
        `#define`/`#undef` lines inside declarations, and collect the file's type names."""
        decls = self.decls
        for d in decls:
            if d.kind == "directive":
                self._describe_directive(d)
            elif d.kind == "declaration":
                self._describe_declaration(d)
            if d.kind_name == "type":
                self.type_names.update(d.names)
        firsts = [d.first for d in decls]
        for t in self.subs:
            k = bisect.bisect_right(firsts, t) - 1
            if k >= 0 and decls[k].kind != "directive" and t <= decls[k].last and self.texts[t] in ("define", "undef"):
                d = _Decl(t, t, "directive", decls[k].parent, self.nodes[t], inside=k, directive=self.texts[t])
                self._describe_directive(d)
                self.inner.append(d)

    def _describe_directive(self, d: _Decl) -> None:
        sub = self.subs[d.first]
        if d.directive in ("define", "undef") and len(sub) > 2 and sub[2][0] == "i":
            if d.directive == "define":
                d.names, d.kind_name, d.device = (sub[2][1],), "macro", True
            else:
                d.target = sub[2][1]

    def _describe_declaration(self, d: _Decl, after_class: bool = False) -> None:
        """A declaration ending at `;`: a typedef or alias, a class, a variable, or a prototype; its names,
        in one pass over its tokens (the depth-0 words, the declarators' names, a `const` object).
        after_class: d is what follows a class body (`struct S { } a, *b;`): declarators only, never another
        class (`struct A {} struct B {} ...;` is not C++, and read as one would recurse once per class)."""
        kinds, texts, macros = self.kinds, self.texts, self.macro_spaces
        end = d.last
        words = texts[d.first:end]
        if words and kinds[d.first:end].count("i") == len(words) and words[0] not in _NOT_PLAIN and \
                _CLASS_KEYS.isdisjoint(words):  # the common case first: only words (`static const float k;`)
            spaces = _SPACES.intersection(words)
            for w in words if macros else ():
                spaces |= macros.get(w, spaces)
            name = next((w for w in reversed(words) if w not in _KEYWORDS and w not in macros), None)
            d.names, d.kind_name = ((name,) if name else ()), "variable"
            d.device = d.strict = bool(spaces & _VARIABLE_SPACES) or "const" in words or "constexpr" in words
            return
        head = self._head(d, end)
        lead: list[str] = []  # the first words at depth 0
        names: list[str] = []
        spaces: set[str] = set()
        last, stopped, angle, part, depth = "", False, 0, 0, 0
        function = eq = False
        const = const_done = False
        j = head
        while j < end:
            k, t = kinds[j], texts[j]
            if k == "i":
                if t in _SPACES:
                    spaces.add(t)
                elif t in macros:
                    spaces |= macros[t]
                if depth == 0:
                    if len(lead) < 3:
                        lead.append(t)
                    if t == "operator" and not stopped:  # `float4 operator+(float4, float4);`
                        last, j = self._operator_name(j, end)
                        continue
                    if t in _ATTRIBUTE_WORDS and j + 1 < end and texts[j + 1] == "(":
                        j = self._matching_paren(j + 1, end) + 1
                        continue
                    if part == 0 and not const_done:
                        if t == "constexpr":
                            const = const_done = True
                        elif t == "const":
                            const = True
                    if not stopped and t not in _KEYWORDS and t not in macros:
                        last = t
            elif k == "p":
                if t == "[" and depth == 0 and j + 1 < end and texts[j + 1] == "[":  # `[[maybe_unused]]`
                    j = self._attribute_end(j, end)
                    continue
                if t in ("(", "[", "{", "<%"):
                    if depth == 0:
                        if t == "(" and j + 1 < end and texts[j + 1] in ("*", "&", "^"):
                            close = self._matching_paren(j, end)  # a declarator in parentheses: `(*fp)`
                            inner = [texts[x] for x in range(j + 1, close)
                                     if kinds[x] == "i" and texts[x] not in _KEYWORDS]
                            if inner and not stopped:
                                last = inner[-1]
                            j = close + 1
                            continue
                        if not stopped and angle == 0:
                            function = function or (t == "(" and part == 0)
                            stopped = True
                        const_done = const_done or part == 0
                    depth += 1
                elif t in (")", "]", "}", "%>"):
                    depth -= 1
                elif depth == 0:
                    if t == "," and angle == 0:
                        if last:
                            names.append(last)
                        last, stopped, part = "", False, part + 1
                        const_done = True
                    elif t == "=":
                        eq = True
                        if angle == 0:
                            stopped = True
                            const_done = True
                    elif t == ":" and angle == 0:
                        stopped = True
                    elif t == "<" and j > head and kinds[j - 1] == "i":
                        angle += 1
                    elif t == ">" and angle:
                        angle -= 1
                    elif t in ("*", "&", "&&") and part == 0 and not const_done:
                        const = False
            j += 1
        if last:
            names.append(last)
        first_word = lead[0] if lead else ""
        if first_word == "typedef" and len(lead) > 1 and lead[1] in _CLASS_KEYS and not after_class:
            tags = self._class_names(head + 1, end)  # `typedef struct [Tag] { ... } Name;`: Tag and Name
            d.names, d.kind_name, d.device = tags or tuple(n for n in names if n != "typedef"), "type", True
        elif first_word == "typedef":
            d.names, d.kind_name, d.device = tuple(n for n in names if n != "typedef"), "type", True
        elif first_word == "using":
            if len(lead) > 2 and lead[1] == "namespace":
                d.target = lead[2]
            elif eq:
                d.names, d.kind_name, d.device = tuple(lead[1:2]), "type", True
            elif len(lead) > 1:  # `using ns::name;`: kept only for a namespace of the file (see extract)
                d.target, d.names = lead[1], tuple(names[-1:])
        elif first_word in ("namespace", "static_assert", "asm", "__asm__"):
            pass
        elif not after_class and (first_word in _CLASS_KEYS or (len(lead) > 1 and lead[1] in _CLASS_KEYS and first_word
                                  in ("const", "constexpr", "static", "volatile", "typedef"))) and \
                (tags := self._class_names(head, end)) is not None:
            d.names, d.kind_name, d.device = tags, "type", True
        elif function:  # a prototype (or an object built by a constructor call)
            d.names = tuple(names)
            d.device = bool(spaces & {"__device__", "__global__"})
            d.kind_name = "kernel" if "__global__" in spaces else "function"
        else:
            d.names, d.kind_name = tuple(names), "variable"
            d.device = d.strict = bool(spaces & _VARIABLE_SPACES) or const

    def _skip_angles(self, j: int, end: int) -> int:
        """From the `<` at j, the index after its matching `>` (parentheses respected; `<<` and `<=` are
        operators, as in `template <int B = 1 << 8>`), at most `end`."""
        depth = paren = 0
        kinds, texts, starts, ends = self.kinds, self.texts, self.starts, self.ends
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

    def _attribute_end(self, j: int, end: int) -> int:
        """From the `[[` of an attribute at j, the index after its `]]` (at most `end`)."""
        depth, texts = 0, self.texts
        while j < end:
            if texts[j] == "[":
                depth += 1
            elif texts[j] == "]":
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        return end

    def _function_name(self, a: int, b: int) -> tuple[tuple[str, ...], bool]:
        """(the name of the function whose head is tokens a..b-1, whether it is an operator): the identifier
        before its last parameter list at depth 0 (not __launch_bounds__, decltype, ...), or `operator<sym>`."""
        kinds, texts = self.kinds, self.texts
        name, depth = "", 0
        for j in range(a, b):
            t = texts[j]
            if kinds[j] == "p":
                if t == "(":
                    if depth == 0 and j > a and kinds[j - 1] == "i" and texts[j - 1] not in _ATTRIBUTE_WORDS:
                        name = texts[j - 1]
                    depth += 1
                elif t in ("[", "{", "<%"):
                    depth += 1
                elif t in (")", "]", "}", "%>"):
                    depth -= 1
            elif depth == 0 and t == "operator" and kinds[j] == "i":
                return (self._operator_name(j, b)[0],), True
        return ((name,) if name else ()), False

    def _operator_name(self, j: int, b: int) -> tuple[str, int]:
        """For `operator` at token j (of tokens before b): its name ('operator+=', 'operator()') and the token
        of its parameter list's `(`."""
        texts, symbol = self.texts, []
        x = j + 1
        while x < min(b, j + 4):
            if texts[x] == "(" and symbol:
                break
            symbol.append(texts[x])
            x += 1
        return "operator" + "".join(symbol), x

    def _class_names(self, a: int, b: int) -> tuple[str, ...] | None:
        """A class, struct, union or enum declaration (tokens a..b-1): its tag, its enumerators and the
        names declared after its body; None when it is a variable or function of that type instead
        (`struct S* p;`, `struct S f();`)."""
        kinds, texts = self.kinds, self.texts
        brace, depth = None, 0
        for j in range(a, b):
            t = texts[j]
            if kinds[j] == "p":
                if depth == 0 and t in _OPEN:
                    brace = j
                    break
                if t in ("(", "["):
                    depth += 1
                elif t in (")", "]"):
                    depth -= 1
        tag_part = range(a, brace if brace is not None else b)
        words = [texts[j] for j in tag_part if kinds[j] == "i" and texts[j] not in _KEYWORDS]
        if brace is None:  # `struct S;` only: anything more is a variable or function of type `struct S`
            rest = [texts[j] for j in tag_part if texts[j] not in _CLASS_KEYS and texts[j] != "typedef"]
            return tuple(words[:1]) if len(rest) == 1 else None
        names = words[:1]
        close = self._matching_brace(brace)
        if any(texts[j] == "enum" for j in tag_part):
            expect, depth = True, 0
            for j in range(brace + 1, close):
                t = texts[j]
                if t in ("(", "[", "{", "<%"):
                    depth += 1
                elif t in (")", "]", "}", "%>"):
                    depth -= 1
                elif depth == 0:
                    if expect and kinds[j] == "i":
                        names.append(t)
                    expect = t == ","
        after = _Decl(close + 1, b, "declaration")
        self._describe_declaration(after, after_class=True)
        return tuple(names) + after.names

    # --- references -----------------------------------------------------------------------------------

    def references(self, d: _Decl) -> list[tuple[str, bool, bool, int]]:
        """(name, called, declared here, token) for each identifier of declaration d that may name another
        declaration: not after `.` or `->`. called: followed by `(`; declared here: a parameter, local or
        member of d by the look of it (after a type word, or after `*`/`&` after one), or a name in a
        directive (never judged as a use of host code)."""
        kinds, texts = self.kinds, self.texts
        first, last = d.first, d.last
        declared: set[str] = set()
        found: list[tuple[str, bool, bool, int]] = []
        for j in range(first, last + 1):
            kind = kinds[j]
            if kind == "d":
                sub = self.subs[j]
                params: set[str] = set()
                start = 2
                if texts[j] == "define" and len(sub) > 2:
                    start = 3
                    if len(sub) > 3 and sub[3][1] == "(" and sub[3][2] == sub[2][3]:  # a function-like macro
                        for x in sub[4:]:
                            if x[1] == ")":
                                break
                            params.add(x[1])
                found.extend((x[1], False, True, j) for x in sub[start:]
                             if x[0] == "i" and x[1] not in params and x[1] != "defined")
                continue
            if kind != "i" or (j > first and texts[j - 1] in (".", "->")):
                continue
            t = texts[j]
            nxt = texts[j + 1] if j < last else ""
            if nxt in _AFTER_DECLARED and j > first and self._declares(j, first):
                declared.add(t)
            found.append((t, nxt == "(", False, j))
        return [(t, called, local or t in declared, j) for t, called, local, j in found]

    def _declares(self, j: int, first: int) -> bool:
        """Whether the identifier at j looks declared there: right after another name (`float v`, `Foo f`,
        not `return v`), after `>` (`Vec<4> v`, not before `)`), or after `*`/`&` right after a type name
        (`const float* p`, `Foo& f`; not `v * scale`)."""
        kinds, texts = self.kinds, self.texts
        p = j - 1
        t = texts[p]
        if kinds[p] == "i":
            return t not in _NOT_A_TYPE
        if t == ">":
            return texts[j + 1] != ")"
        if t not in ("*", "&", "&&"):
            return False
        while p > first and texts[p] in ("*", "&", "&&", "__restrict__", "__restrict", "const", "volatile"):
            p -= 1
        t = texts[p]
        return t == ">" or (kinds[p] == "i" and (t in _TYPE_WORDS or t in self.type_names or t.endswith("_t")
                                                 or _VECTOR_TYPE.fullmatch(t) is not None))

    # --- extraction ------------------------------------------------------------------------------------

    def extract(self) -> Extracted:
        """The Extracted of a whole program (see the module's docstring); raises SubmissionError."""
        decls = self.decls
        kernels = [k for k, d in enumerate(decls) if d.kind == "function" and self.kernel in d.names]
        self._check_kernel(kernels)
        self._describe_all()
        everything = decls + self.inner
        definers: dict[str, list[int]] = {}
        undefs: dict[str, list[int]] = {}  # `#undef X`: kept with a kept macro X
        usings: dict[str, list[int]] = {}  # `using namespace N;`, `using N::x;`: kept with namespace N's braces
        for k, d in enumerate(everything):
            for n in d.names:
                definers.setdefault(n, []).append(k)
            if d.kind == "directive" and d.directive == "undef" and d.target:
                undefs.setdefault(d.target, []).append(k)
            elif d.kind == "declaration" and d.target and not d.device:
                usings.setdefault(d.target, []).append(k)
        group_of, group_parent, group_directives, unclosed = self._conditional_groups()
        content = [False] * len(group_directives)  # the group holds kept code: its directives are kept
        kept: set[int] = set()
        queue: list[int] = []

        def mark(g: int | None) -> None:
            while g is not None and not content[g]:
                content[g] = True
                queue.extend(group_directives[g])  # the macros they test are needed too
                g = group_parent[g]

        def take(k: int) -> None:
            kept.add(k)
            d = everything[k]
            mark(group_of[d.inside if d.inside is not None else k])
            if d.kind_name == "macro":
                for u in undefs.get(d.names[0], ()):
                    keep(u)
            elif d.kind == "open" and d.block.startswith("namespace "):
                for u in usings.get(d.block.split(" ", 1)[1].split("::")[0], ()):
                    keep(u)

        def keep(k: int) -> None:
            if k in kept:
                return
            take(k)
            queue.append(k)
            parent = everything[k].parent
            while parent is not None and parent not in kept:  # the braces of the blocks around it
                take(parent)
                take(decls[parent].close)
                parent = decls[parent].parent

        for g in unclosed:
            mark(g)
        for k in kernels:
            keep(k)
        for k, d in enumerate(decls):
            if d.kind == "declaration" and self.kernel in d.names and d.device:
                keep(k)  # a forward declaration of the kernel
            elif d.kind == "function" and d.operator and d.device:
                keep(k)  # operators are used without their name
        expanded: set[str] = {self.kernel}
        while queue:
            d = everything[queue.pop()]
            for ref, called, local, tok in self.references(d):
                ks = definers.get(ref)
                if not ks:
                    continue
                if ref not in expanded:  # each name is resolved once
                    expanded.add(ref)
                    device = [x for x in ks if everything[x].device]
                    for x in device:
                        keep(x)
                    if not device:
                        self.host_only[ref] = ks
                if d.strict and not local and ref in self.host_only:
                    self._refuse_host(d, ref, called, tok, self.host_only[ref])
        pieces = []
        for k, d in enumerate(decls):
            if d.kind == "directive" and d.directive in _KEPT_DIRECTIVES:
                g = group_of[k]
                if (g is None or content[g]) and (d.parent is None or d.parent in kept):
                    pieces.append((d.first, d.last))
            elif k in kept:
                pieces.append((d.first, d.last))
        for k, d in enumerate(self.inner, start=len(decls)):
            if k in kept and d.inside not in kept:
                if d.node != decls[d.inside].node:  # under an #if inside left-out code: kept alone, it would lie
                    self._refuse_inner_conditional(d)
                pieces.append((d.first, d.last))
        pieces.sort()
        text = self._assemble(pieces)
        return self._result(text, everything, kept, self.headers, kernels, self._names(pieces))

    def _names(self, pieces: list[tuple[int, int]]) -> frozenset[str]:
        """The identifiers of the tokens first..last of each piece, a directive's own tokens included."""
        out = set()
        for first, last in pieces:
            for t in range(first, last + 1):
                if self.kinds[t] == "i":
                    out.add(self.texts[t])
                elif self.kinds[t] == "d":
                    out.update(x[1] for x in self.subs[t] if x[0] == "i")
        return frozenset(out)

    def _conditional_groups(self) -> tuple[list[int | None], list[int | None], list[list[int]], list[int]]:
        """The `#if` groups among the declarations: for each declaration (and each directive inside one, by
        its index in decls + inner) the innermost group around it (a conditional directive: its own
        group); each group's enclosing group and directives; the groups never closed. A group is kept
        whole when it holds kept code, and left out when it holds none."""
        decls = self.decls
        group_of: list[int | None] = []
        parents: list[int | None] = []
        directives: list[list[int]] = []
        stack: list[int] = []
        for k, d in enumerate(decls):
            g = stack[-1] if stack else None
            if d.kind == "directive" and d.directive in CONDITIONALS:
                if d.directive in ("if", "ifdef", "ifndef"):
                    g = len(directives)
                    parents.append(stack[-1] if stack else None)
                    directives.append([k])
                    stack.append(g)
                elif stack:
                    directives[g].append(k)
                    if d.directive == "endif":
                        stack.pop()
            group_of.append(g)
        group_of.extend(group_of[d.inside] for d in self.inner)
        return group_of, parents, directives, stack

    def _result(self, text: str, everything: list[_Decl], kept: set[int], headers: tuple[str, ...],
                kernels: list[int], names: frozenset[str]) -> Extracted:
        parts, seen = [], set()
        in_order = heapq.merge(enumerate(self.decls), enumerate(self.inner, start=len(self.decls)),
                               key=lambda kd: kd[1].first)
        for k, d in in_order:
            if d.kind_name and d.names and not (k in kept and self.kernel in d.names):
                for n in d.names:
                    if (n, k in kept) not in seen:
                        seen.add((n, k in kept))
                        parts.append(Part(n, d.kind_name, self.tok_line(d.first), k in kept))
        kept_names = tuple(dict.fromkeys(p.name for p in parts if p.kept))
        kept_set = set(kept_names) | {self.kernel}
        ignored = tuple(dict.fromkeys(p.name for p in parts if not p.kept and p.name not in kept_set))
        parts = [p for p in parts if p.kept or p.name not in kept_set]
        return Extracted(text, kept_names, ignored, True, self.kernel, self.tok_line(self.decls[kernels[0]].first),
                         headers, tuple(parts), names)

    def _check_kernel(self, kernels: list[int]) -> None:
        """Refuse a kernel that cannot be separated: missing, a template, in a namespace, not __global__,
        defined twice outside the branches of one #if."""
        decls, where = self.decls, self.name
        if not kernels:
            found = sorted({n for d in decls if d.kind_name == "kernel" and d.kind == "function" for n in d.names})
            listing = ", ".join(found[:20]) + (f" and {len(found) - 20} more" if len(found) > 20 else "")
            raise SubmissionError("source", (
                f"{where}: your program defines no kernel `__global__ void {self.kernel}(...)`; kernels found: "
                f"{listing or 'none'}. Name your kernel `{self.kernel}`"))
        for k in kernels:
            d = decls[k]
            line = self.tok_line(d.first)
            block = self._namespace(d)
            if block:
                raise SubmissionError("source", (
                    f"{where}:{line}: `{self.kernel}` is inside `{block} {{ }}`: the grader looks it up at file "
                    f"scope; move `{self.kernel}` out of the namespace (its device helpers may stay, called as "
                    "`name::helper`)"))
        if len(kernels) > _MAX_KERNEL_DEFINITIONS:
            lines = [self.tok_line(decls[k].first) for k in kernels]
            raise SubmissionError("source", (
                f"{where}:{lines[1]}: `{self.kernel}` is defined {len(kernels)} times (lines {lines[0]}, "
                f"{lines[1]}, ...); keep one definition"))
        for x, a in enumerate(kernels):
            for b in kernels[x + 1:]:
                if not _exclusive(decls[a].node, decls[b].node):
                    la, lb = self.tok_line(decls[a].first), self.tok_line(decls[b].first)
                    raise SubmissionError("source", (
                        f"{where}:{lb}: `{self.kernel}` is defined twice (lines {la} and {lb}): keep one definition "
                        "(or put the versions in the branches of one #if/#else)"))
        for k in kernels:
            d = decls[k]
            if d.template:
                raise SubmissionError("source", (
                    f"{where}:{self.tok_line(d.first)}: `{self.kernel}` is a template: the grader launches one plain "
                    f"kernel; write `__global__ void {self.kernel}(...)` without `template <...>` (put the "
                    "template's arguments into it as constants)"))
            if d.kind_name != "kernel":
                raise SubmissionError("source", (
                    f"{where}:{self.tok_line(d.first)}: `{self.kernel}` is not a __global__ kernel but a "
                    f"{'device' if d.device else 'host'} function; declare it `__global__ void {self.kernel}(...)`"))

    def _refuse_inner_conditional(self, d: _Decl) -> None:
        """Refuse a `#define`/`#undef` that kept code needs, inside left-out code (main's body) under an `#if`
        that starts there too: keeping the line without its `#if` would change what it means."""
        outer = self.decls[d.inside]
        where = outer.names[0] if outer.names else "code the grader leaves out"
        raise SubmissionError("source", (
            f"{self.name}:{self.tok_line(d.first)}: `{d.names[0] if d.names else d.target}`, which {self.kernel} "
            f"uses, is set by a #{d.directive} inside `{where}` under an #if there: the grader compiles only "
            f"{self.kernel} and the device code it uses, so it cannot take that line with its #if; move the #if "
            f"block with its #{d.directive} out of `{where}`, to the top of the file"))

    def _namespace(self, d: _Decl) -> str:
        parent = d.parent
        while parent is not None:
            block = self.decls[parent].block
            if block.startswith("namespace"):
                return block
            parent = self.decls[parent].parent
        return ""

    def _refuse_host(self, d: _Decl, ref: str, called: bool, tok: int, host: list[int]) -> None:
        user = d.names[0] if d.names else "kept code"
        everything = self.decls + self.inner
        target = everything[host[0]]
        at = self.tok_line(target.first)
        if target.kind_name == "variable" and not called:
            raise SubmissionError("source", (
                f"{self.name}:{self.tok_line(tok)}: `{user}` reads `{ref}`, a host variable (line {at}): device "
                f"code cannot read it, and the grader compiles only {self.kernel} and the device code it uses; "
                f"make `{ref}` `constexpr` (or `__constant__`), or pass it as a parameter"))
        if target.kind_name in ("function", "kernel") and called:
            raise SubmissionError("source", (
                f"{self.name}:{self.tok_line(tok)}: `{user}` calls `{ref}`, a host function (line {at}): the "
                f"grader compiles only {self.kernel} and the device code it uses; mark `{ref}` "
                f"`__host__ __device__` (or `__device__`), or do that work in the kernel"))

    def _assemble(self, pieces: list[tuple[int, int]]) -> str:
        """The kept pieces (token ranges), scanned once more as one text by the exercise's lexer: the text NVRTC
        compiles after the prelude. A piece that follows the previous one after blanks only (the same lines)
        goes on with them; any other starts on a new line after a `#line` of its first line (scanned as a
        placeholder directive, and checked to be read as one)."""
        text = self.text
        out: list[str] = []
        marks: list[tuple[int, int, int]] = []  # (placeholder's offset, its line, the student's line after it)
        size = lines = 0
        end = -1
        for first, last in pieces:
            a, b = self.tokens.offset(self.starts[first]), self.tokens.offset(self.ends[last] - 1) + 1
            if end >= 0 and a >= end and not text[end:a].strip(" \t\f\v\n"):
                chunk = text[end:b]
            else:
                lead = "\n" if out else ""
                marks.append((size + len(lead), lines + len(lead) + 1, self.tokens.line(a)))
                chunk = f"{lead}{LINE_PLACEHOLDER}\n{text[a:b]}"
            out.append(chunk)
            size += len(chunk)
            lines += chunk.count("\n")
            end = b
        out.append("\n")
        assembled = "".join(out)
        result = scan(assembled)
        seen = {d.offset for d in result.directives if d.name == "pragma"}
        if result.refusal is not None or any(at not in seen for at, _, _ in marks):
            where = self.name
            if result.refusal:
                j = bisect.bisect_right([m[1] for m in marks], result.refusal[0]) - 1
                if j >= 0:
                    where = f"{self.name}:{marks[j][2] + result.refusal[0] - marks[j][1] - 1}"
            why = (f"refused `{result.refusal[1]}`: {result.refusal[2]}" if result.refusal
                   else "the pieces do not read as they did in the file")
            raise SubmissionError("source", (
                f"{where}: {why} (in the code kept from your program); hand in {self.kernel} and the device code "
                "it uses without the host code"))
        parts, pos, final = [], 0, result.normalized
        for at, _, line in marks:
            parts.append(final[pos:at])
            parts.append(f'#line {line} "{self.name}"')
            pos = at + len(LINE_PLACEHOLDER)
        parts.append(final[pos:])
        return "".join(parts)


def _exclusive(a: tuple | None, b: tuple | None) -> bool:
    """Whether two places are in different branches of one `#if` group (so at most one is compiled)."""
    branches = {}
    while a is not None:
        branches[a[0]] = a[1]
        a = a[2]
    while b is not None:
        if b[0] in branches and branches[b[0]] != b[1]:
            return True
        b = b[2]
    return False
