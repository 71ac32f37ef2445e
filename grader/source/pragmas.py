"""Part of stage 1, source: the directives nvcc's preprocessor honours and NVRTC ignores, refused by name.

nvcc runs the host compiler's preprocessor (g++) on the whole file, for the device code too; NVRTC has its
own. Where the two read a directive differently, the kernel the grader compiles is not the kernel nvcc
builds from the same file. Each case below was compiled both ways, nvcc 13.0 and NVRTC 13.0 for sm_90, and
the exercise kernel's machine code compared (benchmarks/nvcc_oracle.py; tests/test_nvcc_oracle.py holds them):

refused (grader.source.includes calls these functions from its lexer; the message names the directive and what to
write instead):
- a reserved name (a leading `_`) that one of the two defines before a file's first line and the other does not
  (grader/source/host_macros.json's nvcc_only and nvrtc_only, read from the real preprocessors by
  benchmarks/host_macros.py): `__GNUC__`, `__linux__`, `__x86_64__`, `__FLT_MAX__`, ... (1743 names g++ and
  nvcc's implicit cuda_runtime.h define and NVRTC 13.5 does not), g++'s built-in `__COUNTER__`,
  `__TIMESTAMP__`, `__FILE_NAME__`, and NVRTC's own `__CUDACC_RTC__`, `__EDG__`, ...: an `#ifdef` on one takes
  another branch in the grader than in nvcc's build, silently, and code that uses one compiles in one and not
  the other; and `__VA_OPT__`, which g++ expands and NVRTC 13.0 does not. Names both define
  (`__CUDA_ARCH__`, `__CUDACC__`, `__device__`, `__cplusplus`, ...) are graded as written;
- `#pragma push_macro("X")` / `#pragma pop_macro("X")`, also through `_Pragma("push_macro(\\"X\\")")`, with
  an `L`/`u8`/`u`/`U` prefix, after a comment or as `%:pragma`: g++ saves and restores the macro, NVRTC keeps
  the last definition, so the kernel differs;
- `_Pragma` whose argument is not a string literal written out (`_Pragma(#x)` in a macro, a raw string):
  what it says cannot be known before expansion, and it may say push_macro;
- `#` (or `%:`) inside an `#if` or `#elif` condition: a GCC assertion such as `#machine(x86_64)`, true for
  g++, false for NVRTC without a word;
- `#pragma GCC poison`, `#pragma GCC error` and `#pragma GCC dependency`: nvcc stops on them (a poisoned name
  used, the error, a missing or newer file) where NVRTC goes on, so the grader would grade a file nvcc
  refuses to build (and `dependency` makes nvcc look at another file).

graded as nvcc reads them (the same machine code both ways): `#pragma once` and `#pragma GCC system_header`
in the main file (g++ warns and ignores them), `#pragma GCC warning`, `#pragma message`, `#pragma STDC ...`,
`#pragma GCC push_options`/`optimize`/`target`/`diagnostic`/`visibility`/`unroll`, `#pragma pack`, `#pragma
weak`, `#pragma redefine_extname`, `#pragma nv_diag_suppress`, and push_macro/poison/dependency spelled
without their namespace as g++ ignores them (`#pragma GCC push_macro`, `#pragma poison`), or through a macro
(`#pragma PM("X")` with `#define PM push_macro`: g++ does not expand a pragma's words). The directives g++
honours that are no `#pragma` (`#ident`, `#sccs`, `#assert`, `#unassert`, `#include_next`, `#import`) are
refused by grader.source.includes' allow-list already.
"""

from __future__ import annotations

import functools

from grader.source.lexer import BLANK, COMMENT, IDENT, STRING, literal_quote, token_at
from grader.source.prelude import host_macros

__all__ = ["ASSERTION_REFUSAL", "pragma_operator_refusal", "pragma_refusal", "name_refusal"]

_UNDO = ("instead of saving and restoring the macro, write its `#undef` and `#define` again where you would "
         "restore it")

_REFUSED = {
    ("push_macro",): ("nvcc's preprocessor saves the macro and NVRTC ignores the pragma, so the grader would "
                      "compile another kernel than nvcc builds; " + _UNDO),
    ("pop_macro",): ("nvcc's preprocessor restores the macro and NVRTC ignores the pragma, so the grader would "
                     "compile another kernel than nvcc builds; " + _UNDO),
    ("GCC", "poison"): "nvcc stops where a poisoned name is used and NVRTC ignores the pragma; delete the line",
    ("GCC", "error"): "nvcc stops on it and NVRTC ignores it; write `#error ...` instead (both stop on that)",
    ("GCC", "dependency"): ("nvcc compares the file's date with another file's and NVRTC ignores the pragma "
                            "(the grader reads no other file); delete the line"),
}

