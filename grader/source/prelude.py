"""Part of stage 1, source: the grader's own text before a submission (`prelude`), what NVRTC would otherwise
take from headers the grader never reads.

NVRTC from the package index has no C or C++ headers, and the grader blanks every `#include` it allows
(grader.source.includes). So the fixed-width integer types, always, and for a file that includes one of the allowed
headers, the macros and types device code takes from it, come from here, written before the submission's
`#line 1`: HEADER_MACROS, with the values of the target. The target is device code on Linux, LP64 (long and
pointers 64 bits), as nvcc builds it on x86_64 and on aarch64 alike: the values are those of glibc's headers and
gcc's <float.h> and <limits.h> (glibc 2.36, gcc 12 here), which tests/test_prelude.py checks against the system's
headers (names and values, by running what g++ compiles from them) and against NVRTC (each value, type included, a
static_assert). Where aarch64's glibc differs (char is unsigned there: CHAR_MIN and CHAR_MAX follow
__CHAR_UNSIGNED__ as glibc's do; FP_ILOGB0 and FP_ILOGBNAN) the x86_64 values are written. CUDA_VERSION (cuda.h)
is the version of the NVRTC in use, as CUDART_VERSION (cuda_runtime.h) already is in NVRTC's own headers:
`#if CUDA_VERSION >= 11000` takes the branch the NVRTC compiling it belongs in. LEFT_OUT names what the headers
define and the prelude does not, and why.

A whole program (grader.source.program) is read as nvcc reads it: nvcc's device pass sees its implicit `cuda_runtime.h`
(which brings <stdio.h>, <stdlib.h>, <math.h>, ...) and every host header the program includes. host_macros.json
lists those macros (benchmarks/host_macros.py reads them from the real headers); header_macro_names gives the
extractor their names, so that `#ifdef EOF` is not decided as false, and prelude() defines, for a whole program,
each of them that the extracted text names (`#ifdef EOF`, `x == EOF`): HEADER_MACROS' definition where it has
one, else the header's own (an object-like macro fully expanded), each under `#ifndef` so that NVRTC's own
definition (NULL, assert, CUDART_VERSION) stays.
"""

from __future__ import annotations

import functools
import json
import re
from importlib.resources import files

PRELUDE = """\
#line 1 "the grader's prelude"
typedef signed char int8_t; typedef unsigned char uint8_t;
typedef short int16_t; typedef unsigned short uint16_t;
typedef int int32_t; typedef unsigned int uint32_t;
typedef long int64_t; typedef unsigned long uint64_t;
"""
"""Fixed-width integer types, which NVRTC does not define without headers: int64_t is `long`, as glibc's LP64
headers declare it (nvcc's device code sees the same). The `#line` names the prelude in NVRTC's messages
("declared at line 5 of the grader's prelude"), never as the student's file."""

_MATH_CONSTANTS = {  # glibc's <math.h> (with _GNU_SOURCE, as g++ defines it): M_X double, M_Xf float
    "E": "2.7182818284590452354", "LOG2E": "1.4426950408889634074", "LOG10E": "0.43429448190325182765",
    "LN2": "0.69314718055994530942", "LN10": "2.30258509299404568402", "PI": "3.14159265358979323846",
    "PI_2": "1.57079632679489661923", "PI_4": "0.78539816339744830962", "1_PI": "0.31830988618379067154",
    "2_PI": "0.63661977236758134308", "2_SQRTPI": "1.12837916709551257390", "SQRT2": "1.41421356237309504880",
    "SQRT1_2": "0.70710678118654752440",
}
_MATH = "".join(f"#define M_{k} {v}\n#define M_{k}f {v}f\n" for k, v in _MATH_CONSTANTS.items()) + """\
#define INFINITY __builtin_bit_cast(float, 0x7f800000U)
#define HUGE_VALF __builtin_bit_cast(float, 0x7f800000U)
#define HUGE_VAL __builtin_bit_cast(double, 0x7ff0000000000000ULL)
#define NAN __builtin_bit_cast(float, 0x7fc00000U)
#define SNANF __builtin_bit_cast(float, 0x7fa00000U)
#define SNAN __builtin_bit_cast(double, 0x7ff4000000000000ULL)
#define MAXFLOAT 3.40282347e+38F
#define FP_NAN 0
#define FP_INFINITE 1
#define FP_ZERO 2
#define FP_SUBNORMAL 3
#define FP_NORMAL 4
#define FP_ILOGB0 (-2147483647 - 1)
#define FP_ILOGBNAN (-2147483647 - 1)
#define FP_LLOGB0 (-9223372036854775807L - 1)
#define FP_LLOGBNAN (-9223372036854775807L - 1)
#define FP_INT_UPWARD 0
#define FP_INT_DOWNWARD 1
#define FP_INT_TOWARDZERO 2
#define FP_INT_TONEARESTFROMZERO 3
#define FP_INT_TONEAREST 4
#define MATH_ERRNO 1
#define MATH_ERREXCEPT 2
#define math_errhandling (1 | 2)
"""

