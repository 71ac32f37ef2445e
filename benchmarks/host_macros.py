"""Build grader/source/host_macros.json: the macros nvcc's device pass sees defined, before a file's first line (its
implicit `cuda_runtime.h`) and after each header a whole program may include (grader.source.includes.PROGRAM_INCLUDES),
read from the real headers by the real preprocessor.

nvcc preprocesses device code with the host compiler: `nvcc --dryrun` shows the command (CUDA 13.0: `gcc
-D__CUDA_ARCH__=900 ... -E -x c++ ... -include "cuda_runtime.h"`). This script takes that command from nvcc's
dry run, adds `-dM` (the macros defined at the end, with their definitions) and runs it on an empty file and on
`#include <H>` for each header H; a second run without -dM expands every object-like macro found. The file
records, for each public name (no leading `_`: grader.source.program_tokens never decides those): an object-like macro's
full expansion, or a function-like macro's definition as the header writes it; which names the implicit include
defines; which each header adds; the reserved names (a leading `_`) that only one of nvcc's device pass and the
installed NVRTC defines (the oracle's KNOWN_GAPS of issue 19: `#ifdef __GNUC__` took another branch silently, and
`__COUNTER__` did not compile); and the toolchain it was read from (tests/test_prelude.py reads the headers again
and compares when it runs on the same toolchain).

Run: `python benchmarks/host_macros.py` (needs nvcc on PATH and its host compiler); `--check` compares instead of
writing (exit 1 on a difference).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "grader" / "source" / "host_macros.json"
_DEFINE = re.compile(r"^#define ([A-Za-z_]\w*)(\([^)]*\))? ?(.*)$")
_MARK, _END = "__grader_expands__", "__grader_expanded__"


def device_pass(nvcc: str, work: Path) -> list[str]:
    """The host compiler's command nvcc runs to preprocess device code (sm_90), without its input and output."""
    (work / "empty.cu").write_text("")
    dry = subprocess.run([nvcc, "--dryrun", "-arch=sm_90", "-c", "empty.cu", "-o", "empty.o"], cwd=work,
                         capture_output=True, text=True, check=True)
    for line in (dry.stdout + dry.stderr).splitlines():
        if line.startswith("#$ ") and "-D__CUDA_ARCH__=" in line and " -E " in line:
            words = shlex.split(line[3:])
            out = words.index("-o")
            return [w for i, w in enumerate(words) if i not in (out, out + 1) and w != "empty.cu"]
    raise SystemExit("nvcc --dryrun shows no device preprocessing command (`-D__CUDA_ARCH__=... -E`)")


