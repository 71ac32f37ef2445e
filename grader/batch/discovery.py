"""Finding the submissions of `grade batch`: a PATH that is a file is one submission, a class folder holds one per
`.cu` file or student folder; links, stray sources and archives become rows naming the fix (the rules:
grader.batch.command's docstring). Also the shards of a class and the submitters a Gradescope export names.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from grader.output.gradescope_export import read_metadata
from grader.batch.protocol import Item
from grader.source.read import MAX_SOURCE_BYTES, read_capped, safe_source_name
from grader.text import name_text

# --- finding submissions -------------------------------------------------------------------------------
SOURCE_SUFFIXES = (".cpp", ".cc", ".cxx", ".c", ".cuh", ".h", ".hpp")
ARCHIVE_SUFFIXES = (".tar.gz", ".tar.xz", ".tar.bz2", ".tgz", ".zip", ".tar", ".gz", ".7z", ".rar")
"""Files that look like a submission but are not a .cu file (case ignored): each gets an input-error row
naming the fix, so no student is silently missing (module docstring)."""
LINK_REFUSED = "a link, not followed"


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
        if entry.name.startswith(".") or (exclude is not None and not entry.is_symlink()
                                          and entry.resolve() == exclude):
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
    METADATA_NAME: grader.output.gradescope_export), in place: an item whose path is one of the export's submission
    folders gets its submitters and submitted_at (ids stay the folders' names). Returns, per export folder (as
    shown), the counts of its entries, of the items it named and of their submitters. Raises InputError when a
    metadata file cannot be read (grader.output.gradescope_export.read_metadata)."""
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
