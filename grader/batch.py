"""`grade batch` and `grade merge`: grade a whole class, each submission in its own process, resumably.

This module finds the submissions (their ids, the files that are not `.cu`, the links it refuses), keys each row for
resume, starts the workers (grader.pool, grader.worker) and writes the class's outputs (grader.gradebook,
grader.feedback, grader.classpage). What each of those does for the instructor, with every option and output:
docs/batch.md; what a hostile submission can and cannot do: docs/security.md.

Exit codes:
  0  every submission has a row (whatever the verdicts)
  2  usage error: bad option, nothing to grade, OUT locked by another batch, merge input unreadable, no
     NVRTC sandbox on this machine without --unsandboxed, a GPU the installed NVRTC cannot compile for
     (nothing graded)
  3  no GPU: every submission has a row, but verification and timing were skipped (rows are no-gpu or error)
  4  incomplete: --limit reached, interrupted once grading began (Ctrl-C, SIGTERM), a worker could not start,
     a row is busy (the GPU was shared while timing), or the install is incomplete (a CUDA extra missing:
     nothing graded, no row written); run the same command again to finish
  130 interrupted (Ctrl-C) before grading began (finding the submissions, probing the GPUs)
`grade merge`: 0 merged; 2 usage error (a RESULTS path missing, no result rows); 130 interrupted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import grader
from grader import gradebook as gb
from grader import sandbox
from grader.errors import (EXIT_INCOMPLETE, EXIT_INPUT, EXIT_INTERRUPTED, EXIT_NO_GPU, EXIT_PASS, InputError,
                           Interrupted, Stage, WorkerStartError, exit_codes_help)
from grader.classpage import write_page
from grader.feedback import REPORTS_DIR, write_report
from grader.gradescope import gradescope_not_graded, gradescope_refusal, gradescope_results
from grader.gradescope_export import METADATA_NAME, Submitter, read_metadata
from grader.options import HelpFormatter, arch_type, positive_number, positive_seconds, seed_type
from grader.pool import Progress, Slot, child_env, item_error, run_jobs
from grader.report import GradeReport
from grader.source import MAX_SOURCE_BYTES, read_capped, safe_source_name
from grader.text import name_text, printable
DEFAULT_COMPILE_LIMIT = 60.0
"""Seconds NVRTC may take on one submission (the examples compile in under a second)."""
DEFAULT_RUN_LIMIT = 120.0
"""Seconds for start-up (imports, CUDA context) and, separately, for verification plus timing (the timer
stops itself after about 20 s, twice that for a borderline kernel)."""
DEFAULT_MEMORY_LIMIT_GIB = 16.0
"""Resident memory a worker may use (a grading takes well under 1 GiB of host memory; NVRTC on an exploding
template grows by hundreds of MiB a second)."""
PROBE_TIMEOUT = 120.0
PROBE_COMMAND = [sys.executable, "-m", "grader.worker", "--probe"]
RESULT_SOURCES = ("*.py", "kernels/*.cu")
NOT_RESULT_SOURCES = {"batch.py", "pool.py", "gradebook.py", "worker.py", "cli.py"}
"""Grader files whose digest is part of the resume key: a change to any of them regrades (the batch's own
files are left out: they do not change a grade)."""


# --- finding submissions -------------------------------------------------------------------------------
SOURCE_SUFFIXES = (".cpp", ".cc", ".cxx", ".c", ".cuh", ".h", ".hpp")
ARCHIVE_SUFFIXES = (".tar.gz", ".tar.xz", ".tar.bz2", ".tgz", ".zip", ".tar", ".gz", ".7z", ".rar")
"""Files that look like a submission but are not a .cu file (case ignored): each gets an input-error row
naming the fix, so no student is silently missing (module docstring)."""
LINK_REFUSED = "a link, not followed"


@dataclass
class Item:
    """One submission to grade: `id` (escaped: grader.text.printable), `path` as given, escaped the same way
    (shown in outputs), `real` (resolved, inside its student's folder: the file the worker reads), `name` (the
    safe file name the worker grades it under), its bytes' `sha256`, and `problem` (a reason it cannot be
    graded, found before reading: then it becomes an error row without a worker); `stray`: a source file or
    archive that is not a .cu file (its problem says so)."""

    id: str
    path: str
    real: Path | None = None
    name: str = "submission.cu"
    sha256: str | None = None
    problem: str | None = None
    key: str = ""
    stray: bool = False
    submitters: list[Submitter] = field(default_factory=list)
    submitted_at: str = ""


def discover(paths: list[str], exclude: Path | None = None) -> list[Item]:
    """The submissions under `paths` (module docstring), sorted by id; ids made unique (unique_ids). A class
    folder's entry that is the folder `exclude` (the batch's own --out, kept inside the class folder) is no
    student.

    Never raises for a bad path or a hostile name: a missing path, a link, a folder without exactly one .cu
    file or that cannot be read, a file that is not a regular file or is over the size cap, a source file or
    archive that is not a .cu file each become an Item with `problem` set. Every id and path is escaped
    (grader.text.printable: a byte of a name that is not UTF-8 as `\\xe9`, a newline as `\\n`).
    """
    items: list[Item] = []
    for raw in paths:
        p = Path(raw)
        try:
            items.extend(_discover_path(p, raw, exclude.resolve() if exclude is not None else None))
        except OSError as err:  # a folder that cannot be listed, a path whose folder cannot be searched
            items.append(Item(id=_id(p.stem or raw), path=_shown(raw), problem=_unreadable(raw, err)))
    unique_ids(items)
    return sorted(items, key=lambda it: it.id)


def _shown(path: str | Path) -> str:
    """A path or name as outputs show it (grader.text.name_text)."""
    return name_text(str(path))


def _id(name: str) -> str:
    """The id of a submission named `name` (a file's stem, a folder's name), escaped (_shown)."""
    return _shown(name)


def _discover_path(p: Path, raw: str, exclude: Path | None = None) -> list[Item]:
    """The items of one PATH given to `grade batch` (discover). Raises OSError when it cannot be read."""
    if p.is_symlink():  # `grade batch uploads/*` names each upload: a link there could point at another's
        return [Item(id=_id(_stem(p.name) or raw), path=_shown(raw),
                     problem=f"{_shown(raw)}: {LINK_REFUSED}; give the real path to grade it")]
    if not p.exists():
        return [Item(id=_id(p.stem or raw), path=_shown(raw), problem=f"{_shown(raw)}: no such file or folder")]
    if not p.is_dir():
        stray = _stray_problem(p)
        if stray:
            return [Item(id=_id(_stem(p.name)), path=_shown(p), problem=stray, stray=True)]
        return [_file_item(p, _id(p.stem), p.parent.resolve(), "its folder")]
    return _class_folder(p, exclude)


def _class_folder(folder: Path, exclude: Path | None = None) -> list[Item]:
    """The items of a class folder: one per `.cu` file, student folder, link (refused) and stray source
    file or archive (refused); a stray file is left out when a `.cu` file or folder of its stem is there (the
    student has a submission: `alice.zip` beside the unpacked `alice/`). Raises OSError when `folder` cannot
    be listed."""
    items, strays = [], []
    root = folder.resolve()
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or (exclude is not None and not entry.is_symlink() and entry.resolve() == exclude):
            continue
        try:
            if entry.is_symlink():
                if entry.is_dir() or entry.name.lower().endswith(".cu") or _stray_suffix(entry.name):
                    items.append(Item(id=_id(_stem(entry.name)), path=_shown(entry),
                                      problem=f"{_shown(entry)}: {LINK_REFUSED}; hand in the file itself (a "
                                      "link in the class folder could point at another student's files)"))
            elif entry.is_dir():
                items.append(_student_folder(entry))
            elif entry.name.lower().endswith(".cu"):
                items.append(_file_item(entry, _id(entry.stem), root, "the class folder"))
            elif _stray_suffix(entry.name):
                strays.append(Item(id=_id(_stem(entry.name)), path=_shown(entry), problem=_stray_problem(entry),
                                   stray=True))
        except OSError as err:  # one entry that cannot be examined is one error row, not a lost class
            items.append(Item(id=_id(_stem(entry.name)), path=_shown(entry), problem=_unreadable(entry, err)))
    handed_in = {it.id for it in items}
    return items + [it for it in strays if it.id not in handed_in]


def _stray_suffix(name: str) -> str | None:
    """The suffix (lower case) of a file named `name` that looks like a submission but is not a .cu file
    (SOURCE_SUFFIXES, ARCHIVE_SUFFIXES), or None."""
    low = name.lower()
    return next((s for s in (*ARCHIVE_SUFFIXES, *SOURCE_SUFFIXES) if low.endswith(s) and len(low) > len(s)), None)


def _stem(name: str) -> str:
    """`name` without its suffix: an archive's whole suffix (`alice.tar.gz` -> `alice`), else Path.stem."""
    suffix = _stray_suffix(name)
    return name[: -len(suffix)] if suffix in ARCHIVE_SUFFIXES else Path(name).stem


