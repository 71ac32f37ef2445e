"""Finding the submissions of `grade batch`, and who handed each one in (the rules, for the instructor: docs/batch.md,
"Finding the submissions").

Two forms, which give a submission the same id and path:
- one PATH that is a folder is a class folder: each of its entries is a submission (a `.cu` file, id its stem; a
  student folder holding one `.cu` file at any depth, id the folder's name), and its own `submission_metadata.yml`
  (a Gradescope export's) names the students;
- several PATHs (`grade batch uploads/*`), one file, or the one submission of `--format gradescope`: each PATH is
  such an entry of the folder it is in (a student folder gets the id it has in its class folder), and a
  `submission_metadata.yml`, or the autograder's `submission_metadata.json`, given as a PATH names the submissions
  beside it.
A metadata file inside a submission is that student's own file: never read, and noted in the row (`remarks`).
Every path a row shows, and every path in a problem a student reads, is relative to the class folder (the folder
given, or the one a PATH is in): never a path of the grading machine. Links, stray sources and archives become
rows naming the fix. Also the shards of a class.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from grader.batch.protocol import Item
from grader.core.errors import InputError
from grader.core.text import name_text
from grader.output.gradescope_export import (
    AUTOGRADER_METADATA_NAME,
    METADATA_NAME,
    METADATA_NAMES,
    ExportEntry,
    read_autograder_metadata,
    read_metadata_file,
)
from grader.source.read import MAX_SOURCE_BYTES, read_capped, safe_source_name

# --- finding submissions -------------------------------------------------------------------------------
SOURCE_SUFFIXES = (".cpp", ".cc", ".cxx", ".c", ".cuh", ".h", ".hpp")
ARCHIVE_SUFFIXES = (".tar.gz", ".tar.xz", ".tar.bz2", ".tgz", ".zip", ".tar", ".gz", ".7z", ".rar")
"""Files that look like a submission but are not a .cu file (case ignored): each gets an input-error row
naming the fix, so no student is silently missing (module docstring)."""
LINK_REFUSED = "a link, not followed"
INNER_METADATA = ("Gradescope's metadata inside the submission: the student's own file, not read (only the class "
                  "folder's own, or one given as a PATH, names the students)")
"""The remark on a submission holding a file named like Gradescope's metadata (module docstring)."""


@dataclass
class Found:
    """What find() found: the `items` (sorted by id, ids distinct), the metadata files that may name them (the
    class folder's own export file, metadata files given as PATHs), the items of each class folder (`roots`: the
    folder, resolved, to its items) and the PATHs given that are no submission (`ignored`, each with why)."""

    items: list[Item] = field(default_factory=list)
    metadata: list[Path] = field(default_factory=list)
    roots: dict[Path, list[Item]] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)


def find(paths: list[str], exclude: Path | None = None, *, one: bool = False) -> Found:
    """The submissions under `paths` (module docstring): one PATH that is a folder is a class folder, unless `one`
    (--format gradescope: the PATH is the one student's folder); otherwise each PATH is an entry of the folder it is
    in. Ids are made unique (unique_ids). A class folder's entry that is the folder `exclude` (the batch's own
    --out, kept inside the class folder) is no student.

    Never raises for a bad path or a hostile name: a missing path, a link, a folder without exactly one .cu file or
    that cannot be read, a file that is not a regular file or is over the size cap, a source file or archive that
    is not a .cu file each become an Item with `problem` set. Every id and path is escaped (grader.core.text.printable:
    a byte of a name that is not UTF-8 as `\\xe9`, a newline as `\\n`).
    """
    ex = _resolved(exclude) if exclude is not None else None
    found = Found()
    if len(paths) == 1 and not one and Path(paths[0]).is_dir() and not Path(paths[0]).is_symlink():
        root = Path(paths[0])
        try:
            found.roots[_resolved(root)] = _entries(root, _listing(root), ex, [], given=False)
        except OSError as err:  # a folder that cannot be listed, a path whose folder cannot be searched
            name = _resolved(root).name or paths[0]
            found.roots[_resolved(root)] = [Item(id=_id(name), path=_shown(name), entry=_shown(name),
                                                 problem=_unreadable(_shown(name), err))]
        own = root / METADATA_NAME
        if own.is_symlink() or own.exists():
            found.metadata.append(own)
    else:
        groups: dict[Path, list[Path]] = {}
        for raw in paths:
            p = Path(raw)
            if p.name in ("", ".", ".."):  # `grade batch . other/`: the folder by its own name
                p = Path(os.path.abspath(p))
            if p.name in METADATA_NAMES:
                found.metadata.append(p)
            else:
                groups.setdefault(p.parent, []).append(p)
        for parent, given in sorted(groups.items(), key=lambda g: str(g[0])):
            items = _entries(parent, sorted(set(given), key=lambda q: (q.name, str(q))), ex, found.ignored, given=True)
            found.roots.setdefault(_resolved(parent), []).extend(items)
    found.items = [it for items in found.roots.values() for it in items]
    unique_ids(found.items)
    found.items.sort(key=lambda it: it.id)
    return found


