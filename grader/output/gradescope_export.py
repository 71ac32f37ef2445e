"""Gradescope's "Export Submissions" read: who handed in each `submission_NNN/` folder.

The export is a folder of one folder per submission (`submission_216975964/`, holding the student's files) and
`submission_metadata.yml`, written by Gradescope's Ruby side (Psych), which maps each folder's name to its
submission:

    ---
    submission_216975964:
      :submitters:
      - :name: Ada Lovelace
        :sid: '0012345'
        :email: ada@example.edu
      - :name: ...                      (a group submission lists every member)
      :created_at: 2023-12-02 02:52:07.938335000 Z
      :score: 0.0
      :status: processed
      :results: {...}                   (the autograder's results.json, when there was one)
      :history: [...]                   (earlier submissions of the same students)

Gradescope's autograder writes the same facts for the one submission it grades as JSON, beside the submission's
folder (`/autograder/submission_metadata.json`: "id", "created_at", "users" with name, email and sid);
read_autograder_metadata reads it, naming the submission as the export names its folder (`submission_NNN`).

Keys are Ruby symbols, so PyYAML reads them as strings with a leading colon (`:submitters`). Only the
submitters (name, email, sid) and `:created_at:` are read; everything else is skipped.

The file comes from the instructor, but it is treated as untrusted: it is read only up to MAX_METADATA_BYTES,
parsed by PyYAML's safe loader (plain strings, lists and mappings: no Python object is ever constructed; a
tag such as `!binary` or `!ruby/object` gives the plain value under it), with every implicit type turned off
(a sid `0012345` or a name `No` stays the string written, never a number or a boolean), and every string it
yields is escaped (grader.core.text.printable) and cut to MAX_FIELD_CHARS before it reaches a report.

How an instructor grades an export: docs/batch.md.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

from grader.core.errors import InputError
from grader.core.model import ReportModel
from grader.core.text import name_text, printable

METADATA_NAME = "submission_metadata.yml"
"""The file of an export folder that `grade batch` recognises."""
AUTOGRADER_METADATA_NAME = "submission_metadata.json"
"""The file Gradescope's autograder writes beside the submission's folder (/autograder/submission_metadata.json):
this one submission's id, time and users (read_autograder_metadata)."""
METADATA_NAMES = (METADATA_NAME, AUTOGRADER_METADATA_NAME)
MAX_METADATA_BYTES = 32 * 2**20
"""Read no more of the file than this (an export of 1,000 submissions with their autograder results and history
is a few MiB); a larger file is refused with the reason."""
MAX_FIELD_CHARS = 200
"""A name, email or sid is cut to this many characters (escaped first)."""
MAX_SUBMITTERS = 50
"""At most this many submitters are read per submission (Gradescope's groups are a handful)."""


class Submitter(ReportModel):
    """One student of a submission, as Gradescope's export lists them: name, email and sid (student id), each
    escaped (grader.core.text.printable) and "" where the export gives none."""

    name: str = ""
    email: str = ""
    sid: str = ""

    def label(self) -> str:
        """'Ada Lovelace <ada@example.edu> (sid 0012345)', leaving out what is empty."""
        parts = [self.name] + ([f"<{self.email}>"] if self.email else []) + ([f"(sid {self.sid})"] if self.sid else [])
        return " ".join(p for p in parts if p)


class ExportEntry(ReportModel):
    """What the export says of one submission folder: its submitters and when it was handed in (`created_at` as
    written, e.g. "2023-12-02 02:52:07.938335000 Z"; "" when absent)."""

    submitters: list[Submitter] = []
    created_at: str = ""


def _loader():
    """A PyYAML safe loader that resolves no implicit type: every plain scalar is a string, an empty one "";
    unknown tags give the plain value under them. The pure-Python loader, not libyaml's: its recursion is
    Python's, so a file nested a million deep is a RecursionError, never a crash."""
    import yaml

    class Loader(yaml.SafeLoader):
        yaml_implicit_resolvers: dict = {}

    def plain(loader, node):
        if isinstance(node, yaml.MappingNode):
            return loader.construct_mapping(node, deep=True)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node, deep=True)
        return loader.construct_scalar(node)

    def binary(loader, node):
        text = loader.construct_scalar(node)
        try:
            return base64.b64decode(text).decode("utf-8", "replace")
        except ValueError:
            return text

    Loader.add_constructor(None, plain)
    Loader.add_constructor("!binary", binary)
    Loader.add_constructor("tag:yaml.org,2002:binary", binary)
    return Loader