def _stray_problem(p: Path) -> str | None:
    """The problem of a file at `p` that looks like a submission but is not a .cu file, naming the fix; None
    for any other file."""
    suffix = _stray_suffix(p.name)
    if suffix in ARCHIVE_SUFFIXES:
        return f"{_shown(p)}: an archive; unpack it into a folder of its own (one folder per student) and grade again"
    if suffix:
        return f"{_shown(p)}: not a .cu file; rename it {_shown(_stem(p.name))}.cu if it is your kernel"
    return None


def unique_ids(items: list[Item]) -> None:
    """Give every item a distinct id, in place: the first item of an id keeps it, the next ones get `~2`,
    `~3`, ... skipping every suffixed id that an item already has as its own name (`y/`, `y.cu` and `y~2/`
    become y, y~3 and y~2), so no two rows share an id and `grade merge` keeps every student."""
    taken = {it.id for it in items}
    next_suffix: dict[str, int] = {}
    seen: set[str] = set()
    for it in items:
        if it.id in seen:
            n = next_suffix.get(it.id, 2)
            while f"{it.id}~{n}" in taken:
                n += 1
            next_suffix[it.id] = n + 1
            it.id = f"{it.id}~{n}"
            taken.add(it.id)
        seen.add(it.id)


def read_exports(paths: list[str], items: list[Item]) -> dict[str, dict[str, int]]:
    """Name the submitters of the items found in each folder of `paths` that is a Gradescope export (holds
    METADATA_NAME: grader.gradescope_export), in place: an item whose path is one of the export's submission
    folders gets its submitters and submitted_at (ids stay the folders' names). Returns, per export folder (as
    shown), the counts of its entries, of the items it named and of their submitters. Raises InputError when a
    metadata file cannot be read (grader.gradescope_export.read_metadata)."""
    found: dict[str, dict[str, int]] = {}
    for raw in paths:
        p = Path(raw)
        if p.is_symlink() or not p.is_dir():
            continue
        entries = read_metadata(p)
        if entries is None:
            continue
        root = "" if str(p) == "." else _shown(p) + os.sep  # paths are escaped char by char: prefixes still match
        named = []
        for it in items:
            entry = entries.get(it.path[len(root):].split(os.sep)[0]) if it.path.startswith(root) else None
            if entry is not None:
                it.submitters, it.submitted_at = list(entry.submitters), entry.created_at
                named.append(it)
        found[_shown(p)] = {"entries": len(entries), "named": len(named),
                            "submitters": sum(len(it.submitters) for it in named)}
    return found