def discover(paths: list[str], exclude: Path | None = None) -> list[Item]:
    """The submissions under `paths` (find), sorted by id."""
    return find(paths, exclude).items


def _resolved(p: Path) -> Path:
    """`p` resolved (links, `..`), or made absolute where it cannot be."""
    try:
        return Path(p).resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(p))


def _listing(folder: Path) -> list[Path]:
    """The entries of a class folder, sorted, hidden ones left out. Raises OSError when it cannot be listed."""
    return [e for e in sorted(folder.iterdir()) if not e.name.startswith(".")]


def _shown(path: str | PurePath) -> str:
    """A path or name as outputs show it (grader.core.text.name_text)."""
    return name_text(str(path))


def _id(name: str) -> str:
    """The id of a submission named `name` (a file's stem, a folder's name), escaped (_shown)."""
    return _shown(name)


def _entries(root: Path, entries: list[Path], exclude: Path | None, ignored: list[str], *, given: bool) -> list[Item]:
    """The items of the entries of the class folder `root` (its listing, or the PATHs given in it: `given`): one per
    `.cu` file, student folder, link (refused) and stray source file or archive (refused); a stray is left out when a
    `.cu` file or folder of its stem is there (the student has a submission: `alice.zip` beside the unpacked
    `alice/`). A PATH given that is none of these is added to `ignored`, with why."""
    items, strays = [], []
    real_root = _resolved(root)
    for entry in entries:
        rel = _shown(entry.name)
        try:
            if exclude is not None and not entry.is_symlink() and entry.exists() and entry.resolve() == exclude:
                continue
            item = _entry(entry, rel, real_root, given)
        except OSError as err:  # one entry that cannot be examined is one error row, not a lost class
            item = Item(id=_id(_stem(entry.name)), path=rel, entry=rel, problem=_unreadable(rel, err))
        if item is None:
            if given:
                ignored.append(f"{rel}: not a .cu file, a student folder, a source file or an archive; ignored")
        elif item.stray:
            strays.append(item)
        else:
            items.append(item)
    handed_in = {it.id for it in items}
    return items + [it for it in strays if it.id not in handed_in]


def _entry(entry: Path, rel: str, root: Path, given: bool) -> Item | None:
    """The item of one entry of a class folder (shown as `rel`; `root`: the folder, resolved), or None for a file
    that is no submission. Raises OSError when it cannot be examined."""
    name = entry.name
    if entry.is_symlink():  # `grade batch uploads/*` names each upload: a link there could point at another's
        if given or entry.is_dir() or name.lower().endswith(".cu") or _stray_suffix(name):
            fix = "give the real path to grade it" if given else ("hand in the file itself (a link in the class "
                                                                   "folder could point at another student's files)")
            return Item(id=_id(_stem(name)), path=rel, entry=rel, problem=f"{rel}: {LINK_REFUSED}; {fix}")
        return None
    if given and not entry.exists():
        return Item(id=_id(entry.stem or name), path=rel, entry=rel, problem=f"{rel}: no such file or folder")
    if entry.is_dir():
        return _student_folder(entry, rel, given)
    if name.lower().endswith(".cu"):
        return _file_item(entry, _id(entry.stem), root, "the class folder", rel)
    if _stray_suffix(name):
        return Item(id=_id(_stem(name)), path=rel, entry=rel, problem=_stray_problem(rel, name), stray=True)
    return None