def defines(command: list[str], text: str, work: Path) -> dict[str, tuple[str | None, str]]:
    """{name: (parameter list or None, body)} of every macro defined after preprocessing `text`."""
    (work / "probe.cu").write_text(text)
    out = subprocess.run([*command, "-dM", "probe.cu"], cwd=work, capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        m = _DEFINE.match(line)
        if m:
            found[m.group(1)] = (m.group(2), m.group(3))
    return found


def expansions(command: list[str], headers: list[str], names: list[str], work: Path) -> dict[str, str]:
    """{name: full expansion} of object-like macros `names`, after including every header of `headers`."""
    text = "".join(f"#include <{h}>\n" for h in headers) + "".join(f"{_MARK} {n} {_END}\n" for n in names)
    (work / "probe.cu").write_text(text)
    out = subprocess.run([*command, "probe.cu"], cwd=work, capture_output=True, text=True, check=True).stdout
    # an expansion from a system header may be put on lines of its own, between line markers
    code = "\n".join(line for line in out.splitlines() if not line.startswith("#"))
    values = [" ".join(m.group(1).split()) for m in re.finditer(rf"{_MARK}\s(.*?)\s?{_END}", code, re.S)]
    if len(values) != len(names):
        raise SystemExit(f"expanded {len(values)} of {len(names)} macros")
    return dict(zip(names, values, strict=True))


BUILTINS = ("__COUNTER__", "__TIMESTAMP__", "__FILE_NAME__", "__INCLUDE_LEVEL__", "__BASE_FILE__")
"""Macros g++ has built in, which `-dM` does not list (nor __FILE__, __LINE__, __DATE__, __TIME__: NVRTC has those)."""
NVRTC_CANDIDATES = ("__CUDACC_RTC__", "__CUDACC_RTC_INT128__", "__CUDACC_RTC_FLOAT128__", "__CUDACC_RTC_MINIMAL__",
                    "__EDG__", "__EDG_VERSION__", "__EDG_IA64_ABI", "__EDG_TYPE_TRAITS_ENABLED", "__NVRTC__",
                    "__CUDACC_EWP__", "__CUDACC_RDC__", "__CUDACC_DEBUG__")
"""Names NVRTC may define that nvcc's device pass does not (NVRTC's documented macros, EDG's own), asked one by one."""


def diverging(implicit: dict) -> tuple[list[str], list[str], str]:
    """(the reserved names, with a leading underscore, that nvcc's device pass defines before a file's first line
    and NVRTC does not; the NVRTC_CANDIDATES NVRTC defines and the device pass does not; NVRTC's version), asked of
    the installed NVRTC (grader.compile.predefined.nvrtc_defines)."""
    from cuda.bindings import nvrtc

    from grader.compile.predefined import nvrtc_defines

    reserved = sorted({n for n in implicit if n.startswith("_")} | set(BUILTINS))
    defined = nvrtc_defines(frozenset(reserved)) or frozenset()
    theirs = nvrtc_defines(frozenset(NVRTC_CANDIDATES)) or frozenset()
    if not defined or not theirs:
        raise SystemExit("NVRTC could not be asked which names it defines")
    _, major, minor = nvrtc.nvrtcVersion()
    return ([n for n in reserved if n not in defined], sorted(n for n in theirs if n not in implicit),
            f"{major}.{minor}")


def toolchain(nvcc: str, command: list[str]) -> dict[str, str]:
    """What the macros were read from: nvcc's release, the host compiler's version, glibc's, the machine."""
    release = re.search(r"release ([\d.]+), V([\d.]+)", subprocess.run([nvcc, "--version"], capture_output=True,
                                                                      text=True).stdout)
    host = subprocess.run([command[0], "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    return {"nvcc": release.group(2) if release else "?", "host_compiler": host,
            "glibc": os.confstr("CS_GNU_LIBC_VERSION") or "?", "machine": platform.machine()}


def build(nvcc: str) -> dict:
    """The content of grader/source/host_macros.json, read now from this machine's headers (module docstring)."""
    sys.path.insert(0, str(ROOT))
    from grader.source.includes import PROGRAM_INCLUDES

    headers = sorted(PROGRAM_INCLUDES)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        command = device_pass(nvcc, work)
        implicit = defines(command, "", work)
        added = {h: sorted(n for n in defines(command, f"#include <{h}>\n", work) if n not in implicit
                           and not n.startswith("_")) for h in headers}
        public = sorted({n for n in implicit if not n.startswith("_")} | {n for ns in added.values() for n in ns})
        everything = defines(command, "".join(f"#include <{h}>\n" for h in headers), work)
        objects = [n for n in public if everything[n][0] is None]
        expanded = expansions(command, headers, objects, work)
        definitions = {n: n + everything[n][0] + (" " + everything[n][1] if everything[n][1] else "")
                       if everything[n][0] is not None else (n + " " + expanded[n]).rstrip() for n in public}
        nvcc_only, nvrtc_only, nvrtc_version = diverging(implicit)
        return {"about": "generated by benchmarks/host_macros.py: the macros nvcc's device pass defines (no leading "
                         "underscore), before a file's first line and after each header; object-like macros fully "
                         "expanded, function-like ones as the header defines them; and the reserved names one of "
                         "nvcc's device pass and NVRTC defines before a file's first line and the other does not "
                         "(nvcc_only, nvrtc_only: grader.source.pragmas refuses them)",
                "toolchain": {**toolchain(nvcc, command), "nvrtc": nvrtc_version},
                "nvcc_only": nvcc_only, "nvrtc_only": nvrtc_only,
                "implicit": sorted(n for n in implicit if not n.startswith("_")),
                "headers": added, "definitions": definitions}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true",
                   help="compare with grader/source/host_macros.json instead of writing")
    args = p.parse_args(argv)
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise SystemExit("no nvcc on PATH")
    data = build(nvcc)
    if args.check:
        same = json.loads(OUT.read_text()) == data
        print(f"{OUT.relative_to(ROOT)} {'matches the headers' if same else 'differs'}")
        return 0 if same else 1
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(data['definitions'])} macros, {len(data['implicit'])} implicit, "
          f"{len(data['nvcc_only'])} reserved names only nvcc defines, {len(data['nvrtc_only'])} only NVRTC")
    return 0


if __name__ == "__main__":
    sys.exit(main())