def _unreadable(shown: str | Path, err: OSError) -> str:
    """The problem of a file or folder (at `shown`, as found) the batch cannot read (`err` from the
    operating system)."""
    where = _shown(err.filename) if err.filename and str(err.filename) != str(shown) else None
    inside = f" (at {where})" if where else ""
    return (f"{_shown(shown)}: cannot be read ({err.strerror or err}){inside}; check its permissions (the grader "
            "must be able to list a student folder and read its .cu file)")


def _inside(real: Path, root: Path) -> bool:
    return real == root or root in real.parents


def _student_folder(folder: Path) -> Item:
    """The one .cu file under `folder` (searched without entering linked folders or hidden ones); a link to
    a file is followed only to a file inside `folder` itself. A folder without one names what it holds
    instead: a source file or archive that is not a .cu file, a linked folder that was not entered."""
    found, strays, linked, errors = [], [], [], []
    for here, dirs, files in os.walk(folder, onerror=errors.append):  # never enters a linked folder
        linked.extend(Path(here) / d for d in sorted(dirs) if not d.startswith(".") and (Path(here) / d).is_symlink())
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for f in sorted(files):
            if f.startswith("."):
                continue
            if f.lower().endswith(".cu"):
                found.append(Path(here) / f)
            elif _stray_suffix(f):
                strays.append(Path(here) / f)
    item = Item(id=_id(folder.name), path=_shown(folder))
    if errors:  # a folder that cannot be listed may hide the .cu file, or a second one
        item.problem = _unreadable(folder, errors[0])
    elif len(found) > 1:
        listing = ", ".join(_shown(f.relative_to(folder)) for f in found[:5]) + (" ..." if len(found) > 5 else "")
        item.problem = f"{_shown(folder)}: student folder with {len(found)} .cu files ({listing}); expected one"
    elif not found:
        instead = [_stray_problem(f) for f in strays[:1]] + [
            f"{_shown(d)}: a linked folder, not entered; hand in the files themselves" for d in linked[:1]]
        item.problem = f"{_shown(folder)}: student folder with no .cu file" + "".join(f"; {s}" for s in instead)
    else:
        return _file_item(found[0], item.id, folder.resolve(), f"its student folder {_shown(folder)}")
    return item


