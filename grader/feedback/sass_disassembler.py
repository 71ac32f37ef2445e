"""Finding and running a CUDA disassembler on a cubin, for grader.feedback.sass (the facts from the machine code).

The grader does not ship a disassembler: `nvdisasm` (preferred: it names the functions a kernel calls) or
`cuobjdump` is found (find_disassembler) in the running Python
environment's NVIDIA wheels (`pip install ".[sass]"`: nvidia-cuda-nvdisasm and nvidia-cuda-cuobjdump 13.x put
them in `nvidia/cu13/bin/`, checked; for CUDA 12 wheels `nvidia/cu12/bin/`, `nvidia/cuda_nvdisasm/bin/`,
`nvidia/cuda_cuobjdump/bin/` and `nvidia/cuda_nvcc/bin/` are searched too, not checked here: the package index
at hand has only 13.x builds), then on PATH, then under CUDA_PATH / CUDA_HOME, then in /usr/local/cuda*/bin
(`cuda` first, then newest version first). Without one, grader.feedback.sass.sass_facts returns None and
grader.feedback.hints reads the PTX. A disassembler of CUDA 13 reads sm_75 and newer only: for an older GPU (the cu12
extra) it fails, and the PTX is read.

Running it (disassemble): the cubin is written to a private temporary folder (mode 0700), the tool runs
there without a shell, with a clean environment (LC_ALL=C only), stdin closed, stderr dropped, for at most
TIMEOUT_S; its output is the submission's code rendered as text, so it is capped at MAX_OUTPUT_BYTES (then
nothing is read from it) and only parsed, never shown: hints quote opcodes and the names of CUDA's own
division routines, never other text of the listing. No GPU is needed: the tools read the ELF file only.

Cost: the disassembler's start-up dominates (about 0.4 s of CPU even for a 30-instruction kernel), so a
submission's size hardly matters. Measured with `python benchmarks/sass_cost.py --reps 3` on the 2-core CPU
machine (load average about 2 from other work), per submission (write the cubin, run the tool, parse), over
the 5 examples and 18 kernels of tests/data/hints/: nvdisasm 13.5.37 median 0.52 s, largest 1.2 s;
cuobjdump 13.5.37 median 0.67 to 0.72 s, largest 1.4 s. On an idle machine nvdisasm took 0.37 to 0.5 s.
So the machine-code hints add about half a second to a grading, within the 1 s goal; cuobjdump is used only
where no nvdisasm is found. (One first run of a freshly unpacked nvdisasm took 20 s here, once; TIMEOUT_S
caps such a run, and that submission then gets the PTX hints.)
"""

from __future__ import annotations

import functools
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from grader.core.procs import kill_group

TOOLS = ("nvdisasm", "cuobjdump")
"""Disassemblers, in order of preference at each place searched."""

WHEEL_BIN_DIRS = (
    ("nvidia", "cu13", "bin"),           # CUDA 13 wheels: nvidia-cuda-nvdisasm / nvidia-cuda-cuobjdump 13.x
    ("nvidia", "cu12", "bin"),
    ("nvidia", "cuda_nvdisasm", "bin"),   # CUDA 12 wheels (nvidia-cuda-nvdisasm-cu12 and 12.x releases)
    ("nvidia", "cuda_cuobjdump", "bin"),
    ("nvidia", "cuda_nvcc", "bin"),
)
"""Folders under a site-packages' `nvidia` namespace where NVIDIA's wheels put their executables."""

TIMEOUT_S = 10.0
"""Wall-clock limit for one disassembly (a normal one takes about 0.4 s)."""

MAX_CUBIN_BYTES = 16 * 2**20
"""A larger cubin is not disassembled (the PTX hints are given instead)."""

MAX_OUTPUT_BYTES = 32 * 2**20
"""Cap on the disassembler's output read: about 200,000 instructions of nvdisasm's listing."""

class DisassemblyError(Exception):
    """The disassembler could not be run, failed, timed out or printed too much; the message says which."""


@dataclass(frozen=True)
class Disassembler:
    """A disassembler found on this machine: `tool` is 'nvdisasm' or 'cuobjdump', `path` its executable."""

    tool: str
    path: str


# --- finding a disassembler ------------------------------------------------------------------------

def _exe_names(tool: str) -> tuple[str, ...]:
    return (tool + ".exe", tool) if os.name == "nt" else (tool,)


def _executable(path: Path) -> bool:
    return path.is_file() and (os.name == "nt" or os.access(path, os.X_OK))


def wheel_bin_dirs() -> list[Path]:
    """The folders where NVIDIA's wheels installed in this Python environment put executables."""
    roots: list[str] = []
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        roots += list(spec.submodule_search_locations)
    for entry in sys.path:  # a namespace package is found on sys.path; also check each entry directly
        if entry and os.path.isdir(os.path.join(entry, "nvidia")):
            roots.append(os.path.join(entry, "nvidia"))
    out: list[Path] = []
    for root in dict.fromkeys(roots):
        for parts in WHEEL_BIN_DIRS:
            d = Path(root, *parts[1:])
            for sub in ((d, d / "x86_64", d / "x64") if os.name == "nt" else (d,)):
                if sub.is_dir() and sub not in out:
                    out.append(sub)
    return out