def _stray_suffix(name: str) -> str | None:
    """The suffix (lower case) of a file named `name` that looks like a submission but is not a .cu file
    (SOURCE_SUFFIXES, ARCHIVE_SUFFIXES), or None."""
    low = name.lower()
    return next((s for s in (*ARCHIVE_SUFFIXES, *SOURCE_SUFFIXES) if low.endswith(s) and len(low) > len(s)), None)


def _stem(name: str) -> str:
    """`name` without its suffix: an archive's whole suffix (`alice.tar.gz` -> `alice`), else Path.stem."""
    suffix = _stray_suffix(name)
    return name[: -len(suffix)] if suffix in ARCHIVE_SUFFIXES else Path(name).stem


def _stray_problem(shown: str, name: str) -> str | None:
    """The problem of a file named `name` (shown as `shown`) that looks like a submission but is not a .cu file,
    naming the fix; None for any other file."""
    suffix = _stray_suffix(name)
    if suffix in ARCHIVE_SUFFIXES:
        return f"{shown}: an archive; unpack it into a folder of its own (one folder per student) and grade again"
    if suffix:
        return f"{shown}: not a .cu file; rename it {_shown(_stem(name))}.cu if it is your kernel"
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


# --- who handed each one in ------------------------------------------------------------------------------
def name_submitters(found: Found, *, lenient: bool = False) -> tuple[dict[str, dict[str, int]], list[str]]:
    """Name the submitters of `found`'s items from its metadata files, in place (module docstring): an export's
    file names the items of its folder by their entry (ids stay the folders' names); the autograder's names the one
    submission beside it, whose id becomes the export's name for it (`submission_NNN`, ids then made unique again).
    Returns (per metadata file, as shown: the counts of its entries, of the items it named and of their
    submitters; warnings for the instructor). Raises InputError when a metadata file cannot be read (naming the
    line where there is one), unless `lenient` (--format gradescope: the student's result must still be written):
    then the warning says so and the items keep no names."""
    exports: dict[str, dict[str, int]] = {}
    warnings: list[str] = []
    seen: set[Path] = set()
    for m in found.metadata:
        if _resolved(m) in seen:
            continue
        seen.add(_resolved(m))
        members = found.roots.get(_resolved(m.parent), [])
        try:
            if m.name == AUTOGRADER_METADATA_NAME:
                counts = _name_autograder(m, members, warnings)
            else:
                counts = _name_export(read_metadata_file(m), members)
        except InputError as err:
            if not lenient:
                raise
            warnings.append(f"{err}; graded without names")
            continue
        exports[_shown(m)] = counts
    unique_ids(found.items)
    found.items.sort(key=lambda it: it.id)
    return exports, warnings


def _name_export(entries: dict[str, ExportEntry], members: list[Item]) -> dict[str, int]:
    """Give each of `members` its submitters from an export's `entries` (by the item's entry); the counts."""
    named = []
    for it in members:
        entry = entries.get(it.entry)
        if entry is not None:
            it.submitters, it.submitted_at = list(entry.submitters), entry.created_at
            named.append(it)
    return {"entries": len(entries), "named": len(named), "submitters": sum(len(it.submitters) for it in named)}


def _name_autograder(path: Path, members: list[Item], warnings: list[str]) -> dict[str, int]:
    """Give the one submission beside the autograder's metadata file at `path` its users and the export's id; the
    counts. Several submissions there: none is named (a warning says why). Raises InputError (unreadable)."""
    id, entry = read_autograder_metadata(path)
    subs = [it for it in members if not it.stray]
    if len(subs) != 1:
        warnings.append(f"{_shown(path)} names one submission; {len(subs)} found beside it, so it names none")
        return {"entries": 1, "named": 0, "submitters": 0}
    it = subs[0]
    it.submitters, it.submitted_at = list(entry.submitters), entry.created_at
    if id:
        it.id = _id(id)
    return {"entries": 1, "named": 1, "submitters": len(it.submitters)}