_NOT_A_LITERAL = ("`_Pragma` without a string literal written out right after it (as in a macro's `_Pragma(x)` "
                  "or `_Pragma(#x)`, or a raw string): the grader cannot tell which pragma it makes, and nvcc's "
                  "preprocessor honours push_macro and pop_macro, which NVRTC ignores; write the pragma out, "
                  "`#pragma unroll` or `_Pragma(\"unroll\")`")

ASSERTION_REFUSAL = ("a `#` inside an #if or #elif condition (a GCC assertion such as `#machine(x86_64)`): "
                     "nvcc's preprocessor evaluates it and NVRTC takes it as false, so the grader would compile "
                     "another branch than nvcc; test a macro you #define instead")


_VA_OPT = ("nvcc's preprocessor (g++) expands `__VA_OPT__` and NVRTC 13.0 does not, so the kernel graded "
           "would not be the one nvcc builds; write two macros, one with and one without the variadic arguments")


@functools.cache
def _diverging() -> dict[str, str]:
    """{reserved name: why it is refused} for host_macros.json's nvcc_only and nvrtc_only, and `__VA_OPT__`."""
    data = host_macros()
    nvcc = ("a macro nvcc's preprocessor defines (g++ predefines it, or nvcc's implicit cuda_runtime.h does) and "
            "NVRTC does not: an #if or #ifdef on it takes another branch in the grader than in nvcc's build, and "
            "code that uses it does not compile here; remove the test and keep the branch you mean, or write the "
            "value itself")
    nvrtc = ("a macro NVRTC defines and nvcc's preprocessor does not: an #if or #ifdef on it takes another branch "
             "in the grader than in nvcc's build; remove the test and keep the branch nvcc takes (a whole program "
             "may #include <cstdio> and the other standard headers without a guard)")
    why = {name: nvcc for name in data.get("nvcc_only", ())}
    why.update({name: nvrtc for name in data.get("nvrtc_only", ())})
    why["__COUNTER__"] = nvcc + " (for __COUNTER__: distinct integer constants)"
    why["__VA_OPT__"] = _VA_OPT
    return why


def name_refusal(word: str) -> str | None:
    """Why the identifier `word` is refused wherever it stands outside comments and literals, in any group
    (module docstring: a reserved name only one of nvcc's preprocessor and NVRTC defines, or `__VA_OPT__`), or
    None. Names without a leading underscore are never refused here."""
    return _diverging().get(word) if word.startswith("_") else None


def _skip(s: str, i: int) -> int:
    """Past the blanks and closed `/* */` comments from spliced index i (inside a directive such a comment
    does not end it, even over lines); a `//` comment or anything else stops it."""
    while i < len(s):
        tok = token_at(s, i)
        if tok.kind != BLANK and not (tok.kind == COMMENT and s.startswith("/*", i)):
            return i
        i = tok.end
    return i


def _words(s: str, start: int) -> tuple[str, ...]:
    """The first two identifiers of a pragma's text from spliced index `start` (grader.source.lexer's tokens, blanks
    and block comments skipped); fewer where something else comes first."""
    words: list[str] = []
    i = _skip(s, start)
    while i < len(s) and len(words) < 2:
        tok = token_at(s, i)
        if tok.kind != IDENT:
            break
        words.append(tok.text(s))
        i = _skip(s, tok.end)
    return tuple(words)


def pragma_refusal(s: str, start: int) -> tuple[str, str] | None:
    """For the pragma whose text (after the word `pragma`) starts at index `start` of the spliced text `s`:
    (its name, such as 'push_macro' or 'GCC poison'; why it is refused) when nvcc's preprocessor honours it
    and NVRTC does not (see the module's docstring), else None. Reads two words at most."""
    words = _words(s, start)
    for key in (words[:1], words[:2]):
        if key in _REFUSED:
            return " ".join(key), _REFUSED[key]
    return None


def pragma_operator_refusal(s: str, at: int) -> str | None:
    """Why the `_Pragma` operator whose name ends at index `at` of the spliced text `s` is refused, or None:
    its argument must be a string literal written out (an optional L, u8, u or U prefix; no raw string, no
    suffix), on the same line, and the pragma it holds must not be one pragma_refusal refuses."""
    i = _skip(s, at)
    if not s.startswith("(", i):
        return _NOT_A_LITERAL
    i = _skip(s, i + 1)
    tok = token_at(s, i) if i < len(s) else None
    if tok is None or tok.kind != STRING or tok.suffix != tok.end:  # unclosed (-1) or with a suffix
        return _NOT_A_LITERAL
    found = pragma_refusal(_destringize(s[literal_quote(s, tok) + 1 : tok.end - 1]), 0)
    return f"`_Pragma` holding `#pragma {found[0]}`: {found[1]}" if found else None


def _destringize(body: str) -> str:
    """A string literal's body as `_Pragma` reads it: `\\"` stands for `"` and `\\\\` for `\\`."""
    out, k = [], 0
    while k < len(body):
        if body[k] == "\\" and body[k + 1 : k + 2] in ("\\", '"'):
            k += 1
        out.append(body[k])
        k += 1
    return "".join(out)
