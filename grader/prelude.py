"""Part of stage 1, source: the grader's own text before a submission (`prelude`), what NVRTC would otherwise
take from headers the grader never reads.

NVRTC from the package index has no C or C++ headers, and the grader blanks every `#include` it allows
(grader.directives). So the fixed-width integer types, always, and for a file that includes math.h or cmath,
float.h or cfloat, limits.h or climits, stdint.h or cstdint, the macros and types device code takes from
them, come from here, written before the submission's `#line 1`.
"""

from __future__ import annotations

import re

PRELUDE = """\
#line 1 "the grader's prelude"
typedef signed char int8_t; typedef unsigned char uint8_t;
typedef short int16_t; typedef unsigned short uint16_t;
typedef int int32_t; typedef unsigned int uint32_t;
typedef long long int64_t; typedef unsigned long long uint64_t;
"""
"""Fixed-width integer types, which NVRTC does not define without headers. The `#line` names the prelude in
NVRTC's messages ("declared at line 5 of the grader's prelude"), never as the student's file."""

HEADER_MACROS = {
    ("math.h", "cmath"): """\
#define M_E 2.7182818284590452354
#define M_LOG2E 1.4426950408889634074
#define M_LOG10E 0.43429448190325182765
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.78539816339744830962
#define M_1_PI 0.31830988618379067154
#define M_2_PI 0.63661977236758134308
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.70710678118654752440
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
#define HUGE_VALF INFINITY
#define HUGE_VAL __longlong_as_double(0x7ff0000000000000LL)
""",
    ("float.h", "cfloat"): """\
#define FLT_RADIX 2
#define FLT_MANT_DIG 24
#define FLT_DIG 6
#define FLT_EPSILON 1.19209290e-7F
#define FLT_MIN 1.17549435e-38F
#define FLT_MAX 3.40282347e+38F
#define FLT_TRUE_MIN 1.40129846e-45F
#define DBL_MANT_DIG 53
#define DBL_DIG 15
#define DBL_EPSILON 2.2204460492503131e-16
#define DBL_MIN 2.2250738585072014e-308
#define DBL_MAX 1.7976931348623157e+308
#define DBL_TRUE_MIN 4.9406564584124654e-324
""",
    ("limits.h", "climits"): """\
#define CHAR_BIT 8
#define SCHAR_MIN (-128)
#define SCHAR_MAX 127
#define UCHAR_MAX 255
#define SHRT_MIN (-32768)
#define SHRT_MAX 32767
#define USHRT_MAX 65535
#define INT_MIN (-2147483647 - 1)
#define INT_MAX 2147483647
#define UINT_MAX 4294967295U
#define LLONG_MIN (-9223372036854775807LL - 1)
#define LLONG_MAX 9223372036854775807LL
#define ULLONG_MAX 18446744073709551615ULL
""",
    ("stdint.h", "cstdint"): """\
typedef decltype((char*)0 - (char*)0) intptr_t; typedef decltype(sizeof(0)) uintptr_t;
#define INT8_MIN (-128)
#define INT8_MAX 127
#define UINT8_MAX 255
#define INT16_MIN (-32768)
#define INT16_MAX 32767
#define UINT16_MAX 65535
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#define UINT32_MAX 4294967295U
#define INT64_MIN (-9223372036854775807LL - 1)
#define INT64_MAX 9223372036854775807LL
#define UINT64_MAX 18446744073709551615ULL
#define SIZE_MAX 18446744073709551615ULL
#define INTPTR_MAX INT64_MAX
#define UINTPTR_MAX UINT64_MAX
""",
}
"""What the grader's prelude adds for a file that includes one of these headers (never read: NVRTC has no
such header without its bundled set): the macros and types device code takes from them, with the values of
glibc's headers on x86-64 Linux (M_PI and the other M_ constants as double literals; INFINITY, NAN and
HUGE_VAL as CUDA's math_constants.h builds them, usable in device code but not in a constant expression;
intptr_t and uintptr_t as the platform's ptrdiff_t and size_t: long and unsigned long on Linux, long long and
unsigned long long on Windows, as glibc and MSVC declare them)."""


def prelude(headers: tuple[str, ...] | list[str]) -> str:
    """The text before a submission's `#line 1`: PRELUDE, then HEADER_MACROS' text for each group of headers
    the file includes (`headers`: their names, as grader.program.Extracted.headers gives them)."""
    return PRELUDE + "".join(_included(headers))


def header_macro_names(headers: tuple[str, ...] | list[str]) -> frozenset[str]:
    """The macros the prelude defines for a file that includes `headers` (so `#ifdef M_PI` is not decided
    without them: grader.program)."""
    return frozenset(m for text in _included(headers) for m in re.findall(r"^#define (\w+)", text, re.M))


def _included(headers: tuple[str, ...] | list[str]) -> list[str]:
    """HEADER_MACROS' texts for the groups `headers` names, in HEADER_MACROS' order."""
    named = set(headers)
    return [text for group, text in HEADER_MACROS.items() if named.intersection(group)]