def parse_metadata(text: str, where: str = METADATA_NAME) -> dict[str, ExportEntry]:
    """{folder name: ExportEntry} from the text of a submission_metadata.yml (module docstring). Folder names
    are escaped as batch ids are (grader.core.text.name_text). An entry that is not a mapping, or a submitter that
    is not one, is skipped. Raises InputError (naming `where` and, where PyYAML gives it, the line) when the
    text is not YAML or its top level is not a mapping."""
    import yaml

    try:
        data = yaml.load(text, Loader=_loader())  # noqa: S506 - a safe loader (_loader)
    except (yaml.YAMLError, RecursionError, ValueError) as err:
        mark = getattr(err, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        raise InputError(f"{where}: not readable as Gradescope's export metadata{line} "
                         f"({printable(str(getattr(err, 'problem', None) or err), 120)})") from None
    if data is None or data == "":
        return {}
    if not isinstance(data, dict):
        line = next((i for i, ln in enumerate(text.splitlines(), 1)
                     if ln.strip() and not ln.lstrip().startswith(("#", "---", "%"))), 1)
        raise InputError(f"{where}: expected a mapping of submission folders to their submitters at line {line}, "
                         f"found {type(data).__name__}")
    out: dict[str, ExportEntry] = {}
    for folder, entry in data.items():
        if not isinstance(folder, str) or not isinstance(entry, dict):
            continue
        people = entry.get(":submitters") or []
        submitters = [_submitter(p) for p in people[:MAX_SUBMITTERS] if isinstance(p, dict)] \
            if isinstance(people, list) else []
        out[name_text(folder)] = ExportEntry(submitters=[s for s in submitters if s.name or s.email or s.sid],
                                                   created_at=_field(entry.get(":created_at")))
    return out


def _field(value: object) -> str:
    """A scalar of the export as one escaped line, cut to MAX_FIELD_CHARS; "" for anything else."""
    return printable(value.strip(), MAX_FIELD_CHARS) if isinstance(value, str) else ""


def _submitter(p: dict) -> Submitter:
    return Submitter(name=_field(p.get(":name")), email=_field(p.get(":email")), sid=_field(p.get(":sid")))


def read_metadata(folder: Path) -> dict[str, ExportEntry] | None:
    """The export metadata of `folder` (read_metadata_file of its METADATA_NAME), or None when the folder has no
    such file. Raises InputError as read_metadata_file does."""
    path = Path(folder) / METADATA_NAME
    if not path.is_symlink() and not path.exists():
        return None
    return read_metadata_file(path)


def read_metadata_file(path: Path) -> dict[str, ExportEntry]:
    """{folder name: ExportEntry} of the export metadata file at `path` (parse_metadata). Raises InputError when
    the file is a link (not followed, like every link in a class folder), is not a regular file, cannot be read,
    is over MAX_METADATA_BYTES, is not UTF-8, or is not readable as the export's YAML (naming the line)."""
    text, shown = _read_text(Path(path))
    return parse_metadata(text, shown)


def read_autograder_metadata(path: Path) -> tuple[str, ExportEntry]:
    """(id, entry) from the JSON file Gradescope's autograder writes beside the submission folder
    (AUTOGRADER_METADATA_NAME: {"id": 123456, "created_at": "...", "users": [{"name", "email", "sid", ...}], ...}):
    `id` is the name the export gives the submission's folder ("submission_123456"; "" when the file gives no id
    that is a whole number or a plain name), the entry its users (escaped and cut as the export's) and created_at.
    Raises InputError as read_metadata_file does, naming the line of a JSON error."""
    text, shown = _read_text(Path(path))
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"{shown}: not readable as Gradescope's autograder metadata at line {err.lineno} "
                         f"({printable(err.msg, 120)})") from None
    except (RecursionError, ValueError) as err:
        raise InputError(f"{shown}: not readable as Gradescope's autograder metadata ({type(err).__name__})") from None
    if not isinstance(data, dict):
        raise InputError(f"{shown}: expected one JSON object (the submission), found {type(data).__name__}")
    users = data.get("users") if isinstance(data.get("users"), list) else []
    people = [Submitter(name=_field(_text(u.get("name"))), email=_field(_text(u.get("email"))),
                        sid=_field(_text(u.get("sid")))) for u in users[:MAX_SUBMITTERS] if isinstance(u, dict)]
    number = _text(data.get("id"))
    id = f"submission_{number}" if re.fullmatch(r"[A-Za-z0-9_-]{1,64}", number) else ""
    return id, ExportEntry(submitters=[s for s in people if s.name or s.email or s.sid],
                           created_at=_field(_text(data.get("created_at"))))


def _text(value: object) -> str:
    """A JSON scalar as the text written: a string as it is, a whole number in digits; "" for anything else."""
    if isinstance(value, str):
        return value
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else ""


def _read_text(path: Path) -> tuple[str, str]:
    """(the text of the metadata file at `path`, the path as messages show it). Raises InputError (module
    docstring: never through a link, capped, UTF-8)."""
    shown = name_text(str(path))
    if not path.is_symlink() and not path.exists():
        raise InputError(f"{shown}: no such file")
    if path.is_symlink() or not path.is_file():
        raise InputError(f"{shown}: not a regular file (a link is not followed); put Gradescope's file itself there")
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_METADATA_BYTES + 1)
    except OSError as err:
        raise InputError(f"{shown}: cannot be read ({err.strerror or err})") from None
    if len(raw) > MAX_METADATA_BYTES:
        raise InputError(f"{shown}: over {MAX_METADATA_BYTES // 2**20} MiB, more than an export of a class holds; "
                         "check the file")
    try:
        return raw.decode("utf-8-sig"), shown
    except UnicodeDecodeError as err:
        raise InputError(f"{shown}: not UTF-8 (byte {err.start})") from None