def _file_item(p: Path, id: str, root: Path, within: str) -> Item:
    """An Item for the file at `p`, checked without reading beyond the size cap (and not at all if it is a
    link pointing outside `root`, described as `within` in the problem, not a regular file, or too large)."""
    shown = _shown(p)
    item = Item(id=id, path=shown)
    try:
        real = p.resolve(strict=True)
    except (OSError, RuntimeError):
        item.problem = f"{shown}: a link to nothing, or a link loop"
        return item
    if not _inside(real, root):
        item.problem = f"{shown}: a link pointing outside {within}; refused without reading it"
        return item
    try:
        st = real.stat()
    except OSError as err:
        item.problem = _unreadable(p, err)
        return item
    if real.is_dir():
        item.problem = f"{shown}: is a folder, not a .cu file"
        return item
    if not real.is_file():
        item.problem = f"{shown}: not a regular file"
        return item
    if st.st_size > MAX_SOURCE_BYTES:
        item.problem = f"{shown}: {st.st_size} bytes is over the {MAX_SOURCE_BYTES}-byte cap for a submission"
        return item
    try:
        raw = read_capped(real)
    except OSError as err:
        item.problem = _unreadable(p, err)
        return item
    item.real, item.sha256 = real, hashlib.sha256(raw).hexdigest()
    name = safe_source_name(p.name)
    item.name = name if name.strip(".") else "submission.cu"
    return item


def parse_shard(text: str) -> tuple[int, int]:
    """'K/N' -> (K, N) with 1 <= K <= N. Raises ValueError."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ValueError(f"--shard {text!r}: write K/N with 1 <= K <= N, e.g. 1/4")
    return int(m.group(1)), int(m.group(2))


def shard(items: list[Item], k: int, n: int) -> list[Item]:
    """Shard k of n (1-based): items k-1, k-1+n, ... of the list sorted by id. Deterministic: every machine
    that sees the same folder gets the same slice, and the n slices cover the class exactly once."""
    ordered = sorted(items, key=lambda it: it.id)
    return ordered[k - 1 :: n]


# --- settings and resume keys --------------------------------------------------------------------------
def grader_digest() -> str:
    """sha256 (first 16 hex digits) of the grader files a grade depends on (RESULT_SOURCES)."""
    base = Path(grader.__file__).parent
    h = hashlib.sha256()
    for pattern in RESULT_SOURCES:
        for f in sorted(base.glob(pattern)):
            if f.name not in NOT_RESULT_SOURCES:
                h.update(f.relative_to(base).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def settings_for(arch: str | None, seed: int | None, cards: list[str], counters: bool = False) -> dict[str, object]:
    """The grader settings a result depends on: part of every row's key (module docstring); `counters` only
    when asked for, so rows graded without them keep their keys."""
    settings = {"grader": grader.__version__, "grader_source": grader_digest(), "arch": arch, "seed": seed,
                "cards": sorted(set(cards))}
    return {**settings, "counters": True} if counters else settings


def result_key(item: Item, settings: dict[str, object]) -> str:
    """The resume key of `item` under `settings`: sha256 of its id, its content hash (or, for an item that
    cannot be read, its problem) and the settings. The id is part of it: two students who hand in the same
    bytes get a row each."""
    what = {"id": item.id, "sha256": item.sha256} if item.sha256 else {"id": item.id, "problem": item.problem}
    return hashlib.sha256(json.dumps({**what, **settings}, sort_keys=True).encode()).hexdigest()


# --- GPUs ----------------------------------------------------------------------------------------------
@dataclass
class GpuPlan:
    """The CUDA_VISIBLE_DEVICES entry of each worker slot (None: no GPU), the card names, why there is no GPU
    when there is none, and `problem`: why nothing can be graded here at all (an incomplete install, a GPU the
    installed NVRTC cannot compile for), with the exit code `problem_exit` the batch stops with."""

    entries: list[str | None]
    names: list[str]
    reason: str = ""
    problem: str = ""
    problem_exit: int = 0


def run_probe() -> dict:
    """The answer of a short-lived `python -m grader.worker --probe` child (grader.worker.probe): count, names
    and reason, plus problem and exit when nothing can be graded (this process never initialises CUDA: a
    forked or later-spawned CUDA user must start clean). A probe that fails means no GPU, with the reason."""
    try:
        out = subprocess.run(PROBE_COMMAND, capture_output=True,
                             timeout=PROBE_TIMEOUT, env=child_env(None), cwd=tempfile.gettempdir(), text=True)
        info = json.loads(out.stdout.strip().splitlines()[-1])
        return {**info, "count": int(info["count"]), "names": list(info["names"])}
    except (subprocess.TimeoutExpired, OSError, ValueError, IndexError, KeyError) as err:
        return {"count": 0, "names": [], "reason": f"the GPU probe failed ({type(err).__name__})"}


def probe_gpus() -> tuple[int, list[str], str]:
    """(count, names, reason) of the GPUs visible to this process's environment (run_probe)."""
    info = run_probe()
    return info["count"], info["names"], str(info.get("reason", ""))[:120]