def _unreadable(shown: str, err: OSError, inside: tuple[Path, str] | None = None) -> str:
    """The problem of a file or folder (shown as `shown`) the batch cannot read (`err` from the operating system);
    a different file named by the error is shown relative to `inside` (a folder, and how it is shown) or by its
    name alone, never as a path of this machine."""
    where = None
    if err.filename:
        where = _shown(PurePath(str(err.filename)).name)
        if inside is not None:
            try:
                below = PurePath(str(err.filename)).relative_to(inside[0]).as_posix()
                where = inside[1] if below == "." else f"{inside[1]}/{_shown(below)}"
            except ValueError:
                pass
    at = f" (at {where})" if where and where != shown else ""
    return (f"{shown}: cannot be read ({err.strerror or err}){at}; check its permissions (the grader must be able "
            "to list a student folder and read its .cu file)")


def _inside(real: Path, root: Path) -> bool:
    return real == root or root in real.parents


def _student_folder(folder: Path, rel: str, given: bool = False) -> Item:
    """The one .cu file under `folder` (shown as `rel`; searched without entering linked folders or hidden ones); a
    link to a file is followed only to a file inside `folder` itself. A folder without one names what it holds
    instead: a source file or archive that is not a .cu file, a linked folder that was not entered. A file named
    like Gradescope's metadata inside is a remark (module docstring)."""
    found, strays, linked, errors, metadata = [], [], [], [], []
    for here, dirs, files in os.walk(folder, onerror=errors.append):  # never enters a linked folder
        linked.extend(Path(here) / d for d in sorted(dirs) if not d.startswith(".") and (Path(here) / d).is_symlink())
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for f in sorted(files):
            if f.startswith("."):
                continue
            if f.lower().endswith(".cu"):
                found.append(Path(here) / f)
            elif f in METADATA_NAMES:
                metadata.append(Path(here) / f)
            elif _stray_suffix(f):
                strays.append(Path(here) / f)

    def show(p: Path) -> str:
        return f"{rel}/{_shown(p.relative_to(folder).as_posix())}"

    item = Item(id=_id(folder.name), path=rel, entry=rel, remarks=[f"{show(m)}: {INNER_METADATA}" for m in metadata])
    if errors:  # a folder that cannot be listed may hide the .cu file, or a second one
        item.problem = _unreadable(rel, errors[0], (folder, rel))
    elif len(found) > 1:
        listing = ", ".join(show(f) for f in found[:5]) + (" ..." if len(found) > 5 else "")
        several = " (a folder given among several PATHs is one student's folder; give a class folder alone)" \
            if given else ""
        item.problem = f"{rel}: student folder with {len(found)} .cu files ({listing}); expected one{several}"
    elif not found:
        instead = [_stray_problem(show(f), f.name) for f in strays[:1]] + [
            f"{show(d)}: a linked folder, not entered; hand in the files themselves" for d in linked[:1]]
        item.problem = f"{rel}: student folder with no .cu file" + "".join(f"; {s}" for s in instead)
    else:
        found_item = _file_item(found[0], item.id, _resolved(folder), f"its student folder {rel}", show(found[0]))
        found_item.entry, found_item.remarks = rel, item.remarks
        return found_item
    return item


def _file_item(p: Path, id: str, root: Path, within: str, shown: str) -> Item:
    """An Item for the file at `p` (shown as `shown`), checked without reading beyond the size cap (and not at all
    if it is a link pointing outside `root`, described as `within` in the problem, not a regular file, or too
    large)."""
    item = Item(id=id, path=shown, entry=shown)
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
        item.problem = _unreadable(shown, err)
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
        item.problem = _unreadable(shown, err)
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
