"""Compile one CUDA source with a given libnvrtc, by its path, through ctypes: the child process of
benchmarks/nvcc_oracle.py.

    python benchmarks/nvrtc_pinned.py --version LIBNVRTC     prints "13.0" (nvrtcVersion)
    python benchmarks/nvrtc_pinned.py --compile LIBNVRTC     reads a JSON object on stdin:
        {"source": text, "name": file name, "options": [str], "kernel": name expression}
      and writes the cubin's bytes to stdout (exit 0), or NVRTC's log to stderr (exit 1).

Why a process of its own, and ctypes: the grader's process has already loaded the NVRTC of the package index
(cuda.bindings finds it by its soname, libnvrtc.so.13), and the oracle needs the NVRTC of nvcc's release, a
different file with the same soname; loaded here by absolute path, in a fresh process, there is no doubt
which one compiles. Its builtins library (libnvrtc-builtins.so.MAJOR.MINOR, which NVRTC opens by soname at
compile time) is loaded first from the same folder, so NVRTC finds that one and not another on the search
path. This file imports nothing of the grader, so it starts fast.
"""

from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path


def load(library: str) -> ctypes.CDLL:
    """libnvrtc at path `library`, after the builtins library of the same folder and version."""
    folder = Path(library).parent
    for builtins in sorted(folder.glob("libnvrtc-builtins.so.*")):
        if ".alt." not in builtins.name:
            ctypes.CDLL(str(builtins), mode=ctypes.RTLD_GLOBAL)
    return ctypes.CDLL(library)


def version(lib: ctypes.CDLL) -> str:
    """NVRTC's own version, "MAJOR.MINOR"."""
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return f"{major.value}.{minor.value}"


def _log(lib: ctypes.CDLL, prog: ctypes.c_void_p) -> str:
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    buf = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, buf)
    return buf.value.decode("utf-8", "replace")


def compile_cubin(lib: ctypes.CDLL, source: str, name: str, options: list[str], kernel: str) -> tuple[bytes, str]:
    """(the cubin, b'' when the compile failed; NVRTC's log) of `source` compiled with `options`, with
    `kernel` added as a name expression as grader.compile.nvrtc does."""
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None) != 0:
        return b"", "nvrtcCreateProgram failed"
    try:
        lib.nvrtcAddNameExpression(prog, kernel.encode())
        raw = [o.encode() for o in options]
        status = lib.nvrtcCompileProgram(prog, len(raw), (ctypes.c_char_p * len(raw))(*raw))
        log = _log(lib, prog)
        if status != 0:
            return b"", log or f"nvrtcCompileProgram returned {status}"
        size = ctypes.c_size_t()
        lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetCUBIN(prog, buf)
        return buf.raw, log
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("--version", "--compile"):
        print(__doc__, file=sys.stderr)
        return 2
    lib = load(argv[1])
    if argv[0] == "--version":
        print(version(lib))
        return 0
    job = json.load(sys.stdin)
    cubin, log = compile_cubin(lib, job["source"], job["name"], job["options"], job["kernel"])
    if not cubin:
        sys.stderr.write(log)
        return 1
    sys.stdout.buffer.write(cubin)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