def plan_gpus(gpus: str | None, workers: int) -> GpuPlan:
    """One slot per visible GPU (or per entry of `gpus`, positions among the visible ones, e.g. '0,2');
    `workers` slots without a GPU when none is visible."""
    info = run_probe()
    count, names, reason = info["count"], info["names"], str(info.get("reason", ""))[:120]
    if info.get("problem"):
        return GpuPlan(entries=[], names=names, reason=reason, problem=str(info["problem"]),
                       problem_exit=int(info.get("exit", EXIT_INCOMPLETE)))
    if count == 0:
        return GpuPlan(entries=[None] * max(1, workers), names=[], reason=reason)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [e.strip() for e in visible.split(",")][:count] if visible else [str(i) for i in range(count)]
    chosen = list(range(count))
    if gpus:
        chosen = [int(g) for g in gpus.split(",") if g.strip()]
        if any(not 0 <= g < count for g in chosen) or len(set(chosen)) != len(chosen):
            raise ValueError(f"--gpus {gpus}: {count} GPU(s) visible, give distinct positions 0..{count - 1}")
    return GpuPlan(entries=[ids[g] for g in chosen], names=[names[g] for g in chosen])


# --- the command ---------------------------------------------------------------------------------------
def batch_parser() -> argparse.ArgumentParser:
    """The argument parser of `grade batch` (options and defaults as in the module docstring)."""
    p = argparse.ArgumentParser(
        prog="grade batch",
        description="Grade a class: every submission compiled, verified and timed in its own process, one per "
        "GPU; results kept as they come, so a rerun finishes an interrupted batch.",
        epilog=exit_codes_help(
            (EXIT_PASS, "every submission has a row (whatever the verdicts)"),
            (EXIT_INPUT, "usage error: bad option, nothing to grade, OUT locked by another batch, no NVRTC sandbox "
                         "without --unsandboxed, a GPU the installed NVRTC cannot compile for (nothing graded)"),
            (EXIT_NO_GPU, "no GPU: every submission has a row, static checks only (verification and timing need one)"),
            (EXIT_INCOMPLETE, "incomplete: --limit reached, interrupted once grading began (Ctrl-C, SIGTERM: the "
                              "rows so far are kept), a worker could not start, a row is busy, or the install "
                              "lacks its CUDA extra (nothing graded); run the same command again to finish"),
            (EXIT_INTERRUPTED, "interrupted (Ctrl-C) before grading began (finding the submissions, probing the "
                               "GPUs)")),
        formatter_class=HelpFormatter,
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="a class folder (one .cu per student, or one folder "
                   "per student holding one .cu), or .cu files")
    p.add_argument("--out", default="results", help="folder for results.jsonl, the gradebook, reports/ and index.html "
                   "(default: results)")
    p.add_argument("--compile-limit", type=positive_seconds, default=DEFAULT_COMPILE_LIMIT, metavar="S",
                   help=f"seconds NVRTC may take per submission (default {DEFAULT_COMPILE_LIMIT:g})")
    p.add_argument("--run-limit", type=positive_seconds, default=DEFAULT_RUN_LIMIT, metavar="S",
                   help=f"seconds for start-up, and for verification plus timing (default {DEFAULT_RUN_LIMIT:g})")
    p.add_argument("--memory-limit", type=positive_number, default=DEFAULT_MEMORY_LIMIT_GIB, metavar="GIB",
                   help=f"stop a worker whose resident memory passes this (default {DEFAULT_MEMORY_LIMIT_GIB:g} GiB)")
    p.add_argument("--shard", metavar="K/N", help="grade only slice K of N (1-based; sorted by id, round robin)")
    p.add_argument("--gpus", metavar="LIST", help="use only these visible GPUs (positions, e.g. 0,2); default all")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="parallel workers when there is no GPU (static checks only); default 1")
    p.add_argument("--limit", type=int, metavar="N", help="grade at most N submissions in this run (exit 4 if "
                   "some are left; a rerun continues)")
    p.add_argument("--retry-errors", action="store_true", help="regrade submissions whose recorded verdict is error")
    p.add_argument("--regrade", action="store_true", help="ignore earlier results and grade everything again")
    p.add_argument("--arch", type=arch_type, default=None, help="compile target when there is no GPU (default sm_90)")
    p.add_argument("--seed", type=seed_type, help="the same input seed for every submission (default: fresh per run)")
    p.add_argument("--format", choices=("gradebook", "gradescope"), default="gradebook",
                   help="gradescope: one submission; also write OUT/results.json in Gradescope's format")
    p.add_argument("--quiet", action="store_true", help="no progress line and no summary table")
    p.add_argument("--counters", action="store_true",
                   help="also measure each timed kernel's DRAM and L2 bytes with Nsight Compute (ncu); never "
                        "changes a verdict")
    p.add_argument("--counters-when-slow", action="store_true",
                   help="measure the counters of a correct kernel under half the one-float-per-thread copy, as "
                        "`grade FILE` does (its hints then name the measured cause); never changes a verdict")
    p.add_argument("--unsandboxed", action="store_true",
                   help="grade even where NVRTC cannot be confined by Landlock (not Linux 5.13+): the include "
                        "filter alone then keeps submissions from reading this machine's files; recorded in "
                        "the gradebook")
    return p


