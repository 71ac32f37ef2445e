"""The grader's own CUDA sources (its copies, input generator and on-GPU check, the chain's and the self-check's
reference kernels) compiled once per NVRTC version and arch, and kept on disk.

Compiling them took about 80 ms each in the sandbox, seven times per `grade` (0.56 s of a 3.6 s grading on the
H200, benchmarks/grade_speed.py). `compiled()` answers from memory within a process and from the cache folder
across processes; it compiles (grader.compile.nvrtc.compile_kernels, in the sandbox) only what neither holds. Never a
submission: only text shipped with the grader is cached, so a cache entry never holds a student's code.

Key: sha256 of the source text, the kernel names, the arch, the NVRTC version, the versions of cuda-core and
cuda-bindings, the grader's version and the text of grader/compile/nvrtc.py (its options) and grader/compile/cubin.py.
Each entry is one JSON
file named by its key (ENTRY), holding the key again and the sha256 of everything else it holds (cubin, PTX,
log, kernels): an entry that is not a regular file, is too large, does not parse, or whose key or digest does
not match (a torn or edited file) is ignored and written again. Only files named like an entry are read,
counted or removed. Writers write a private temporary file in the
same folder and rename it over the entry (atomic on POSIX and Windows), so graders running at once never read
half a file; the last writer wins with identical content.

Folder: $BIASGELU_GRADER_CACHE, else $XDG_CACHE_HOME/biasgelu-grader, else ~/.cache/biasgelu-grader (created
0700). On POSIX a folder that another user owns, or that others may write to, is not read: a planted cubin of
the copy kernels would move the floor. BIASGELU_GRADER_CACHE=off turns the disk cache off. `grade cache` shows the
folder and what it holds;
`grade cache --clear` empties it. A folder that cannot be written is no error: grading compiles as before.
"""

from __future__ import annotations

import argparse
import base64
import functools
import hashlib
import json
import os
import re
import stat
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from grader.compile.nvrtc import Compiled, KernelInfo, PtxParam, compile_kernels

ENV = "BIASGELU_GRADER_CACHE"
ENTRY = re.compile(r"[0-9a-f]{32}\.json")
"""An entry's file name: its key. Nothing else in the folder is read, counted or removed."""
MAX_ENTRY_BYTES = 16 * 2**20
"""An entry is a cubin and PTX of the grader's own kernels (well under 1 MiB); a larger file is not one."""
SCHEMA = 1
"""Version of an entry's layout: part of the key, so a new layout never reads an old entry."""
_memory: dict[str, Compiled] = {}


def folder() -> Path | None:
    """The cache folder (module docstring), or None when the disk cache is turned off."""
    chosen = os.environ.get(ENV)
    if chosen and chosen.lower() == "off":
        return None
    if chosen:
        return Path(chosen).expanduser().absolute()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base).absolute() / "biasgelu-grader"


def compiled(text: str, name: str, kernels: tuple[str, ...], arch: str) -> Compiled:
    """compile_kernels(text, name, kernels, arch) for a source shipped with the grader, from the cache when
    it holds it (module docstring). Raises what compile_kernels raises (SubmissionError only if the grader's
    own source is broken)."""
    key = _key(text, name, kernels, arch)
    if key in _memory:
        return _memory[key]
    where = folder()
    found = _read(where / f"{key}.json", key) if where and _trusted(where) else None
    if found is None:
        found = compile_kernels(text, name, kernels, arch)
        if where:
            _write(where, key, found)
    _memory[key] = found
    return found


def entries() -> list[Path]:
    """The entry files in the cache folder (named like ENTRY; none when it is off or missing)."""
    where = folder()
    if not where or not where.is_dir():
        return []
    return sorted(p for p in where.iterdir() if ENTRY.fullmatch(p.name))


def clear() -> int:
    """Remove every entry of the cache folder (and this process's memory of them); the number removed."""
    return clear_entries()[0]


def clear_entries() -> tuple[int, list[str]]:
    """Remove every entry of the cache folder (and this process's memory of them): (the number removed, the entries
    that could not be removed, each with why)."""
    _memory.clear()
    removed, failed = 0, []
    for path in entries():
        try:
            path.unlink()
            removed += 1
        except FileNotFoundError:  # another process cleared it first
            pass
        except OSError as err:
            failed.append(f"{path.name} ({err.strerror or err})")
    return removed, failed


def _key(text: str, name: str, kernels: tuple[str, ...], arch: str) -> str:
    parts = {"text": hashlib.sha256(text.encode()).hexdigest(), "name": name, "kernels": list(kernels),
             "arch": arch, **_toolchain()}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


@functools.lru_cache(maxsize=1)
def _toolchain() -> dict[str, str | int]:
    """What a cubin depends on besides its source, read once per process: the entry layout, NVRTC's version,
    cuda-core's and cuda-bindings', the grader's, grader/compile/nvrtc.py (its NVRTC options) and
    grader/compile/cubin.py
    (how the parameter list is read)."""
    from importlib.metadata import PackageNotFoundError, version

    from grader.compile.toolkit import nvrtc_version
    from grader.core.version import __version__

    parts: dict[str, str | int] = {"schema": SCHEMA, "nvrtc": nvrtc_version(), "grader": __version__}
    for module in ("nvrtc.py", "cubin.py"):  # the options, and how the parameter list is read
        parts[module.replace(".", "_")] = hashlib.sha256(Path(__file__).with_name(module).read_bytes()).hexdigest()
    for pkg in ("cuda-core", "cuda-bindings"):
        try:
            parts[pkg] = version(pkg)
        except PackageNotFoundError:
            parts[pkg] = "missing"
    return parts