_FLOAT = """\
#define FLT_RADIX 2
#define FLT_MANT_DIG 24
#define FLT_DIG 6
#define FLT_DECIMAL_DIG 9
#define FLT_MIN_EXP (-125)
#define FLT_MIN_10_EXP (-37)
#define FLT_MAX_EXP 128
#define FLT_MAX_10_EXP 38
#define FLT_EPSILON 1.19209289550781250000000000000000000e-7F
#define FLT_MIN 1.17549435082228750796873653722224568e-38F
#define FLT_MAX 3.40282346638528859811704183484516925e+38F
#define FLT_TRUE_MIN 1.40129846432481707092372958328991613e-45F
#define FLT_HAS_SUBNORM 1
#define FLT_EVAL_METHOD 0
#define FLT_ROUNDS 1
#define DBL_MANT_DIG 53
#define DBL_DIG 15
#define DBL_DECIMAL_DIG 17
#define DBL_MIN_EXP (-1021)
#define DBL_MIN_10_EXP (-307)
#define DBL_MAX_EXP 1024
#define DBL_MAX_10_EXP 308
#define DBL_EPSILON 2.22044604925031308084726333618164062e-16
#define DBL_MIN 2.22507385850720138309023271733240406e-308
#define DBL_MAX 1.79769313486231570814527423731704357e+308
#define DBL_TRUE_MIN 4.94065645841246544176568792868221372e-324
#define DBL_HAS_SUBNORM 1
"""

_LIMITS = """\
#define CHAR_BIT 8
#define SCHAR_MIN (-128)
#define SCHAR_MAX 127
#define UCHAR_MAX 255
#ifndef __CHAR_UNSIGNED__
#define CHAR_MIN (-128)
#define CHAR_MAX 127
#else
#define CHAR_MIN 0
#define CHAR_MAX 255
#endif
#define MB_LEN_MAX 16
#define SHRT_MIN (-32768)
#define SHRT_MAX 32767
#define USHRT_MAX 65535
#define INT_MIN (-2147483647 - 1)
#define INT_MAX 2147483647
#define UINT_MAX 4294967295U
#define LONG_MIN (-9223372036854775807L - 1L)
#define LONG_MAX 9223372036854775807L
#define ULONG_MAX 18446744073709551615UL
#define LLONG_MIN (-9223372036854775807LL - 1LL)
#define LLONG_MAX 9223372036854775807LL
#define ULLONG_MAX 18446744073709551615ULL
#define LONG_LONG_MIN (-9223372036854775807LL - 1LL)
#define LONG_LONG_MAX 9223372036854775807LL
#define ULONG_LONG_MAX 18446744073709551615ULL
#define LONG_BIT 64
#define WORD_BIT 32
#define BOOL_MAX 1
#define BOOL_WIDTH 1
""" + "".join(f"#define {t}_WIDTH {w}\n" for t, w in (
    ("CHAR", 8), ("SCHAR", 8), ("UCHAR", 8), ("SHRT", 16), ("USHRT", 16), ("INT", 32), ("UINT", 32), ("LONG", 64),
    ("ULONG", 64), ("LLONG", 64), ("ULLONG", 64)))

_INT = {8: "signed char", 16: "short", 32: "int", 64: "long"}
_MIN = {8: "(-128)", 16: "(-32767-1)", 32: "(-2147483647-1)", 64: "(-9223372036854775807L-1)"}
_MAX = {8: "(127)", 16: "(32767)", 32: "(2147483647)", 64: "(9223372036854775807L)"}
_UMAX = {8: "(255)", 16: "(65535)", 32: "(4294967295U)", 64: "(18446744073709551615UL)"}
_FAST = {8: 8, 16: 64, 32: 64, 64: 64}  # glibc's int_fastN_t on LP64: signed char, then long