def merge_parser() -> argparse.ArgumentParser:
    """The argument parser of `grade merge OUT RESULTS...`."""
    p = argparse.ArgumentParser(prog="grade merge", description="Join the results of batch shards (results*.jsonl "
                                "files, or folders holding them) into one gradebook in OUT.",
                                epilog=exit_codes_help((EXIT_PASS, "merged"),
                                                       (EXIT_INPUT, "usage error: bad option, a RESULTS path "
                                                                    "missing, or no result rows to merge"),
                                                       EXIT_INTERRUPTED),
                                formatter_class=HelpFormatter)
    p.add_argument("out", metavar="OUT", help="folder for gradebook.csv, gradebook.json, summary.md, scores.csv, "
                   "reports/ and index.html")
    p.add_argument("results", nargs="+", metavar="RESULTS", help="results*.jsonl files or folders holding them")
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    return p


def main(argv: list[str]) -> int:
    """`grade batch ...` or `grade merge ...` (argv[0] is 'batch' or 'merge'); returns the exit code."""
    if argv and argv[0] == "merge":
        return merge_main(argv[1:])
    return batch_main(argv[1:] if argv and argv[0] == "batch" else argv)


def batch_main(argv: list[str]) -> int:
    """`grade batch` (module docstring); returns the exit code."""
    parser = batch_parser()
    return run_batch(parser.parse_args(argv), parser)


