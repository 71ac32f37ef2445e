"""Part of stage 2, build (asked by stage 1, source): which macro names the installed NVRTC defines before a
file's first line.

grader.source.program decides the `#if` branches NVRTC certainly skips without running NVRTC: a name the file never
defines is not defined in `#ifdef` and is 0 in `#if`, as the preprocessor reads it (the grader passes no
`-D`). But NVRTC's built-in headers define names without a leading underscore too (NVRTC 13.5: CUDART_VERSION,
NULL, assert, CUDART_DEVICE, cudaArrayDefault, NV_IF_TARGET, ... about 200 of them), and which ones depends on
its version. So NVRTC is asked, once per set of names: a probe of `#ifdef NAME` / `#warning` lines only (the
names are identifiers, checked here; nothing else of the submission is in it), compiled in grader.compile.sandbox's
sandbox, whose warnings name the defined ones. About 10 ms; a file without such `#if`s asks nothing.
"""

from __future__ import annotations

import functools
import io
import re

from grader.compile import sandbox
from grader.core.errors import SandboxError

MAX_NAMES = 2000
"""More names than this in one file's conditionals are not asked about (they stay undecided)."""

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
_DEFINED = re.compile(r"#warning directive: grader-defined ([A-Za-z_][A-Za-z0-9_]*)")


@functools.lru_cache(maxsize=256)
def nvrtc_defines(names: frozenset[str]) -> frozenset[str] | None:
    """The names among `names` (identifiers) that NVRTC defines in an empty file; None when NVRTC cannot be
    asked (not installed, a failed compile, more than MAX_NAMES names, a name that is not an identifier), so
    that the caller decides nothing on their account. Never raises (but SandboxError where the sandbox is
    required and missing: grader.compile.sandbox.confined)."""
    if not names or len(names) > MAX_NAMES or not all(_IDENT.fullmatch(n) for n in names):
        return None if names else frozenset()
    probe = "".join(f"#ifdef {n}\n#warning grader-defined {n}\n#endif\n" for n in sorted(names))
    try:
        from cuda.core import Program, ProgramOptions  # imported outside the sandbox, which reads no file

        from grader.compile.toolkit import supported_archs

        options = ProgramOptions(name="probe.cu", arch=f"sm_{supported_archs()[0]}", no_source_include=True)
        log = sandbox.confined(_compile, Program, options, probe)
    except SandboxError:
        raise
    except Exception:  # noqa: BLE001 - no NVRTC, or it failed: nothing is decided
        return None
    return frozenset(m.group(1) for m in _DEFINED.finditer(log)) & names


def _compile(program_class, options, probe: str) -> str:
    """NVRTC's log for the probe (run in the sandbox)."""
    log = io.StringIO()
    program_class(probe, "c++", options).compile("cubin", logs=log)
    return log.getvalue()