def _stdint() -> str:
    """<stdint.h>'s types and macros, as glibc declares them on LP64 (the exact-width types are in PRELUDE)."""
    lines = []
    for n in (8, 16, 32, 64):
        f = _FAST[n]
        lines += [f"typedef {_INT[n]} int_least{n}_t; typedef unsigned {_INT[n].replace('signed ', '')} "
                  f"uint_least{n}_t;",
                  f"typedef {_INT[f]} int_fast{n}_t; typedef unsigned {_INT[f].replace('signed ', '')} uint_fast{n}_t;"]
        for kind, bits in (("", n), ("_LEAST", n), ("_FAST", f)):
            lines += [f"#define INT{kind}{n}_MIN {_MIN[bits]}", f"#define INT{kind}{n}_MAX {_MAX[bits]}",
                      f"#define UINT{kind}{n}_MAX {_UMAX[bits]}", f"#define INT{kind}{n}_WIDTH {bits}",
                      f"#define UINT{kind}{n}_WIDTH {bits}"]
    lines += ["typedef long intptr_t; typedef unsigned long uintptr_t;",
              "typedef long intmax_t; typedef unsigned long uintmax_t;"]
    for what in ("INTPTR", "INTMAX", "PTRDIFF"):
        lines += [f"#define {what}_MIN {_MIN[64]}", f"#define {what}_MAX {_MAX[64]}", f"#define {what}_WIDTH 64"]
    lines += [f"#define UINTPTR_MAX {_UMAX[64]}", "#define UINTPTR_WIDTH 64", f"#define UINTMAX_MAX {_UMAX[64]}",
              "#define UINTMAX_WIDTH 64", f"#define SIZE_MAX {_UMAX[64]}", "#define SIZE_WIDTH 64",
              f"#define SIG_ATOMIC_MIN {_MIN[32]}", f"#define SIG_ATOMIC_MAX {_MAX[32]}", "#define SIG_ATOMIC_WIDTH 32",
              "#define WCHAR_MIN (-2147483647 - 1)", "#define WCHAR_MAX 2147483647", "#define WCHAR_WIDTH 32",
              "#define WINT_MIN (0u)", "#define WINT_MAX (4294967295u)", "#define WINT_WIDTH 32"]
    lines += [f"#define {sign}INT{n}_C(c) c{' ## ' + suffix if suffix else ''}" for sign, n, suffix in (
        ("", 8, ""), ("", 16, ""), ("", 32, ""), ("", 64, "L"), ("U", 8, ""), ("U", 16, ""), ("U", 32, "U"),
        ("U", 64, "UL"))]
    lines += ["#define INTMAX_C(c) c ## L", "#define UINTMAX_C(c) c ## UL"]
    return "\n".join(lines) + "\n"


HEADER_MACROS = {
    ("math.h", "cmath"): _MATH,
    ("float.h", "cfloat"): _FLOAT,
    ("limits.h", "climits"): _LIMITS,
    ("stdint.h", "cstdint"): _stdint(),
    ("cuda.h",): "#define CUDA_VERSION (__CUDACC_VER_MAJOR__ * 1000 + __CUDACC_VER_MINOR__ * 10)\n",
    ("cuda_runtime.h",): "#define offsetof(TYPE, MEMBER) __builtin_offsetof (TYPE, MEMBER)\n",
}
"""What the grader's prelude adds for a file that includes one of these headers (never read: NVRTC has no such
header without its bundled set): the macros and types device code takes from them (the module's docstring says
whose values). INFINITY, NAN, HUGE_VAL and the signaling NaNs are written with __builtin_bit_cast, which NVRTC
evaluates in a constant expression (it has no __builtin_inff or __builtin_nanf, which glibc's headers use); their
bits are glibc's. CUDA_VERSION is computed by NVRTC from its own version macros (13.5: 13050, the value cuda.h of
CUDA 13.5 defines). For cuda_runtime.h NVRTC itself defines CUDART_VERSION and declares the device API; offsetof
is <stddef.h>'s, which it includes. A header that includes another one of these gets that one's group too
(IMPLIED)."""

IMPLIED = {"cuda.h": ("stdint.h",), "cuda_runtime.h": ("limits.h",)}
"""Allowed headers whose real version includes another allowed one (CUDA 13's cuda.h includes <stdint.h>; its
cuda_runtime.h, read by the host compiler, <limits.h>): a file that includes the first gets the second's group."""

HOST_INCLUDED = {"math.h": "cstdlib", "cmath": "cstdlib", "cuda.h": "cstdlib"}
"""Allowed headers whose real version includes a host header (libstdc++'s <cmath> includes <stdlib.h> for its
abs overloads; cuda.h includes it too): that header's macros (EXIT_SUCCESS, RAND_MAX, ...) are host code's, not
in the prelude of a file that is only device code."""

_POSIX_LIMITS = (r"AIO_PRIO_DELTA_MAX|BC_\w+_MAX|CHARCLASS_NAME_MAX|COLL_WEIGHTS_MAX|DELAYTIMER_MAX|EXPR_NEST_MAX|"
                 r"HOST_NAME_MAX|IOV_MAX|LINE_MAX|LOGIN_NAME_MAX|MAX_CANON|MAX_INPUT|MQ_PRIO_MAX|NAME_MAX|NGROUPS_MAX|"
                 r"NL_\w+|NZERO|PATH_MAX|PIPE_BUF|PTHREAD_\w+|RE_DUP_MAX|RTSIG_MAX|SEM_VALUE_MAX|SSIZE_MAX|TTY_NAME_MAX|"
                 r"XATTR_\w+")