def run_batch(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """`grade batch` on arguments parsed by batch_parser() (or the `grade` command's copy of it, `parser`, which
    reports a bad option); returns the exit code."""
    try:
        k, n = parse_shard(args.shard) if args.shard else (1, 1)
        if args.workers < 1 or (args.limit is not None and args.limit < 1):
            raise ValueError("--workers and --limit must be positive whole numbers")
        if not args.out.strip():
            raise ValueError("--out: give a folder for the results")
    except ValueError as err:
        parser.error(str(err))
    if not any(os.path.lexists(raw) for raw in args.paths):  # a typo'd class folder: not a student's row
        return _usage(f"no such file or folder: {', '.join(printable(m, 80) for m in args.paths[:5])}; nothing "
                      "was graded")
    out_problem = _out_problem(Path(args.out))
    if out_problem:
        return _usage(out_problem)
    items = discover(args.paths, exclude=Path(args.out))
    if args.shard:
        items = shard(items, k, n)
    if args.format == "gradescope" and any(not it.stray for it in items):
        items = [it for it in items if not it.stray]  # one student's folder: a .cpp beside the .cu is host code
    if args.format == "gradescope" and len(items) != 1:
        found = ", ".join(printable(it.id, 40) for it in items[:5]) or "none"
        message = f"--format gradescope grades one submission; {len(items)} found ({found})"
        gb.write_json(Path(args.out) / "results.json", gradescope_refusal(
            f"Expected exactly one .cu file with your biasGeluFused kernel; found {len(items)} ({found})."))
        return _usage(message)
    if not items:
        return _usage("nothing to grade: no .cu file or student folder under " + " ".join(args.paths))
    try:
        exports = read_exports(args.paths, items)
    except InputError as err:
        return _usage(f"{err}; fix it, or move {METADATA_NAME} out of the folder to grade without names")
    try:
        plan = plan_gpus(args.gpus, args.workers)
    except ValueError as err:
        return _usage(str(err))
    if plan.problem:  # nothing can be graded on this machine: stop before any row, and say why
        print(f"grade batch: {plan.problem}; nothing was graded", file=sys.stderr)
        if args.format == "gradescope":
            gb.write_json(Path(args.out) / "results.json", gradescope_not_graded(plan.problem))
        return plan.problem_exit
    box = sandbox.state()
    if not box.available and not args.unsandboxed:
        return _usage(f"NVRTC cannot be sandboxed here ({box.reason}), so a submission could make it read "
                      "this machine's files; grade on Linux 5.13+ with Landlock, or add --unsandboxed to rely "
                      "on the include filter alone")
    if not box.available:
        print(f"grade batch: warning: grading without the NVRTC sandbox ({box.reason}); recorded in the "
              "gradebook", file=sys.stderr)
    settings = settings_for(args.arch, args.seed, plan.names, args.counters)
    for it in items:
        it.key = result_key(it, settings)
    out = Path(args.out)
    suffix = f".shard-{k}-of-{n}" if args.shard else ""
    try:
        store = gb.ResultStore(out / f"results{suffix}.jsonl")
    except OSError as err:
        return _usage(f"cannot write {out / f'results{suffix}.jsonl'} ({err.strerror or err}); is another batch "
                      "using this folder?")
    known = {row.key: row for row in gb.load_files(sorted(out.glob(gb.RESULTS_GLOB)))[0]}
    todo = [it for it in items if args.regrade or it.key not in known
            or (args.retry_errors and known[it.key].verdict == "error")
            or (plan.names and known[it.key].verdict in ("no-gpu", "busy"))]  # no GPU, or a busy one, last time
    todo_keys = {it.key for it in todo}
    results: dict[str, gb.BatchResult] = {  # a row kept, with the submitters the export names now
        it.key: known[it.key].model_copy(update={"submitters": it.submitters, "submitted_at": it.submitted_at})
        for it in items if it.key in known and it.key not in todo_keys}
    progress = Progress(len(items), len(results), len(plan.entries), args.quiet)

    def record(item: Item, report: GradeReport, phases: dict[str, float], entry: str | None) -> None:
        row = gb.make_result(id=item.id, path=item.path, key=item.key, sha256=item.sha256, report=report,
                             grader_version=grader.__version__, device=entry, phases=phases,
                             submitters=item.submitters, submitted_at=item.submitted_at)
        results[item.key] = row = store.append(row)  # as written: escaped, as a rerun or `grade merge` reads it
        write_report(out, row.id, row.report, row.submitters, row.submitted_at)  # ready to send back at once

    if args.limit is not None:
        todo = todo[: args.limit]
    for it in [it for it in todo if it.problem]:
        record(it, item_error(it, Stage.INPUT, it.problem), {}, None)
        progress.done += 1
    todo = [it for it in todo if not it.problem]
    complete = True
    tmp = Path(tempfile.mkdtemp(prefix="grade-batch-"))
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    stopping = []

    def interrupt(signum, frame):
        if not stopping:  # once: a second Ctrl-C must not break the clean-up
            stopping.append(signum)
            raise Interrupted()

    try:
        for s in old:
            try:
                signal.signal(s, interrupt)
            except ValueError:  # not the main thread: no clean stop on a signal
                pass
        if todo:
            slots = [Slot(entry=e) for e in plan.entries]
            complete = run_jobs(todo, slots, compile_limit=args.compile_limit, run_limit=args.run_limit,
                                memory_limit=args.memory_limit * 2**30, arch=args.arch, seed=args.seed,
                                on_result=record, progress=progress, tmp=tmp, sandbox=box.available,
                                counters=args.counters, counters_when_slow=args.counters_when_slow)
    except Interrupted:
        complete = False
    except WorkerStartError as err:
        complete = False
        print(f"grade batch: {printable(str(err), None)}; the batch stopped (rows so far are kept: fix the install and run again)",
              file=sys.stderr)
    finally:
        for s, h in old.items():
            try:
                signal.signal(s, h)
            except (ValueError, TypeError):
                pass
        progress.end()
        store.close()
        shutil.rmtree(tmp, ignore_errors=True)
    rows = [results[it.key] for it in items if it.key in results]
    complete = complete and len(rows) == len(items)
    book = gb.build_gradebook(rows, grader.__version__, {**settings, "shard": args.shard, "compile_limit":
                                                         args.compile_limit, "run_limit": args.run_limit,
                                                         "memory_limit_gib": args.memory_limit,
                                                         "sandbox": box.describe(),
                                                         **({"gradescope_export": exports} if exports else {})})
    paths = write_class_outputs(book, out, suffix)
    if args.format == "gradescope" and rows and rows[0].report:
        paths["gradescope"] = out / "results.json"
        wall = rows[0].phases.get("wall", rows[0].phases.get("total"))
        gb.write_json(paths["gradescope"], gradescope_results(rows[0].report, execution_time=wall))
    if not args.quiet:
        _print_summary(book, paths, plan, complete, len(items) - len(rows))
    if not complete or any(r.verdict == "busy" for r in rows):  # a busy row is graded again by a rerun
        return EXIT_INCOMPLETE
    return EXIT_NO_GPU if any(r.verdict == "no-gpu" for r in rows) or not plan.names else EXIT_PASS


def merge_main(argv: list[str]) -> int:
    """`grade merge OUT RESULTS...`: the latest row of each id over all inputs, written as one gradebook."""
    return run_merge(merge_parser().parse_args(argv))


def run_merge(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> int:
    """`grade merge` on arguments parsed by merge_parser() or the `grade` command's copy of it (`parser`, unused:
    for the same call as run_batch's); returns the exit code."""
    files: list[Path] = []
    for raw in args.results:
        p = Path(raw)
        if p.is_dir():
            files.extend(sorted(p.glob(gb.RESULTS_GLOB)))
        elif p.is_file():
            files.append(p)
        else:
            return _usage(f"{raw}: no such file or folder", "grade merge")
    out_problem = _out_problem(Path(args.out))
    if out_problem:
        return _usage(out_problem, "grade merge")
    rows, bad = gb.load_files(files)
    if not rows:
        return _usage("nothing to merge: no result rows in " + " ".join(args.results), "grade merge")
    merged = list(gb.latest_by_id(rows).values())
    versions = sorted({r.grader_version for r in merged})
    book = gb.build_gradebook(merged, ", ".join(versions), {"merged_from": [str(f) for f in files],
                                                            "unreadable_lines": bad})
    paths = write_class_outputs(book, Path(args.out))
    if not args.quiet:
        print(f"merged {len(merged)} submissions from {len(files)} file(s)"
              + (f"; {bad} unreadable line(s) skipped" if bad else ""))
        for kind, path in paths.items():
            print(f"  {kind}: {path}")
    return EXIT_PASS


def write_class_outputs(book: gb.Gradebook, out: Path, suffix: str = "") -> dict[str, Path]:
    """Everything a batch or merge writes from its gradebook into `out`: the gradebook files
    (grader.gradebook.write_outputs, each name with `suffix`), every row's report (grader.feedback:
    out/reports/, shared by the shards) and the class page (grader.classpage: index{suffix}.html). Returns
    {kind: path} (kind "reports" is the folder)."""
    paths = gb.write_outputs(book, out, suffix)
    for row in book.rows:
        if row.report is not None:
            write_report(out, row.id, row.report, row.submitters, row.submitted_at)
    paths["reports"] = out / REPORTS_DIR
    paths["page"] = write_page(book, out / f"index{suffix}.html")
    return paths


def _usage(message: str, command: str = "grade batch") -> int:
    print(f"{command}: {printable(message, None)}", file=sys.stderr)
    return EXIT_INPUT


def _out_problem(out: Path) -> str | None:
    """Why the output folder `out` cannot be used (it, or a folder above it, is a file), or None."""
    for where in (out, *out.parents):
        if where.exists():
            return None if where.is_dir() else f"--out {printable(str(out), 80)}: {printable(str(where), 80)} is a " \
                                                 "file, not a folder; give a folder for the results"
    return None


def _print_summary(book: gb.Gradebook, paths: dict[str, Path], plan: GpuPlan, complete: bool, left: int) -> None:
    print(gb.counts_table(book.counts, "simple"))
    if not plan.names:
        print(f"no GPU ({plan.reason}): static checks only; verification and timing need a CUDA GPU")
    if not complete:
        print(f"incomplete: {left} submission(s) not graded yet; run the same command again to finish")
    for kind, path in paths.items():
        print(f"{kind}: {path}")
