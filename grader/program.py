"""Part of stage 1, source: a whole program is a valid submission; find the kernel in it and extract what NVRTC
compiles.

A student may hand in the course program itself (`elementwise.cu`: `#include <cstdio>`, constants, device
helpers, the page's other kernels, a host `main` with cudaMalloc, launches, event timing and printf). NVRTC
compiles device code only: it refuses every host function and host variable ("not allowed in JIT mode"), and
the grader reads no header. So for a whole program this module keeps `biasGeluFused` and the device code it
needs, transitively, and leaves the rest out:

- kept: the kernel; the `__device__` and `__host__ __device__` functions, `__device__`, `__constant__`,
  `const` and `constexpr` variables, `#define` macros, structs, enums, typedefs and `using` aliases that kept
  code names; device operator overloads (used without their name); `#if`/`#else`/`#endif`, `#pragma`,
  `#error` and `#warning` lines (the conditional structure stays), `#undef` of a kept macro; the
  `extern "C" { }` or namespace braces around kept code.
- left out: `main`, host functions, other kernels the kernel does not launch, host variables, unused device
  code and macros, and everything inside `#if 0`.
- refused (SubmissionError, stage "source", one message that says what to change): the kernel calls a host
  function or reads a host variable, it is a template, it lives in a namespace, it is defined twice (other
  than in the branches of one `#if`/`#else`), it is missing, or the file cannot be split into declarations.

Nothing here reads a file or gives text a new path to NVRTC: the whole file first passes grader.directives'
lexer (with PROGRAM_INCLUDES blanked instead of read), the extracted pieces are then scanned again, as one
text, by the same lexer with the exercise's own allow-list, and NVRTC compiles exactly what that scan
returned. The only text not scanned is the grader's own `#line N "name"` before each piece (so diagnostics
keep the student's line numbers): each stands where the scan saw a placeholder directive on a line of its own.

This is not a C++ parser. A tokenizer that knows comments, literals, preprocessor lines and brace nesting
splits the file into declarations at `;` or `}` at depth 0 (a namespace or `extern "C"` block is opened and
split inside), and a declaration's references are the identifiers in it. Everything is linear in the file's
length: every token is looked at a bounded number of times, and every name is resolved once.

A file that is only device code (today's submissions) is not a whole program: it compiles as before, byte for
byte. A whole program is one that includes a host header (PROGRAM_INCLUDES beyond ALLOWED_INCLUDES) or defines
a host function (`main`, or any function not marked `__device__` or `__global__`).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from grader import exercise
from grader.directives import ALLOWED_INCLUDES, PROGRAM_INCLUDES, Scan, scan
from grader.errors import SubmissionError

__all__ = ["PROGRAM_INCLUDES", "Extracted", "Part", "extract"]

LINE_PLACEHOLDER = "#pragma grader_line"
"""Stands where a `#line` directive goes while the extracted text is scanned (the lexer refuses `#line`)."""

_TOKEN = re.compile("|".join((
    r"(?P<nl>\n)",
    r"(?P<skip>[ \t\f\v]+|//[^\n]*|/\*[\s\S]*?\*/)",
    r'(?P<raw>(?:u8|u|U|L)?R"(?P<delim>[^()\\ \t\v\f\n"]{0,16})\([\s\S]*?\)(?P=delim)"(?:[A-Za-z_]\w*)?)',
    r'(?P<str>(?:u8|u|U|L)?"(?:[^"\\\n]|\\[^\n]|\\(?=\n))*(?:"(?:[A-Za-z_]\w*)?)?)',
    r"(?P<chr>(?:u8|u|U|L)?'(?:[^'\\\n]|\\[^\n]|\\(?=\n))*'?)",
    r"(?P<num>\.?[0-9](?:[eEpP][+-]|'|[A-Za-z0-9_.])*)",
    r"(?P<id>[A-Za-z_]\w*)",
    r"(?P<p>::|->|<%|%>|%:|[\s\S])",
)), re.ASCII)
_KIND = {"raw": "s", "str": "s", "chr": "s", "num": "n", "id": "i", "p": "p"}

_OPEN, _CLOSE = ("{", "<%"), ("}", "%>")
_CONDITIONALS = frozenset({"if", "ifdef", "ifndef", "elif", "else", "endif", "elifdef", "elifndef"})
_KEPT_DIRECTIVES = _CONDITIONALS | {"pragma", "error", "warning"}
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
    file includes (each blanked, never read). parts: every named declaration with its kind, line and fate.
    """

    text: str
    kept: tuple[str, ...]
    ignored: tuple[str, ...]
    whole_program: bool
    kernel: str = exercise.KERNEL_NAME
    kernel_line: int = 0
    headers: tuple[str, ...] = ()
    parts: tuple[Part, ...] = ()

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


