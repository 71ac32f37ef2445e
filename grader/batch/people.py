"""Who is who across a class: one student named on two submissions, and the rule that decides which of their
scores `scores.csv` keeps (KEEP_RULE).

A Gradescope export names each submission's students (grader.output.gradescope_export); a student can be on two
(a group's submission and their own, two exports graded as one class, an email spelled in two cases), and an id
that is an email can be the email a submission's metadata names. scores.csv is imported by email, so it must give
one score per student: the lines of one email (compared without case), or of one sid where a line has no email,
are one student's, and KEEP_RULE picks the line kept. A sid shared by lines with different emails is listed for
the instructor, and both lines are kept (no score is dropped on a sid alone). summary.md and the batch's stderr
list every such student (grader.batch.gradebook, grader.batch.command).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable
from typing import Protocol

from grader.core.model import ReportModel
from grader.output.gradescope_export import Submitter

KEEP_RULE = ("scores.csv keeps the submission handed in last (the export's time); where the times are missing or "
             "equal, the one with the higher score; then the first id")
"""Which score scores.csv keeps for a student on more than one submission."""
_TIME = re.compile(r"(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:\.(\d+))?\s*(Z|UTC|[+-]\d\d:?\d\d)?")


class Row(Protocol):
    """What these functions read of a row (grader.batch.gradebook.BatchResult)."""

    id: str
    submitters: list[Submitter]
    submitted_at: str


class Shared(ReportModel):
    """A student on more than one submission: `who` (the email, or "sid S"), the `ids` of those submissions, the id
    whose line scores.csv keeps (`kept`; "" when every line is kept: a sid under different emails) and `why`."""

    who: str
    ids: list[str]
    kept: str = ""
    why: str

    def describe(self) -> str:
        """One line for summary.md and stderr (its strings are escaped: grader.core.model)."""
        return f"{self.who} is on {len(self.ids)} submissions ({', '.join(self.ids)}): {self.why}"


def submitted_time(text: str) -> dt.datetime | None:
    """The time of an export's created_at ("2026-11-30 22:45:14.344165000 Z", or the autograder's ISO
    "2018-07-01T14:22:32.365935-07:00"), in UTC; None when it is not one."""
    m = _TIME.fullmatch(text.strip())
    if not m:
        return None
    day, clock, frac, zone = m.groups()
    zone = "+00:00" if zone in (None, "Z", "UTC") else zone if ":" in zone else f"{zone[:3]}:{zone[3:]}"
    try:
        when = dt.datetime.fromisoformat(f"{day}T{clock}.{(frac or '0')[:6].ljust(6, '0')}{zone}")
    except ValueError:
        return None
    return when.astimezone(dt.UTC)


def _key(person: Submitter) -> str | None:
    """Who a line is: its email without case, else its sid, else nobody (None)."""
    if person.email.strip():
        return person.email.strip().lower()
    return f"sid {person.sid.strip()}" if person.sid.strip() else None


def score_lines(rows: Iterable[Row], email_of: Callable[[Row], str]) -> list[tuple[Row, Submitter]]:
    """The lines of scores.csv before KEEP_RULE: one per submitter of each row (a group gets one each), or one per
    row without submitters (its email: `email_of(row)`, e.g. the id when it is an email address); a person twice
    on one row once."""
    lines = []
    for row in rows:
        people = row.submitters or [Submitter(email=email_of(row))]
        seen: set[str] = set()
        for person in people:
            key = _key(person)
            if key is None or key not in seen:
                lines.append((row, person))
            if key is not None:
                seen.add(key)
    return lines


def shared(lines: list[tuple[Row, Submitter]], score: Callable[[Row], float | None]) -> list[Shared]:
    """Every student on more than one submission among `lines` (score_lines), with the id KEEP_RULE keeps (by
    `score`: a row's score out of 10, None when not graded), sorted by who; then every sid that lines with
    different emails share (kept: "")."""
    found = []
    for who, rows in sorted(_groups(lines, _key).items()):
        if len(rows) > 1:
            kept, why = _keep(rows, score)
            found.append(Shared(who=who, ids=sorted(r.id for r in rows), kept=kept.id,
                                why=f"scores.csv keeps {kept.id} ({why})"))
    by_sid = _groups([(r, p) for r, p in lines if p.email.strip() and p.sid.strip()], lambda p: f"sid {p.sid.strip()}")
    for who, rows in sorted(by_sid.items()):
        emails = {p.email.strip().lower() for r, p in lines if p.sid.strip() and f"sid {p.sid.strip()}" == who}
        if len(rows) > 1 and len(emails) > 1:
            found.append(Shared(who=who, ids=sorted(r.id for r in rows),
                                why=f"one sid under {len(emails)} emails; every line kept (check the export)"))
    return found


def kept_lines(lines: list[tuple[Row, Submitter]], score: Callable[[Row], float | None]) -> list[tuple[Row, Submitter]]:
    """`lines` (score_lines) without the lines KEEP_RULE drops: for each student on more than one submission, only
    the line of the submission kept. Order kept."""
    drop: set[tuple[str, str]] = set()
    for who, rows in _groups(lines, _key).items():
        if len(rows) > 1:
            kept, _ = _keep(rows, score)
            drop |= {(r.id, who) for r in rows if r.id != kept.id}
    return [(r, p) for r, p in lines if (r.id, _key(p)) not in drop]


def _groups(lines: list[tuple[Row, Submitter]], key: Callable[[Submitter], str | None]) -> dict[str, list[Row]]:
    """The distinct rows (by id, in order) of the lines of each key (None: left out)."""
    out: dict[str, list[Row]] = {}
    for row, person in lines:
        k = key(person)
        if k is not None and all(r.id != row.id for r in out.setdefault(k, [])):
            out[k].append(row)
    return out


def _keep(rows: list[Row], score: Callable[[Row], float | None]) -> tuple[Row, str]:
    """The row KEEP_RULE keeps among one student's `rows`, and why in a few words."""
    def rank(row: Row) -> tuple:
        when, points = submitted_time(row.submitted_at), score(row)
        return (when is not None, when or dt.datetime.min.replace(tzinfo=dt.UTC),
                points is not None, points if points is not None else 0.0)

    ordered = sorted(rows, key=lambda r: r.id)
    best = max(ordered, key=rank)
    others = [rank(r) for r in ordered if r is not best]
    if all(rank(best)[:2] != o[:2] for o in others) and rank(best)[0]:
        return best, "handed in last"
    if all(rank(best) != o for o in others):
        return best, "the higher score"
    return best, "the first id"
