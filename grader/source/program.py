"""Part of stage 1, source: a whole program is a valid submission; find the kernel in it and extract what NVRTC
compiles.

A student may hand in the course program itself (`elementwise.cu`: `#include <cstdio>`, constants, device
helpers, the page's other kernels, a host `main` with cudaMalloc, launches, event timing and printf). NVRTC
compiles device code only: it refuses every host function and host variable ("not allowed in JIT mode"), and
the grader reads no header. So for a whole program this module keeps the exercise's kernel and the device code it
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

Nothing here reads a file or gives text a new path to NVRTC: the whole file first passes grader.source.includes'
lexer (with PROGRAM_INCLUDES blanked instead of read), the extracted pieces are then scanned again, as one
text, by the same lexer with the exercise's own allow-list, and NVRTC compiles exactly what that scan
returned. The only text not scanned is the grader's own `#line N "name"` before each piece (so diagnostics
keep the student's line numbers): each stands where the scan saw a placeholder directive on a line of its own.

This is not a C++ parser. The tokens (grader.source.program_tokens: grader.source.lexer's, the include policy's own,
with preprocessor lines and the `#if` branches NVRTC certainly skips told apart) are split into declarations at `;`
or `}` at depth 0 (a namespace or `extern "C"` block is opened and split inside: grader.source.program_split), each
declaration is described by grader.source.program_declarators (its names, kind and execution space), and a
declaration's references are the identifiers in it.
Everything is linear in the file's length: every token is looked at a bounded number of times, and every name
is resolved once.

A file that is only device code (today's submissions) is not a whole program: it compiles as before, byte for
byte. A whole program is one that includes a host header (PROGRAM_INCLUDES beyond ALLOWED_INCLUDES) or defines
a host function (`main`, or any function not marked `__device__` or `__global__`).

What a student may hand in as a whole program, for the reader: docs/submissions.md.
"""

from __future__ import annotations

import bisect
import heapq
import re
from dataclasses import dataclass

from grader.compile.predefined import nvrtc_defines
from grader.core.errors import Stage, SubmissionError
from grader.source.includes import PROGRAM_INCLUDES, Scan, scan
from grader.source.prelude import header_macro_names
from grader.source.program_declarators import Describer, macro_spaces
from grader.source.program_split import Decl, Unsplittable, split
from grader.source.program_tokens import CONDITIONALS, Tokens

__all__ = ["PROGRAM_INCLUDES", "Extracted", "Part", "extract"]

LINE_PLACEHOLDER = "#pragma grader_line"
"""Stands where a `#line` directive goes while the extracted text is scanned (the lexer refuses `#line`)."""

_KEPT_DIRECTIVES = CONDITIONALS | {"pragma", "error", "warning"}
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
    was extracted). kernel: the name of the kernel graded (Exercise.kernel_name). kept: the names kept besides the
    kernel, in file order ('geluErf', 'kInvSqrt2'); ignored: the names left out ('main', 'copyFloor', ...); both
    empty for a file that is not a whole program.
    kernel_line: the line of the kernel's definition (0 when not a whole program). headers: the headers the
    file includes (each blanked, never read; grader.source.read.prelude supplies the macros of some). parts: every
    named declaration with its kind, line and fate. names: the identifiers of the extracted text (directives
    included), for a whole program: the prelude defines those a host header would (grader.source.prelude).
    """

    text: str
    kept: tuple[str, ...]
    ignored: tuple[str, ...]
    whole_program: bool
    kernel: str
    kernel_line: int = 0
    headers: tuple[str, ...] = ()
    parts: tuple[Part, ...] = ()
    names: frozenset[str] = frozenset()

    def summary(self, most: int = 6) -> str:
        """One line for a report: "graded KERNEL from your program; kept geluErf, kInvSqrt2; ignored
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


def extract(text: str, name: str, kernel: str, compiler_defines=nvrtc_defines) -> Extracted:
    """Decide whether `text` is a whole program and return the translation unit NVRTC compiles for `kernel`.

    text: the submission as written, normalized (LF line ends, no byte order mark: grader.source.includes.normalize);
    name: the safe file name written into `#line` directives (grader.source.read.safe_source_name).
    kernel: the `__global__` function graded, the exercise's (grader.core.exercise.Exercise.kernel_name).
    compiler_defines: which names NVRTC defines itself (grader.compile.predefined.nvrtc_defines; None: decide no
    `#if` on a name without a leading underscore), so that `#ifdef CUDART_VERSION` is not read as false.
    A file that passes grader.source.includes' lexer with its own allow-list and defines no host function is not a
    whole program: its `Extracted.text` is `#line 1 "name"` and the scanned text, as grader.source.read always
    compiled it. Otherwise the file must pass the lexer with PROGRAM_INCLUDES allowed, and the kernel and the
    device code it uses are extracted (see the module's docstring).

    Raises SubmissionError (stage "source") naming the line: a refused construct anywhere in the file (an
    include form, `__has_include`, token pasting, ...: grader.source.includes), or a kernel that cannot be separated
    from the program (it calls a host function or reads a host variable, it is a template, it is in a
    namespace, it is defined twice, it is missing, or the file cannot be split into declarations). Never
    reads a file; linear in the length of `text`.
    """
    strict = scan(text)
    if strict.refusal is None:
        headers = _headers(strict)
        as_is = Extracted(f'#line 1 "{name}"\n{strict.normalized}', (), (), False, kernel, headers=headers)
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
        raise SubmissionError(Stage.SOURCE, f"{name}:{line}: refused `{token}`: {why}")
    program = _Program(wide, name, kernel, _headers(wide), compiler_defines)
    if not program.split_ok:
        program.raise_unsplittable()
    return program.extract()


