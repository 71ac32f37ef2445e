"""One report per student, ready to send back: what OUT/reports/<name>.txt and <name>.json hold, and their names;
the batch writes them through its table of outputs (grader.batch.outputs), each by write_atomic.

The text file is exactly what `grade FILE` prints for that submission (grader.output.report.render_text of the row's
report, and the newline `print` adds); for a Gradescope export (grader.output.gradescope_export) one line naming the
submitters comes first ("Submitted by: ..."), and the rest is that same text. The JSON file is a StudentReport:
the id, the submitters and the GradeReport, as `grade FILE --json` prints it, under "report".

File names (report_stem): an id is an escaped string (grader.core.text.printable) but may still hold `/`, `\\`, `..`,
spaces, a colon or thousands of characters, and two ids may differ only in case (alice and Alice, one file on
macOS or Windows). So a name is the id itself only when the id is 1 to PLAIN_MAX characters of lower-case
letters, digits, `.`, `_`, `-`, `~` and `@` (RFC 3986's unreserved characters and `@`: no escaping in a link),
starting with a letter or digit, and not a name Windows reserves (con, nul, com1, ...). Any other id is its
characters in that set (others as `_`, runs of `_` as one, cut to SLUG_MAX, upper case kept) followed by `+` and
the first 12 hex digits of the sha256 of the id. Names are stable (they depend on the id alone, not on the other
students), distinct (a plain name has no `+` and only lower case; two hashed names differ in their hash, which
is lower case), and safe on Linux, macOS and Windows. Gradebook.reports and the class page keep the mapping.

The outputs of a batch, for the instructor: docs/batch.md.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

from grader.core.model import ReportModel
from grader.output.gradescope_export import Submitter
from grader.output.report import GradeReport, render_text

REPORTS_DIR = "reports"
"""The folder of the per-student reports, inside the batch's output folder."""
PLAIN_MAX = 64
SLUG_MAX = 40
HASH_DIGITS = 12
_PLAIN = re.compile(r"[a-z0-9][a-z0-9._~@-]*")
_NOT_SAFE = re.compile(r"[^A-Za-z0-9._~@-]+")
_UMASK = os.umask(0o022)
os.umask(_UMASK)  # read once, at import (setting it is the only way to read it; not thread-safe later)
_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


class StudentReport(ReportModel):
    """The JSON report of one student: `id` (the batch's), `submitters` (from a Gradescope export; [] otherwise),
    `submitted_at` (the export's created_at; "" otherwise) and `report`, the GradeReport as `grade FILE --json`
    prints it."""

    id: str
    submitters: list[Submitter] = []
    submitted_at: str = ""
    report: GradeReport


def report_stem(id: str) -> str:
    """The file name, without suffix, of the reports of the student `id` (module docstring): the id itself
    when it is plain, else its safe characters, `+` and 12 hex digits of its sha256."""
    if len(id) <= PLAIN_MAX and _PLAIN.fullmatch(id) and id.split(".")[0] not in _WINDOWS_RESERVED:
        return id
    slug = _NOT_SAFE.sub("_", id).strip("._-~") or "id"
    digest = hashlib.sha256(id.encode("utf-8", "surrogateescape")).hexdigest()[:HASH_DIGITS]
    return f"{slug[:SLUG_MAX]}+{digest}"


def report_file(id: str, suffix: str = ".txt") -> str:
    """The path of a student's report relative to the output folder ("reports/alice.txt"), with `/`."""
    return f"{REPORTS_DIR}/{report_stem(id)}{suffix}"


def report_text(report: GradeReport, submitters: list[Submitter] | None = None) -> str:
    """The text report of a student: what `grade FILE` prints (render_text and a newline), after a line naming
    the submitters when there are any."""
    head = "Submitted by: " + "; ".join(s.label() for s in submitters) + "\n" if submitters else ""
    return head + render_text(report) + "\n"


def write_atomic(path: Path, text: str, encoding: str = "utf-8") -> None:
    """Write `text` to `path` through a temporary file of a name no other writer uses (tempfile.mkstemp beside
    it: `.NAME.XXXXXXXX.tmp`), flushed to disk (fsync), then renamed over it: a reader sees the old file or the new
    one, never half of one, and two writers of one file (two merges into one folder) never remove or rename each
    other's temporary file: the last rename wins. Every file of a batch but its results file (grader.batch.outputs).
    Raises OSError when it cannot be written (the temporary file is then removed)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with open(fd, "w", encoding=encoding, newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644 & ~_UMASK)  # as open() would have made it (mkstemp's file is 0600)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