def extract(text: str, name: str, kernel: str = exercise.KERNEL_NAME) -> Extracted:
    """Decide whether `text` is a whole program and return the translation unit NVRTC compiles for `kernel`.

    text: the submission as written, normalized (LF line ends, no byte order mark: grader.directives.normalize);
    name: the safe file name written into `#line` directives (grader.source.safe_source_name).
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
        program = _Program(strict, name, kernel)
        if not program.split_ok or not program.has_host_code:
            return Extracted(f'#line 1 "{name}"\n{strict.normalized}', (), (), False)
        return program.extract(_headers(strict))
    wide = scan(text, PROGRAM_INCLUDES)
    if wide.refusal is not None:
        same = wide.refusal[:2] == strict.refusal[:2]
        line, token, why = strict.refusal if same else wide.refusal
        raise SubmissionError("source", f"{name}:{line}: refused `{token}`: {why}")
    program = _Program(wide, name, kernel)
    if not program.split_ok:
        program.raise_unsplittable()
    return program.extract(_headers(wide))


def _headers(result: Scan) -> tuple[str, ...]:
    """The header names of the allowed includes `result`'s scan blanked, in order, each once."""
    seen: dict[str, None] = {}
    for d in result.directives:
        if d.name == "include":
            m = re.search(r"[<\"]([A-Za-z0-9_.]+)[>\"]", d.text)
            if m:
                seen.setdefault(m.group(1))
    return tuple(seen)


class _Unsplittable(Exception):
    def __init__(self, token: int, what: str) -> None:
        super().__init__(what)
        self.token, self.what = token, what


@dataclass
class _Decl:
    """One declaration (or directive, or the opening or closing brace of a block) of the program: tokens
    first..last (inclusive) of the live token list."""

    first: int
    last: int
    kind: str  # 'function' (with a body) | 'declaration' (ends at ;) | 'directive' | 'open' | 'close'
    parent: int | None = None  # the enclosing block's 'open' declaration
    body: int = -1  # 'function': the token of its body's `{`
    inside: int | None = None  # 'directive' inside another declaration: that declaration
    node: tuple | None = None  # the #if branches around it: (group, branch, parent node)
    names: tuple[str, ...] = ()
    kind_name: str = ""  # Part.kind: 'kernel' | 'function' | 'variable' | 'macro' | 'type' | ''
    device: bool = False  # may be compiled by NVRTC (device code, a constant, a macro, a type)
    strict: bool = False  # device-only code: a host function it calls or host variable it reads is refused
    template: bool = False
    operator: bool = False
    close: int = -1  # 'open': its 'close' declaration
    block: str = ""  # 'open': 'namespace NAME', 'namespace' (anonymous) or 'extern "C"'
    directive: str = ""  # 'directive': its name
    target: str = ""  # 'using namespace X;' / `#undef X`: X