def _trusted(where: Path) -> bool:
    """Whether entries in `where` may be read: on POSIX the folder is this user's and no one else may write
    to it (module docstring); elsewhere, whether it exists."""
    try:
        st = where.stat()
    except OSError:
        return False
    if sys.platform == "win32":
        return stat.S_ISDIR(st.st_mode)
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _read(path: Path, key: str) -> Compiled | None:
    """The entry at `path` if it is whole and is the one for `key`; None otherwise (missing, not a regular
    file, too large, torn, edited: module docstring)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return None
            raw = f.read(MAX_ENTRY_BYTES + 1)
        if len(raw) > MAX_ENTRY_BYTES:
            return None
        doc = json.loads(raw)
        cubin = base64.b64decode(doc["cubin"], validate=True)
        c = doc["compiled"]
        if doc["key"] != key or _digest(c, cubin) != doc["sha256"]:
            return None
        kernels = {k: KernelInfo(**{**v, "params": tuple(PtxParam(**p) for p in v["params"])})
                   for k, v in c["kernels"].items()}
        return Compiled(arch=c["arch"], cubin=cubin, ptx=c["ptx"], log=c["log"], kernels=kernels,
                        warnings=tuple(c["warnings"]), warnings_dropped=c["warnings_dropped"])
    except Exception:  # noqa: BLE001 - any entry that does not read back whole is compiled again
        return None


def _digest(fields: dict, cubin: bytes) -> str:
    """sha256 of an entry's content: its fields (PTX, log, kernels, ...) as canonical JSON, then the cubin."""
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode() + b"\0" + cubin).hexdigest()


def _write(where: Path, key: str, c: Compiled) -> None:
    """Write the entry for `key` atomically (module docstring); any OSError leaves the cache as it was."""
    fields = json.loads(json.dumps({k: v for k, v in asdict(c).items() if k != "cubin"}))  # as it reads back
    doc = {"key": key, "sha256": _digest(fields, c.cubin), "cubin": base64.b64encode(c.cubin).decode("ascii"),
           "compiled": fields}
    tmp = None
    try:
        where.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=where)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        os.replace(tmp, where / f"{key}.json")
        tmp = None
    except OSError:
        pass
    finally:
        if tmp:
            try:
                os.unlink(tmp)
            except OSError:
                pass


CACHE_EXIT_NOTHING = 1
"""`grade cache --clear` found no entry to remove: nothing was done (the cache is empty, missing or off)."""


def parser() -> argparse.ArgumentParser:
    """The argument parser of `grade cache` (module docstring)."""
    from grader.core.errors import EXIT_INPUT, EXIT_INTERRUPTED, EXIT_PASS, exit_codes_help
    from grader.core.options import HelpFormatter, add_format_options

    p = argparse.ArgumentParser(prog="grade cache", formatter_class=HelpFormatter,
                                description="Show where the grader keeps its own compiled kernels (one entry per "
                                "source, NVRTC version and arch; never a submission), or empty it.",
                                epilog=exit_codes_help((EXIT_PASS, "shown, or cleared (entries were removed)"),
                                                       (CACHE_EXIT_NOTHING, "--clear found nothing to remove (the "
                                                                            "cache is empty, missing or off)"),
                                                       (EXIT_INPUT, "usage error: a bad option; or an entry that "
                                                                    "--clear could not remove (permissions)"),
                                                       EXIT_INTERRUPTED))
    p.add_argument("--clear", action="store_true", help="remove every entry (they are compiled again when needed)")
    add_format_options(p, ("text", "json"), {"text": "one line on stdout (default)",
                                             "json": "the folder, its state and entries as one JSON document"})
    return p


def run(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> int:
    """`grade cache [--clear] [--json]`: print the folder and its entries (count, KiB), or clear it; returns the
    exit code (parser's epilog: 0 done, 1 --clear found nothing to remove, 2 an entry could not be removed)."""
    from grader.core.errors import EXIT_INPUT

    where = folder()
    found = entries()
    info: dict[str, object] = {"command": "cache", "folder": str(where) if where else None, "state": _state(where),
                               "entries": len(found), "bytes": sum(p.stat().st_size for p in found if p.exists())}
    code = 0
    if args.clear:
        removed, failed = clear_entries()
        code = EXIT_INPUT if failed else 0 if removed else CACHE_EXIT_NOTHING
        info.update(removed=removed, not_removed=failed)
        text = (f"removed {removed} entries from {where}" + (f"; could not remove {len(failed)}: "
                                                            f"{', '.join(failed[:3])}" if failed else "")
                if removed or failed else f"nothing to remove: {_describe(where, info)}")
    else:
        text = _describe(where, info)
    info["exit_code"] = code
    if args.format == "json":
        print(json.dumps(info, indent=2))
    else:
        print(text, file=sys.stderr if code else sys.stdout)
    return code


def _state(where: Path | None) -> str:
    """The cache folder's state in one word: off, missing, not-a-folder, untrusted or ok."""
    if where is None:
        return "off"
    if not where.exists():
        return "missing"
    if not where.is_dir():
        return "not-a-folder"
    return "ok" if _trusted(where) else "untrusted"


def _describe(where: Path | None, info: dict[str, object]) -> str:
    """The line `grade cache` prints for the folder `where` (info: run's)."""
    if where is None:
        return f"the kernel cache is off ({ENV}=off): the grader's kernels are compiled in every run"
    state = {"not-a-folder": " (not a folder: nothing is kept; point it at a folder)",
             "untrusted": " (not read: another user owns it or others may write it)",
             "missing": " (not made yet)"}.get(str(info["state"]), "")
    return (f"{where}{state}: {info['entries']} entries, {int(info['bytes']) / 1024:.0f} KiB (`grade cache --clear` "
            f"empties it; {ENV} moves it, or turns it off with off)")