def _toolkit_bin_dirs() -> list[Path]:
    out = []
    for var in ("CUDA_PATH", "CUDA_HOME"):
        if os.environ.get(var):
            out.append(Path(os.environ[var]) / "bin")
    if os.name != "nt":
        def version(p: str) -> tuple[int, ...]:
            return tuple(int(n) for n in re.findall(r"\d+", Path(p).name)) or (1 << 30,)
        out += [Path(p) / "bin" for p in sorted(glob.glob("/usr/local/cuda*"), key=version, reverse=True)]
    return out


def search_places() -> list[tuple[str, list[Path] | None]]:
    """Where find_disassembler looks, in order: (what, folders); folders None means PATH."""
    return [("wheels", wheel_bin_dirs()), ("PATH", None), ("CUDA toolkit", _toolkit_bin_dirs())]


def _find_in(tool: str, dirs: list[Path] | None) -> Disassembler | None:
    if dirs is None:
        found = shutil.which(tool)
        return Disassembler(tool, found) if found else None
    for d in dirs:
        for name in _exe_names(tool):
            if _executable(d / name):
                return Disassembler(tool, str(d / name))
    return None


def find_tool(tool: str) -> Disassembler | None:
    """`tool` ('nvdisasm' or 'cuobjdump') at the first place of search_places() that has it, or None."""
    for _, dirs in search_places():
        found = _find_in(tool, dirs)
        if found:
            return found
    return None


@functools.cache
def find_disassembler() -> Disassembler | None:
    """The disassembler to use, or None when there is none: at each place of search_places() in turn,
    nvdisasm first, then cuobjdump. Cached for the process (find_disassembler.cache_clear() forgets it)."""
    for _, dirs in search_places():
        for tool in TOOLS:
            found = _find_in(tool, dirs)
            if found:
                return found
    return None


# --- running it ------------------------------------------------------------------------------------

def _clean_env() -> dict[str, str]:
    env = {"LC_ALL": "C"}
    if os.name == "nt":  # Windows programs need these to start
        for key in ("SYSTEMROOT", "SystemRoot", "WINDIR"):
            if key in os.environ:
                env[key] = os.environ[key]
    return env


def command(tool: Disassembler, cubin_path: str) -> list[str]:
    """The command line: nvdisasm without its data-flow pass (-ndf: faster, and it names branch targets,
    which nothing here reads) and with the source lines of a cubin compiled with line information (-g,
    --print-line-info: `//## File "NAME", line N` comments; a cubin without them reads as before), cuobjdump
    with the SASS and the resource usage (registers, stack)."""
    if tool.tool == "nvdisasm":
        return [tool.path, "-ndf", "-g", cubin_path]
    return [tool.path, "-sass", "-res-usage", cubin_path]


def _kill(proc: subprocess.Popen) -> None:
    """Kill the tool and anything it started (it leads its own process group on POSIX). Only while it has
    not been reaped: until then its id, the group's id, cannot name another process."""
    if proc.poll() is not None:
        return
    if os.name == "nt":
        try:
            proc.kill()
        except OSError:  # it ended meanwhile
            pass
    else:
        kill_group(proc.pid)


def disassemble(cubin: bytes, tool: Disassembler, *, timeout_s: float | None = None,
                max_bytes: int | None = None) -> str:
    """The listing `tool` prints for `cubin`. Raises DisassemblyError when the cubin is over MAX_CUBIN_BYTES,
    the tool cannot start, exits non-zero, runs past `timeout_s` (default TIMEOUT_S) or prints more than
    `max_bytes` (default MAX_OUTPUT_BYTES). The tool runs in a session of its own (POSIX), so that a kill
    reaches whatever it started."""
    timeout_s = TIMEOUT_S if timeout_s is None else timeout_s
    max_bytes = MAX_OUTPUT_BYTES if max_bytes is None else max_bytes
    if len(cubin) > MAX_CUBIN_BYTES:
        raise DisassemblyError(f"the cubin is {len(cubin)} bytes (over {MAX_CUBIN_BYTES})")
    with tempfile.TemporaryDirectory(prefix="grader-sass-") as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(cubin)
        try:
            proc = subprocess.Popen(command(tool, path), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, env=_clean_env(), cwd=tmp, close_fds=True,
                                    start_new_session=os.name != "nt")
        except OSError as err:
            raise DisassemblyError(f"{tool.tool} could not be started: {err}") from None
        chunks: list[bytes] = []
        over = threading.Event()

        def pump() -> None:
            total = 0
            while True:
                chunk = proc.stdout.read1(1 << 16)
                if not chunk:
                    return
                total += len(chunk)
                if total > max_bytes:
                    over.set()
                    _kill(proc)
                    continue  # drain until the pipe closes
                chunks.append(chunk)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill(proc)
            proc.wait()
            reader.join(5)
            raise DisassemblyError(f"{tool.tool} ran for more than {timeout_s:g} s") from None
        reader.join(min(timeout_s, 5.0))  # what is left in the pipe once the tool has exited is read at once
        if reader.is_alive():  # something the tool started still holds its output open: kill it, not waited for
            kill_group(proc.pid)
            raise DisassemblyError(f"{tool.tool}'s output did not end when it exited")
        proc.stdout.close()
        if over.is_set():
            raise DisassemblyError(f"{tool.tool} printed more than {max_bytes} bytes")
        if rc != 0:
            raise DisassemblyError(f"{tool.tool} exited with status {rc}")
    return b"".join(chunks).decode("utf-8", "replace")