def _headers(result: Scan) -> tuple[str, ...]:
    """The header names of the allowed includes `result`'s scan blanked, in order, each once."""
    return tuple(dict.fromkeys(d.header for d in result.directives if d.header))



class _Program:
    """A scanned submission split into declarations; `extract` does the rest.

    Its tokens are grader.source.program_tokens.Tokens' parallel lists (`kinds`, `texts`, `starts`, `ends`), `subs`
    (a directive's own tokens) and `nodes` (the `#if` branches around each token); its declarations
    grader.source.program_split's, described by grader.source.program_declarators.
    """

    def __init__(self, result: Scan, name: str, kernel: str, headers: tuple[str, ...] = (),
                 compiler_defines=None) -> None:
        self.text, self.name, self.kernel, self.headers = result.normalized, name, kernel, headers
        tokens = self.tokens = Tokens(result.normalized, (d.offset for d in result.directives), compiler_defines,
                                      header_macro_names(headers))
        self.kinds, self.texts, self.starts, self.ends = tokens.kinds, tokens.texts, tokens.starts, tokens.ends
        self.subs, self.nodes, self.tok_line = tokens.subs, tokens.nodes, tokens.tok_line
        self.decls: list[Decl] = []
        self.inner: list[Decl] = []  # `#define`/`#undef` lines inside other declarations
        self.host_only: dict[str, list[int]] = {}  # names only host code defines
        self.type_names: set[str] = set()  # names of the file's structs, typedefs and aliases
        self.has_host_code = False
        self.split_ok, self.unsplittable = True, None
        try:
            self.decls = split(tokens)
        except Unsplittable as err:
            self.split_ok, self.unsplittable = False, err
            return
        self.describer = Describer(tokens, macro_spaces(tokens))
        for d in self.decls:
            if d.kind == "function":
                self.describer.describe_function(d)
                self.has_host_code = self.has_host_code or not d.device

    def defines_main(self) -> bool:
        """Whether the file names `main(` outside a directive: a host program, even where it cannot be split."""
        texts = self.texts
        return any(t == "main" and k == "i" and texts[j + 1:j + 2] == ["("] for j, (k, t) in
                   enumerate(zip(self.kinds, texts, strict=True)))

    def raise_unsplittable(self) -> None:
        """Raise the SubmissionError for a program that could not be split into declarations."""
        err = self.unsplittable
        raise SubmissionError(Stage.SOURCE, (
            f"{self.name}:{self.tok_line(err.token)}: cannot split your program into declarations here "
            f"({err.what}; a declaration split across #if/#else, or a macro that opens or closes braces?), so "
            f"{self.kernel} cannot be taken out of it: fix that, or hand in {self.kernel} and the device code "
            "it uses without the host code"))

    def _describe_all(self) -> None:
        """Describe every declaration that is not a function definition (done in __init__), find the
        `#define`/`#undef` lines inside declarations, and collect the file's type names."""
        decls, describer = self.decls, self.describer
        for d in decls:
            if d.kind == "directive":
                describer.describe_directive(d)
            elif d.kind == "declaration":
                describer.describe_declaration(d)
            if d.kind_name == "type":
                self.type_names.update(d.names)
        firsts = [d.first for d in decls]
        for t in self.subs:
            k = bisect.bisect_right(firsts, t) - 1
            if k >= 0 and decls[k].kind != "directive" and t <= decls[k].last and self.texts[t] in ("define", "undef"):
                d = Decl(t, t, "directive", decls[k].parent, self.nodes[t], inside=k, directive=self.texts[t])
                describer.describe_directive(d)
                self.inner.append(d)

    # --- references -----------------------------------------------------------------------------------

    def references(self, d: Decl) -> list[tuple[str, bool, bool, int]]:
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
        keeper = _Keeper(self, everything)
        for k in kernels:
            keeper.keep(k)
        for k, d in enumerate(decls):
            if d.kind == "declaration" and self.kernel in d.names and d.device:
                keeper.keep(k)  # a forward declaration of the kernel
            elif d.kind == "function" and d.operator and d.device:
                keeper.keep(k)  # operators are used without their name
        keeper.resolve()
        pieces = self._pieces(keeper)
        text = self._assemble(pieces)
        return self._result(text, everything, keeper.kept, self.headers, kernels, self._names(pieces))

    def _pieces(self, keeper: _Keeper) -> list[tuple[int, int]]:
        """The token ranges NVRTC gets, in file order: the kept declarations, the kept `#define`/`#undef`
        lines inside left-out ones, and the `#if` groups' and `#pragma`/`#error`/`#warning` directives that
        are not inside left-out code."""
        decls, kept = self.decls, keeper.kept
        pieces = []
        for k, d in enumerate(decls):
            if d.kind == "directive" and d.directive in _KEPT_DIRECTIVES:
                g = keeper.group_of[k]
                if (g is None or keeper.content[g]) and (d.parent is None or d.parent in kept):
                    pieces.append((d.first, d.last))
            elif k in kept:
                pieces.append((d.first, d.last))
        for k, d in enumerate(self.inner, start=len(decls)):
            if k in kept and d.inside not in kept:
                if d.node != decls[d.inside].node:  # under an #if inside left-out code: kept alone, it would lie
                    self._refuse_inner_conditional(d)
                pieces.append((d.first, d.last))
        pieces.sort()
        return pieces

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

    def _result(self, text: str, everything: list[Decl], kept: set[int], headers: tuple[str, ...],
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
            raise SubmissionError(Stage.SOURCE, (
                f"{where}: your program defines no kernel `__global__ void {self.kernel}(...)`; kernels found: "
                f"{listing or 'none'}. Name your kernel `{self.kernel}`"))
        for k in kernels:
            d = decls[k]
            line = self.tok_line(d.first)
            block = self._namespace(d)
            if block:
                raise SubmissionError(Stage.SOURCE, (
                    f"{where}:{line}: `{self.kernel}` is inside `{block} {{ }}`: the grader looks it up at file "
                    f"scope; move `{self.kernel}` out of the namespace (its device helpers may stay, called as "
                    "`name::helper`)"))
        if len(kernels) > _MAX_KERNEL_DEFINITIONS:
            lines = [self.tok_line(decls[k].first) for k in kernels]
            raise SubmissionError(Stage.SOURCE, (
                f"{where}:{lines[1]}: `{self.kernel}` is defined {len(kernels)} times (lines {lines[0]}, "
                f"{lines[1]}, ...); keep one definition"))
        for x, a in enumerate(kernels):
            for b in kernels[x + 1:]:
                if not _exclusive(decls[a].node, decls[b].node):
                    la, lb = self.tok_line(decls[a].first), self.tok_line(decls[b].first)
                    raise SubmissionError(Stage.SOURCE, (
                        f"{where}:{lb}: `{self.kernel}` is defined twice (lines {la} and {lb}): keep one definition "
                        "(or put the versions in the branches of one #if/#else)"))
        for k in kernels:
            d = decls[k]
            if d.template:
                raise SubmissionError(Stage.SOURCE, (
                    f"{where}:{self.tok_line(d.first)}: `{self.kernel}` is a template: the grader launches one plain "
                    f"kernel; write `__global__ void {self.kernel}(...)` without `template <...>` (put the "
                    "template's arguments into it as constants)"))
            if d.kind_name != "kernel":
                raise SubmissionError(Stage.SOURCE, (
                    f"{where}:{self.tok_line(d.first)}: `{self.kernel}` is not a __global__ kernel but a "
                    f"{'device' if d.device else 'host'} function; declare it `__global__ void {self.kernel}(...)`"))

    def _refuse_inner_conditional(self, d: Decl) -> None:
        """Refuse a `#define`/`#undef` that kept code needs, inside left-out code (main's body) under an `#if`
        that starts there too: keeping the line without its `#if` would change what it means."""
        outer = self.decls[d.inside]
        where = outer.names[0] if outer.names else "code the grader leaves out"
        raise SubmissionError(Stage.SOURCE, (
            f"{self.name}:{self.tok_line(d.first)}: `{d.names[0] if d.names else d.target}`, which {self.kernel} "
            f"uses, is set by a #{d.directive} inside `{where}` under an #if there: the grader compiles only "
            f"{self.kernel} and the device code it uses, so it cannot take that line with its #if; move the #if "
            f"block with its #{d.directive} out of `{where}`, to the top of the file"))

    def _namespace(self, d: Decl) -> str:
        parent = d.parent
        while parent is not None:
            block = self.decls[parent].block
            if block.startswith("namespace"):
                return block
            parent = self.decls[parent].parent
        return ""

    def _refuse_host(self, d: Decl, ref: str, called: bool, tok: int, host: list[int]) -> None:
        user = d.names[0] if d.names else "kept code"
        everything = self.decls + self.inner
        target = everything[host[0]]
        at = self.tok_line(target.first)
        if target.kind_name == "variable" and not called:
            raise SubmissionError(Stage.SOURCE, (
                f"{self.name}:{self.tok_line(tok)}: `{user}` reads `{ref}`, a host variable (line {at}): device "
                f"code cannot read it, and the grader compiles only {self.kernel} and the device code it uses; "
                f"make `{ref}` `constexpr` (or `__constant__`), or pass it as a parameter"))
        if target.kind_name in ("function", "kernel") and called:
            raise SubmissionError(Stage.SOURCE, (
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
            raise SubmissionError(Stage.SOURCE, (
                f"{where}: {why} (in the code kept from your program); hand in {self.kernel} and the device code "
                "it uses without the host code"))
        parts, pos, final = [], 0, result.normalized
        for at, _, line in marks:
            parts.append(final[pos:at])
            parts.append(f'#line {line} "{self.name}"')
            pos = at + len(LINE_PLACEHOLDER)
        parts.append(final[pos:])
        return "".join(parts)


class _Keeper:
    """Which declarations a whole program's extraction keeps (`kept`: indices into decls + inner): what `keep`
    is given, the blocks around it, the `#if` groups that hold it (whole, and the macros they test), the
    `#undef`s of a kept macro and the `using`s of a kept namespace, and then (`resolve`) what kept code names,
    each name resolved once."""

    def __init__(self, program: _Program, everything: list[Decl]) -> None:
        self.program, self.everything, self.decls = program, everything, program.decls
        self.definers: dict[str, list[int]] = {}
        self.undefs: dict[str, list[int]] = {}  # `#undef X`: kept with a kept macro X
        self.usings: dict[str, list[int]] = {}  # `using namespace N;`, `using N::x;`: kept with namespace N's braces
        for k, d in enumerate(everything):
            for n in d.names:
                self.definers.setdefault(n, []).append(k)
            if d.kind == "directive" and d.directive == "undef" and d.target:
                self.undefs.setdefault(d.target, []).append(k)
            elif d.kind == "declaration" and d.target and not d.device:
                self.usings.setdefault(d.target, []).append(k)
        self.group_of, self.group_parent, self.group_directives, unclosed = program._conditional_groups()
        self.content = [False] * len(self.group_directives)  # the group holds kept code: its directives are kept
        self.kept: set[int] = set()
        self.queue: list[int] = []  # kept declarations whose references are not yet resolved
        for g in unclosed:
            self.mark(g)

    def mark(self, g: int | None) -> None:
        """`#if` group g (and the groups around it) holds kept code: keep its directives."""
        while g is not None and not self.content[g]:
            self.content[g] = True
            self.queue.extend(self.group_directives[g])  # the macros they test are needed too
            g = self.group_parent[g]

    def _take(self, k: int) -> None:
        self.kept.add(k)
        d = self.everything[k]
        self.mark(self.group_of[d.inside if d.inside is not None else k])
        if d.kind_name == "macro":
            for u in self.undefs.get(d.names[0], ()):
                self.keep(u)
        elif d.kind == "open" and d.block.startswith("namespace "):
            for u in self.usings.get(d.block.split(" ", 1)[1].split("::")[0], ()):
                self.keep(u)

    def keep(self, k: int) -> None:
        """Keep declaration k, the braces of the blocks around it and what goes with it (see the class)."""
        if k in self.kept:
            return
        self._take(k)
        self.queue.append(k)
        parent = self.everything[k].parent
        while parent is not None and parent not in self.kept:  # the braces of the blocks around it
            self._take(parent)
            self._take(self.decls[parent].close)
            parent = self.decls[parent].parent

    def resolve(self) -> None:
        """Keep the device definitions of every name kept code uses, until none is left; refuse device-only code
        that uses a name only host code defines (SubmissionError)."""
        program, everything, queue = self.program, self.everything, self.queue
        expanded: set[str] = {program.kernel}
        while queue:
            d = everything[queue.pop()]
            for ref, called, local, tok in program.references(d):
                ks = self.definers.get(ref)
                if not ks:
                    continue
                if ref not in expanded:  # each name is resolved once
                    expanded.add(ref)
                    device = [x for x in ks if everything[x].device]
                    for x in device:
                        self.keep(x)
                    if not device:
                        program.host_only[ref] = ks
                if d.strict and not local and ref in program.host_only:
                    program._refuse_host(d, ref, called, tok, program.host_only[ref])


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