class _Program:
    """A scanned submission split into declarations; `extract` does the rest."""

    def __init__(self, result: Scan, name: str, kernel: str) -> None:
        self.text, self.name, self.kernel = result.normalized, name, kernel
        self.newlines = [m.start() for m in re.finditer("\n", self.text)]
        self._splice_map()
        starts = {self._spliced_at(d.offset) for d in result.directives
                  if self.text.startswith(("#", "%:"), d.offset)}
        self.toks, self.subs = self._tokenize(starts)
        self.macro_spaces: dict[str, set[str]] = {}
        self._live_tokens()
        self.decls: list[_Decl] = []
        self.inner: list[_Decl] = []  # `#define`/`#undef` lines inside other declarations
        self.host_only: dict[str, list[int]] = {}  # names only host code defines
        self.has_host_code = False
        self.type_names: set[str] = set()  # names of the file's structs, typedefs and aliases
        self.split_ok, self.unsplittable = True, None
        try:
            self._split()
        except _Unsplittable as err:
            self.split_ok, self.unsplittable = False, err
            return
        self._macros()
        for k, d in enumerate(self.decls):
            self._describe(k, d)
            if d.kind_name == "type":
                self.type_names.update(d.names)
        self.has_host_code = any(d.kind == "function" and not d.device for d in self.decls)

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

    def _offset(self, k: int) -> int:
        """The index in the text of spliced index k."""
        j = bisect.bisect_right(self.seg_spliced, k) - 1
        return self.seg_text[j] + k - self.seg_spliced[j]

    def _spliced_at(self, offset: int) -> int:
        j = bisect.bisect_right(self.seg_text, offset) - 1
        return self.seg_spliced[j] + offset - self.seg_text[j]

    def _line(self, offset: int) -> int:
        return bisect.bisect_right(self.newlines, offset - 1) + 1

    def tok_line(self, t: int) -> int:
        return self._line(self._offset(self.toks[t][2]))

    # --- tokens -------------------------------------------------------------------------------------------

    def _tokenize(self, directive_starts: set[int]) -> tuple[list[tuple[str, str, int, int]], dict[int, list]]:
        """Tokens (kind, text, start, end) of the spliced text, kind 'i' identifier, 'p' punctuator, 's'
        literal, 'n' number, 'd' directive (text: its name; its tokens in `subs`). Comments and blanks are
        dropped; a directive runs from its `#` to the end of its logical line."""
        toks: list[tuple[str, str, int, int]] = []
        subs: dict[int, list] = {}
        current: list | None = None
        for m in _TOKEN.finditer(self.s):
            group = m.lastgroup
            if group == "nl":
                current = None
                continue
            if group == "skip":
                continue
            start = m.start()
            tok = (_KIND[group], m.group(), start, m.end())
            if start in directive_starts:
                current = [tok]
                subs[len(toks)] = current
                toks.append(("d", "", start, m.end()))
                continue
            if current is not None:
                current.append(tok)
                toks[-1] = ("d", "", toks[-1][2], m.end())
                continue
            toks.append(tok)
        for t, sub in subs.items():  # the directive's name: `#define` -> 'define', '' for the null directive
            name = sub[1][1] if len(sub) > 1 and sub[1][0] == "i" else ""
            toks[t] = ("d", name, toks[t][2], toks[t][3])
        return toks, subs

    def _live_tokens(self) -> None:
        """Drop the tokens inside `#if 0` groups (and the branches after a taken `#if 1`), and give every
        token the node of the `#if` branches around it (`self.nodes`, for telling alternatives apart)."""
        live, subs, nodes = [], {}, []
        stack: list[list] = []  # per group: [id, branch, taken, dead, node before the group]
        dead = 0
        node = None
        groups = 0
        for t, tok in enumerate(self.toks):
            if tok[0] == "d" and tok[1] in _CONDITIONALS:
                rest = " ".join(x[1] for x in self.subs[t][2:])
                word = tok[1]
                outer = dead  # the groups around this directive's own group
                if word in ("if", "ifdef", "ifndef"):
                    literal = rest if word == "if" else ""
                    now_dead = literal in ("0", "false")
                    groups += 1
                    stack.append([groups, 0, literal in ("1", "true"), now_dead, node])
                    dead += now_dead
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
                    literal = rest if word == "elif" else ""
                    now_dead = g[2] or literal in ("0", "false")
                    g[2] = g[2] or literal in ("1", "true")
                    g[1] += 1
                    dead += now_dead - g[3]
                    g[3] = now_dead
                    node = (g[0], g[1], g[4])
                if not outer:  # kept, taken or not, so the conditional structure stays whole
                    subs[len(live)] = self.subs[t]
                    live.append(tok)
                    nodes.append(node)
                continue
            if dead:
                continue
            if tok[0] == "d":
                subs[len(live)] = self.subs[t]
            live.append(tok)
            nodes.append(node)
        self.toks, self.subs, self.nodes = live, subs, nodes

    # --- declarations -----------------------------------------------------------------------------------

    def _split(self) -> None:
        """Split the tokens into declarations at `;` or a function body's `}` at depth 0; open a namespace or
        `extern "C"` block and split inside it. Raises _Unsplittable where braces or parentheses do not
        balance or a declaration does not end."""
        toks, decls, blocks = self.toks, self.decls, []
        i, n = 0, len(toks)
        while i < n:
            kind, text = toks[i][0], toks[i][1]
            parent = blocks[-1] if blocks else None
            if kind == "d":
                decls.append(_Decl(i, i, "directive", parent, node=self.nodes[i], directive=text))
                i += 1
                continue
            if text in _CLOSE and kind == "p":
                if not blocks:
                    raise _Unsplittable(i, "a `}` that closes nothing")
                end = i + 1 if i + 1 < n and toks[i + 1][1] == ";" else i
                decls[blocks[-1]].close = len(decls)
                decls.append(_Decl(i, end, "close", blocks.pop(), node=self.nodes[i]))
                i = end + 1
                continue
            if text == ";" and kind == "p":
                i += 1
                continue
            start, paren, eq, function = i, 0, False, False
            first_word = text if text != "inline" or i + 1 >= n else toks[i + 1][1]
            while True:
                if i >= n:
                    raise _Unsplittable(start, "a declaration that does not end (a `;` or `}` missing)")
                k, t = toks[i][0], toks[i][1]
                if k == "p":
                    if t == "(":
                        if paren == 0 and i > start and not eq:
                            pk, pt = toks[i - 1][0], toks[i - 1][1]
                            if (pk == "i" and pt not in _ATTRIBUTE_WORDS) or pt == ">":
                                function = True
                        paren += 1
                    elif t == ")":
                        paren -= 1
                        if paren < 0:
                            raise _Unsplittable(i, "a `)` that closes nothing")
                    elif paren == 0:
                        if t == ";":
                            decls.append(_Decl(start, i, "declaration", parent, node=self.nodes[start]))
                            i += 1
                            break
                        if t == "=":
                            eq = True
                        elif t in _OPEN:
                            if first_word == "namespace" or (
                                    i >= start + 2 and toks[i - 1][0] == "s" and toks[i - 2][1] == "extern"):
                                blocks.append(len(decls))
                                decls.append(_Decl(start, i, "open", parent, node=self.nodes[start]))
                                i += 1
                                break
                            close = self._matching_brace(i)
                            if function and not eq:
                                decls.append(_Decl(start, close, "function", parent, body=i,
                                                   node=self.nodes[start]))
                                i = close + 1
                                break
                            i = close  # a class body or a brace initializer: the declaration goes on
                        elif t in _CLOSE:
                            raise _Unsplittable(i, "a `}` inside a declaration")
                elif k == "i" and t == "operator" and paren == 0:
                    function = True
                i += 1
        if blocks:
            raise _Unsplittable(self.decls[blocks[-1]].first, "a block that is not closed")

    def _matching_brace(self, i: int) -> int:
        depth, toks = 0, self.toks
        for j in range(i, len(toks)):
            if toks[j][0] == "p":
                t = toks[j][1]
                if t in _OPEN:
                    depth += 1
                elif t in _CLOSE:
                    depth -= 1
                    if depth == 0:
                        return j
        raise _Unsplittable(i, "a `{` that is never closed")

    def raise_unsplittable(self) -> None:
        err = self.unsplittable
        line = self.tok_line(err.token) if self.toks else 1
        raise SubmissionError("source", (
            f"{self.name}:{line}: cannot split your program into declarations here ({err.what}; a declaration "
            f"split across #if/#else, or a macro that opens or closes braces?), so {self.kernel} cannot be taken "
            f"out of it: fix that, or hand in {self.kernel} and the device code it uses without the host code"))

    # --- what each declaration is ------------------------------------------------------------------------

    def _macros(self) -> None:
        """Map each macro name to the execution-space words its replacement holds (`#define DEV __device__`),
        following macros named in it, so that `DEV float f()` is seen as device code."""
        bodies: dict[str, set[str]] = {}
        for t, sub in self.subs.items():
            if self.toks[t][1] == "define" and len(sub) > 2 and sub[2][0] == "i":
                words = {x[1] for x in sub[3:] if x[0] == "i"}
                bodies.setdefault(sub[2][1], set()).update(words)
        spaces: dict[str, set[str]] = {}
        for macro in bodies:
            if macro in spaces:
                continue
            stack, order = [macro], []
            seen = {macro}
            while stack:  # every macro reachable from this one, each visited once
                m = stack.pop()
                order.append(m)
                for w in bodies.get(m, ()):
                    if w in bodies and w not in seen and w not in spaces:
                        seen.add(w)
                        stack.append(w)
            found = set()
            for m in order:
                found |= bodies[m] & _SPACES
                for w in bodies[m]:
                    found |= spaces.get(w, set())
            for m in order:
                spaces[m] = found
        self.macro_spaces = {m: s for m, s in spaces.items() if s}

    def _spaces(self, a: int, b: int) -> set[str]:
        """The execution-space words among tokens a..b-1, macros expanded."""
        found: set[str] = set()
        for j in range(a, b):
            kind, t = self.toks[j][0], self.toks[j][1]
            if kind == "i":
                if t in _SPACES:
                    found.add(t)
                elif t in self.macro_spaces:
                    found |= self.macro_spaces[t]
        return found

    def _describe(self, k: int, d: _Decl) -> None:
        toks = self.toks
        if d.kind == "directive":
            self._describe_directive(d)
            return
        if d.kind == "open":
            words = [toks[j][1] for j in range(d.first, d.last) if toks[j][0] == "i" and toks[j][1] != "inline"]
            if words and words[0] == "namespace":
                d.block = " ".join(("namespace", "::".join(words[1:]))).strip()
            else:
                d.block = 'extern "C"'
            for j in range(d.first, d.last + 1):  # directives inside the block's head
                if toks[j][0] == "d":
                    self._inner_directive(j, k)
            return
        if d.kind == "close":
            return
        first, end = d.first, (d.body if d.kind == "function" else d.last)
        for j in range(d.first, d.last + 1):
            if toks[j][0] == "d":
                self._inner_directive(j, k)
        # `template <...>`, `extern "C"`
        j = first
        while j < end:
            t = toks[j][1]
            if t == "template" and j + 1 < end and toks[j + 1][1] == "<":
                d.template = True
                j = self._skip_angles(j + 1, end)
            elif t == "extern" and j + 1 < end and toks[j + 1][0] == "s":
                j += 2
            else:
                break
        head = j
        words = [toks[x][1] for x in range(head, end) if toks[x][0] == "i"]
        lead = words[0] if words else ""
        spaces = self._spaces(head, end)
        if d.kind == "function":
            names, d.operator = self._function_name(head, end)
            d.names = names
            d.device = bool(spaces & {"__device__", "__global__"})
            d.kind_name = "kernel" if "__global__" in spaces else "function"
            d.strict = d.device and "__host__" not in spaces
            return
        if lead == "typedef":
            d.names, d.kind_name, d.device = self._typedef_names(head, end), "type", True
            return
        if lead == "using":
            if len(words) > 1 and words[1] == "namespace":
                d.target = words[2] if len(words) > 2 else ""
            elif any(toks[x][1] == "=" for x in range(head, end)):
                d.names, d.kind_name, d.device = (words[1],) if len(words) > 1 else (), "type", True
            else:  # `using ns::name;`: kept only for a namespace of the file (see extract)
                d.target = words[1] if len(words) > 1 else ""
                d.names = (words[-1],)
            return
        if lead in ("namespace", "static_assert", "asm", "__asm__"):
            return
        if lead in _CLASS_KEYS or (lead in ("const", "constexpr", "static", "volatile") and len(words) > 1 and
                                   words[1] in _CLASS_KEYS):
            names = self._class_names(head, end)
            if names is not None:
                d.names, d.kind_name, d.device = names, "type", True
                return
        names, is_function = self._declarator_names(head, end)
        d.names = tuple(names)
        if is_function:  # a prototype (or an object built by a constructor call)
            d.device = bool(spaces & {"__device__", "__global__"})
            d.kind_name = "kernel" if "__global__" in spaces else "function"
            d.strict = False
        else:
            d.kind_name = "variable"
            const = self._const_object(head, end)
            d.device = bool(spaces & _VARIABLE_SPACES) or const
            d.strict = bool(spaces & _VARIABLE_SPACES) or const

    def _describe_directive(self, d: _Decl) -> None:
        sub = self.subs[d.first]
        if d.directive in ("define", "undef") and len(sub) > 2 and sub[2][0] == "i":
            if d.directive == "define":
                d.names, d.kind_name, d.device = (sub[2][1],), "macro", True
            else:
                d.target = sub[2][1]

    def _inner_directive(self, t: int, k: int) -> None:
        """A `#define` or `#undef` inside declaration k: its own declaration, kept alone when k is not."""
        name = self.toks[t][1]
        if name in ("define", "undef"):
            d = _Decl(t, t, "directive", self.decls[k].parent, inside=k, node=self.nodes[t], directive=name)
            self._describe_directive(d)
            self.inner.append(d)

    def _skip_angles(self, j: int, end: int) -> int:
        """From the `<` at j, the index after its matching `>` (parentheses respected), at most `end`."""
        depth = paren = 0
        toks = self.toks
        while j < end:
            t = toks[j][1]
            if toks[j][0] == "p":
                if t == "(":
                    paren += 1
                elif t == ")":
                    paren -= 1
                elif paren == 0 and t == "<":
                    depth += 1
                elif paren == 0 and t == ">":
                    depth -= 1
                    if depth == 0:
                        return j + 1
            j += 1
        return end

    def _groups(self, a: int, b: int):
        """Yield (index, depth) of tokens a..b-1 with the depth of (), [] and {} nesting before each."""
        depth = 0
        toks = self.toks
        for j in range(a, b):
            t = toks[j][1] if toks[j][0] == "p" else ""
            if t in (")", "]", "}", "%>"):
                depth -= 1
            yield j, depth
            if t in ("(", "[", "{", "<%"):
                depth += 1

    def _function_name(self, a: int, b: int) -> tuple[tuple[str, ...], bool]:
        """The name of the function whose head is tokens a..b-1: the identifier before its last parameter
        list at depth 0 (not one of __launch_bounds__, decltype, ...), or `operator<symbol>`."""
        toks = self.toks
        name = ""
        for j, depth in self._groups(a, b):
            if depth:
                continue
            kind, t = toks[j][0], toks[j][1]
            if kind == "i" and t == "operator":
                symbol = []
                for x in range(j + 1, b):
                    if toks[x][1] == "(" and symbol:
                        break
                    symbol.append(toks[x][1])
                    if len(symbol) > 3:
                        break
                return ("operator" + "".join(symbol),), True
            if t == "(" and kind == "p" and j > a and toks[j - 1][0] == "i" and toks[j - 1][1] not in _ATTRIBUTE_WORDS:
                name = toks[j - 1][1]
        return ((name,) if name else ()), False

    def _declarator_names(self, a: int, b: int) -> tuple[list[str], bool]:
        """The names a `;` declaration (tokens a..b-1) declares, one per declarator at depth 0, and whether
        the first declarator has a parameter list (a prototype)."""
        toks = self.toks
        names: list[str] = []
        function = False
        last, stopped, angle, part = "", False, 0, 0
        skip_to = -1
        for j, depth in self._groups(a, b):
            if j < skip_to:
                continue
            kind, t = toks[j][0], toks[j][1]
            if depth:
                continue
            if kind == "p" and t == "," and angle == 0:
                if last:
                    names.append(last)
                last, stopped, part = "", False, part + 1
                continue
            if stopped:
                continue
            if kind == "i":
                if t in _ATTRIBUTE_WORDS and j + 1 < b and toks[j + 1][1] == "(":
                    skip_to = self._close_paren(j + 1, b) + 1
                elif t not in _KEYWORDS and t not in self.macro_spaces:
                    last = t
            elif kind == "p":
                if t == "<" and j > a and toks[j - 1][0] == "i":
                    angle += 1
                elif t == ">" and angle:
                    angle -= 1
                elif t == "(" and j + 1 < b and toks[j + 1][1] in ("*", "&", "^"):
                    close = self._close_paren(j, b)
                    inner = [toks[x][1] for x in range(j + 1, close) if toks[x][0] == "i" and toks[x][1] not in _KEYWORDS]
                    if inner:
                        last = inner[-1]
                    skip_to = close + 1
                elif t in ("=", "{", "<%", "[", ":", "(") and angle == 0:
                    if t == "(" and part == 0:
                        function = True
                    stopped = True
        if last:
            names.append(last)
        return names, function

    def _close_paren(self, j: int, b: int) -> int:
        depth = 0
        for x in range(j, b):
            t = self.toks[x][1]
            if t == "(":
                depth += 1
            elif t == ")":
                depth -= 1
                if depth == 0:
                    return x
        return b

    def _typedef_names(self, a: int, b: int) -> tuple[str, ...]:
        """typedef: the last name of each declarator at depth 0 (after a class body, if any), or the name in
        a `(*name)` group."""
        names, _ = self._declarator_names(a, b)
        return tuple(n for n in names if n != "typedef")

    def _class_names(self, a: int, b: int) -> tuple[str, ...] | None:
        """A class, struct, union or enum declaration (tokens a..b-1): its tag, its enumerators and the
        variables declared after its body; None when it is a variable or function of that type instead
        (`struct S* p;`, `struct S f();`)."""
        toks = self.toks
        brace = next((j for j, depth in self._groups(a, b) if depth == 0 and toks[j][1] in _OPEN), None)
        tag_part = range(a, brace if brace is not None else b)
        words = [toks[j][1] for j in tag_part if toks[j][0] == "i" and toks[j][1] not in _KEYWORDS]
        if brace is None:
            # `struct S;` only: anything more is a variable or function of type `struct S`
            rest = [toks[j][1] for j in tag_part if toks[j][1] not in _CLASS_KEYS]
            return tuple(words[:1]) if len(rest) == 1 else None
        names = words[:1]
        if any(toks[j][1] == "enum" for j in tag_part):
            close = self._matching_brace(brace)
            expect = True
            for j, depth in self._groups(brace + 1, close):
                if depth == 0:
                    if expect and toks[j][0] == "i":
                        names.append(toks[j][1])
                    expect = toks[j][1] == ","
        close = self._matching_brace(brace)
        after, _ = self._declarator_names(close + 1, b)
        return tuple(names + after)

    def _const_object(self, a: int, b: int) -> bool:
        """Whether the first declarator of tokens a..b-1 declares a constant: `constexpr`, or a `const` with
        no `*` or `&` after it (`const float k`, `float* const p`; not `const char* s`)."""
        toks = self.toks
        const = False
        for j, depth in self._groups(a, b):
            if depth:
                continue
            t = toks[j][1]
            if t in ("=", ",", ";", "[", "{", "<%", "("):
                break
            if t == "constexpr":
                return True
            if t == "const":
                const = True
            elif t in ("*", "&", "&&"):
                const = False
        return const

    # --- references -----------------------------------------------------------------------------------

    def references(self, d: _Decl):
        """(name, called, declared here, token) for each identifier of declaration d that may name another
        declaration: not after `.` or `->`. called: followed by `(`; declared here: a parameter, local or
        member of d by the look of it (after a type word, or after `*`/`&` after one)."""
        toks = self.toks
        first, last = d.first, d.last
        declared: set[str] = set()
        found = []
        for j in range(first, last + 1):
            kind = toks[j][0]
            if kind == "d":
                sub = self.subs[j]
                params: set[str] = set()
                start = 2
                if toks[j][1] == "define" and len(sub) > 2:
                    start = 3
                    if len(sub) > 3 and sub[3][1] == "(" and sub[3][2] == sub[2][3]:
                        for x in sub[4:]:
                            if x[1] == ")":
                                break
                            if x[0] == "i":
                                params.add(x[1])
                for x in sub[start:]:
                    if x[0] == "i" and x[1] not in params and x[1] != "defined":
                        found.append((x[1], False, True, j))
                continue
            if kind != "i":
                continue
            t = toks[j][1]
            prev = toks[j - 1][1] if j > first else ""
            if prev in (".", "->"):
                continue
            nxt = toks[j + 1][1] if j < last else ""
            if nxt in _AFTER_DECLARED and j > first and self._declares(j, first):
                declared.add(t)
            found.append((t, nxt == "(", False, j))
        return [(t, called, local or t in declared, j) for t, called, local, j in found]

    def _declares(self, j: int, first: int) -> bool:
        """Whether the identifier at j looks declared there: right after another name (`float v`, `Foo f`,
        not `return v`), after `>` (`Vec<4> v`, not before `)`), or after `*`/`&` right after a type name
        (`const float* p`, `Foo& f`; not `v * scale`)."""
        toks = self.toks
        p = j - 1
        kind, t = toks[p][0], toks[p][1]
        if kind == "i":
            return t not in _NOT_A_TYPE
        if t == ">":
            return toks[j + 1][1] != ")"
        if t not in ("*", "&", "&&"):
            return False
        while p > first and toks[p][1] in ("*", "&", "&&", "__restrict__", "__restrict", "const", "volatile"):
            p -= 1
        t = toks[p][1]
        return t == ">" or (toks[p][0] == "i" and (t in _TYPE_WORDS or t in self.type_names or t.endswith("_t")
                                                   or _VECTOR_TYPE.fullmatch(t) is not None))

    # --- extraction ------------------------------------------------------------------------------------

    def extract(self, headers: tuple[str, ...]) -> Extracted:
        decls = self.decls
        kernels = [k for k, d in enumerate(decls) if d.kind == "function" and self.kernel in d.names]
        self._check_kernel(kernels)
        definers: dict[str, list[int]] = {}
        for k, d in enumerate(decls):
            for n in d.names:
                definers.setdefault(n, []).append(k)
        everything = decls + self.inner
        for k, d in enumerate(self.inner, start=len(decls)):
            for n in d.names:
                definers.setdefault(n, []).append(k)
        kept: set[int] = set()
        queue: list[int] = []

        def keep(k: int) -> None:
            if k in kept:
                return
            kept.add(k)
            queue.append(k)
            parent = everything[k].parent
            while parent is not None and parent not in kept:  # the braces of the blocks around it
                kept.add(parent)
                kept.add(decls[parent].close)
                parent = decls[parent].parent

        for k in kernels:
            keep(k)
        for k, d in enumerate(decls):
            if d.kind == "declaration" and self.kernel in d.names and d.device:
                keep(k)  # a forward declaration of the kernel
            elif d.kind == "function" and d.operator and d.device:
                keep(k)  # operators are used without their name
            elif d.kind == "directive" and d.directive in _CONDITIONALS:
                queue.append(k)  # their macros are needed; they are emitted with their block
        expanded: set[str] = {self.kernel}
        while queue:
            k = queue.pop()
            d = everything[k]
            for ref, called, local, tok in self.references(d):
                ks = definers.get(ref)
                if not ks:
                    continue
                device = [x for x in ks if everything[x].device] if ref not in expanded else None
                if device is not None:
                    expanded.add(ref)
                    for x in device:
                        keep(x)
                    if device:
                        continue
                    self.host_only[ref] = ks
                if ref in self.host_only and d.strict and not local:
                    self._refuse_host(d, ref, called, tok, self.host_only[ref])
        # `#undef X` of a kept macro X, `using namespace N;` of a namespace kept here, `using N::x;` of one
        kept_macros = {n for k in kept for n in everything[k].names if everything[k].kind_name == "macro"}
        kept_blocks = {decls[k].block.split(" ", 1)[1].split("::")[0] for k in kept
                       if k < len(decls) and decls[k].kind == "open" and decls[k].block.startswith("namespace ")}
        for k, d in enumerate(everything):
            if d.kind == "directive" and d.directive == "undef" and d.target in kept_macros:
                keep(k)
            elif d.kind == "declaration" and d.target and not d.device and d.target in kept_blocks:
                keep(k)
        pieces = []
        for k, d in enumerate(decls):
            if d.kind == "directive" and d.directive in _KEPT_DIRECTIVES:
                if d.parent is None or d.parent in kept:
                    pieces.append((d.first, d.last))
            elif k in kept:
                pieces.append((d.first, d.last))
        for k, d in enumerate(self.inner, start=len(decls)):
            if k in kept and d.inside not in kept:
                pieces.append((d.first, d.last))
        pieces.sort()
        text, kernel_line = self._assemble(pieces), self.tok_line(decls[kernels[0]].first)
        parts, seen = [], set()
        for k, d in sorted(enumerate(everything), key=lambda kd: kd[1].first):
            if d.kind_name and d.names and not (k in kept and self.kernel in d.names):
                for n in d.names:
                    if (n, k in kept) not in seen:
                        seen.add((n, k in kept))
                        parts.append(Part(n, d.kind_name, self.tok_line(d.first), k in kept))
        kept_names = tuple(dict.fromkeys(p.name for p in parts if p.kept))
        ignored = tuple(dict.fromkeys(p.name for p in parts if not p.kept and p.name not in kept_names
                                      and p.name != self.kernel))
        parts = [p for p in parts if p.kept or p.name in ignored]
        return Extracted(text, kept_names, ignored, True, self.kernel, kernel_line, headers, tuple(parts))

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
        """The kept pieces (token ranges), each after a `#line` of its first line, scanned once more as one
        text by the exercise's lexer; the text NVRTC compiles after the prelude."""
        out: list[str] = []
        marks: list[tuple[int, int]] = []  # (offset of a placeholder in the assembled text, the line it stands for)
        size = 0
        for first, last in pieces:
            a, b = self._offset(self.toks[first][2]), self._offset(self.toks[last][3] - 1) + 1
            marks.append((size, self._line(a)))
            chunk = f"{LINE_PLACEHOLDER}\n{self.text[a:b]}\n"
            out.append(chunk)
            size += len(chunk)
        assembled = "".join(out)
        result = scan(assembled)
        seen = {d.offset for d in result.directives if d.name == "pragma"}
        if result.refusal is not None or any(at not in seen for at, _ in marks):
            line = self._assembled_line(assembled, marks, result.refusal[0]) if result.refusal else 0
            why = (f"refused `{result.refusal[1]}`: {result.refusal[2]}" if result.refusal
                   else "the pieces do not read as they did in the file")
            raise SubmissionError("source", (
                f"{self.name}:{line}: {why} (in the code kept from your program); hand in {self.kernel} and the "
                "device code it uses without the host code") if line else (
                f"{self.name}: {why} (in the code kept from your program); hand in {self.kernel} and the device "
                "code it uses without the host code"))
        text, pos, final = [], 0, result.normalized
        for at, line in marks:
            text.append(final[pos:at])
            text.append(f'#line {line} "{self.name}"')
            pos = at + len(LINE_PLACEHOLDER)
        text.append(final[pos:])
        return "".join(text)

    @staticmethod
    def _assembled_line(assembled: str, marks: list[tuple[int, int]], line: int) -> int:
        """The student's line of line `line` of the assembled text."""
        starts = [assembled.count("\n", 0, at) + 1 for at, _ in marks]
        j = bisect.bisect_right(starts, line) - 1
        return marks[j][1] + line - starts[j] - 1 if j >= 0 else 0


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