_POSIX_WHY = "POSIX and Linux limits of the host system (files, processes, threads, locales): host code's"

LEFT_OUT = {
    "math.h, cmath": {
        r"M_\w+l|HUGE_VALL|SNANL": "long double: device code has none (NVRTC and nvcc treat it as double)",
        r"\w+_F(?:32|64|128)X?|\w+f(?:32|64|128)x?|SNANF(?:32|64|128)X?": "_FloatN types, which neither NVRTC nor "
                                                                         "g++ 12's C++ has",
        r"issubnormal": "written with fpclassify, which CUDA's device math library does not have",
    },
    "float.h, cfloat": {
        r"LDBL_\w+|DECIMAL_DIG": "long double, whose host format (x87 on x86_64, 128-bit on aarch64) device code "
                                 "does not use",
    },
    "limits.h, climits, cuda_runtime.h": {_POSIX_LIMITS: _POSIX_WHY},
    "cuda.h": {r"CU\w+|cu\w+|RESOURCE_ABI_\w+": "the driver API: host code's"},
}
"""For each allowed header (keys: the headers a rule is for), the public macros its real version defines that the
prelude does not, as regular expressions over the name (matched whole), each with the reason; besides those, the
names NVRTC defines itself and HOST_INCLUDED's. tests/test_prelude.py checks that nothing else is missing."""


def prelude(headers: tuple[str, ...] | list[str], used: frozenset[str] | None = None) -> str:
    """The text before a submission's `#line 1`: PRELUDE, then HEADER_MACROS' text for each group of headers
    the file includes (`headers`: their names, as grader.source.program.Extracted.headers gives them). For a whole
    program, `used` is the set of names its extracted text holds (grader.source.program.Extracted.names): each that a
    host header it includes, or nvcc's implicit cuda_runtime.h, defines as a macro (host_macros.json) is defined
    too (module docstring). Raises nothing; reads the package's host_macros.json once per process."""
    text = PRELUDE + "".join(_included(headers))
    if used:
        text += "".join(f"#ifndef {n}\n#define {_definition(n)}\n#endif\n"
                        for n in sorted(used & (_host_names(tuple(headers)) - _group_names(headers))))
    return text


def header_macro_names(headers: tuple[str, ...] | list[str]) -> frozenset[str]:
    """The macros defined before a file's text for a file that includes `headers`: the prelude's for them, and,
    as nvcc reads a whole program, those of nvcc's implicit cuda_runtime.h and of each host header included
    (host_macros.json). grader.source.program decides no `#ifdef`/`#if` on these names (both branches stay for NVRTC,
    which reads them after the prelude's definitions)."""
    return _group_names(headers) | _host_names(tuple(headers))


def _included(headers: tuple[str, ...] | list[str]) -> list[str]:
    """HEADER_MACROS' texts for the groups `headers` names (with the headers they imply: IMPLIED), in
    HEADER_MACROS' order."""
    named = set(headers).union(*(IMPLIED.get(h, ()) for h in headers))
    return [text for group, text in HEADER_MACROS.items() if named.intersection(group)]


def _group_names(headers: tuple[str, ...] | list[str]) -> frozenset[str]:
    """The macros HEADER_MACROS defines for `headers`."""
    return frozenset(m for text in _included(headers) for m in re.findall(r"^#define (\w+)", text, re.M))


@functools.cache
def host_macros() -> dict:
    """host_macros.json (benchmarks/host_macros.py), read once: "implicit", "headers" and "definitions" (the
    public macros of nvcc's device pass), "nvcc_only" and "nvrtc_only" (reserved names only one of nvcc's device
    pass and NVRTC defines: grader.source.pragmas), "toolchain"."""
    return json.loads(files("grader.source").joinpath("host_macros.json").read_text(encoding="utf-8"))


@functools.cache
def _host_names(headers: tuple[str, ...]) -> frozenset[str]:
    """The names nvcc's device pass defines as macros after its implicit cuda_runtime.h and `headers`."""
    data = host_macros()
    return frozenset(data["implicit"]).union(*(data["headers"].get(h, ()) for h in headers))


@functools.cache
def _own_definitions() -> dict[str, str]:
    """{name: what follows `#define `} for every macro of HEADER_MACROS (CHAR_MIN and CHAR_MAX as for a signed
    char, the first of their two). Each names no other macro of the prelude, so it can be defined alone."""
    out = {}
    for text in HEADER_MACROS.values():
        for m in re.finditer(r"^#define ((\w+).*)$", text, re.M):
            out.setdefault(m.group(2), m.group(1))
    return out


def _definition(name: str) -> str:
    """What follows `#define ` for a host macro: HEADER_MACROS' definition, else the header's (host_macros.json)."""
    return _own_definitions().get(name) or host_macros()["definitions"][name]
