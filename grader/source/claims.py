"""The student's claims: their part-3 table row and their sentence, parsed (StudentRow, StudentClaim), and the
byte-count flags that check those numbers against the byte model and the grader's measurement.

The student declares, in the `// grade:` block (grader.source.contract), a row of the page's part-3 table,
`version | kernels | floats/elem | ms | GB/s [| x copy]`, and one sentence saying what fraction of the copy
floor the kernel reached and why it cannot exceed 1. The course page (Solution, Pitfalls) names the two
ways that number lies: counting the bias as traffic (3 floats per element instead of 2), and a fraction
above 1. Flags report those, a row whose numbers disagree with each other, and a missing or malformed row or
sentence. Flags never change the verdict and never stop grading; every flag carries the student's number
and the grader's own (Flag.student, Flag.grader).

The exercise is the caller's (a grader.core.exercise.Exercise, or its kernel's name): its kernel's name labels the
row, and its byte model (Exercise.floats_per_element, bytes_text) is what the row is checked against. The pipeline
asks for the row and sentence only where the exercise does (Exercise.asks_for_row: the course page's own
exercise), so the flags' explanations of a wrong count (the bias, the two staged kernels) are that page's.

Units: ms are milliseconds; GB/s is 1e9 bytes per second of bytes read plus bytes written (the page's and
grader.timing.timer.gbs's definition): GB/s = floats/elem x 4 x rows x cols / (ms x 1e-3) / 1e9.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
from decimal import Decimal, InvalidOperation

from grader.core import exercise as course
from grader.core.exercise import Exercise
from grader.core.model import ReportModel
from grader.source.lexer import COMMENT, OPEN_COMMENT, Spliced, normalize, tokens

NUMBER = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
"""A number in the row: ASCII digits only (Python's float() would also take `1_000` and full-width
digits, which C does not). Written so that no two ways match the same text: matching, searching and
fullmatch stay linear in the length of a 60,000-digit row."""
_RUN = re.compile(r"[0-9.]+")
"""A maximal run of ASCII digits and points: the claim's candidate numbers (found in one linear pass)."""
_PERCENT = re.compile(r"\s*(?:%|percent)")
_DECIMAL = re.compile(r"[0-9]*\.[0-9]+")
_WHOLE_OR_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_ASCII_WHOLE = re.compile(r"[0-9]+")
_UNIT_AFTER = re.compile(r"[ \t]*(?:ms|us|\u00b5s|ns|s|[kKMGT]i?B/s|bytes?|floats?)(?![A-Za-z/])")
"""A unit after a number: that number is a time, a bandwidth or a size, not the claimed fraction."""
_FRACTION_AFTER = re.compile(r"[ \t]*(?:x\b|\u00d7|times\b|of\b)", re.I)
"""The words after a number above 2 that make it a fraction (`2.83 of the copy floor`, `2.83x copy`, `2.83
times`): without them such a number is not read as the claim (a GB/s written without its unit, a version)."""
_OPERAND_AFTER = re.compile(r"[ \t]*[/*\u00f7]")
_OPERAND_BEFORE = re.compile(r"[/*\u00f7][ \t]*$")
"""A number divided or multiplied (`0.5392 / 0.5601`) is an operand, not the claimed fraction (its result is)."""
_BOUND_BEFORE = re.compile(r"\b(?:exceed(?:s|ed|ing)?|above|beyond|over|(?:more|greater|higher|larger) than|"
                           r"at most|up to|limit(?:ed)?(?: (?:of|at|to))?|cap(?:ped)?(?: at)?|bounded by|"
                           r"max(?:imum)?(?: of)?)[ \t]+(?:of[ \t]+)?$", re.I)
"""A number after these words is the bound the sentence explains ("cannot exceed 1.0 x copy"), not the claim."""


class StudentRow(ReportModel):
    """The student's table row as written, and its fields where they parse (None where not)."""

    raw: str
    where: str = "// grade: row"
    """Where it was read: the `// grade: row` line, or "comment, line N" (a plain comment in the page's form)."""
    version: str | None = None
    kernels: int | None = None
    floats_per_elem: float | None = None
    ms: float | None = None
    gbs: float | None = None
    x_copy: float | None = None
    problem: str | None = None


class StudentClaim(ReportModel):
    """The student's sentence, and the fraction of the copy floor it states (None if it states none)."""

    raw: str
    where: str = "// grade: claim"
    """Where it was read: the `// grade: claim` line, or "comment, line N"."""
    fraction: float | None = None


class Flag(ReportModel):
    """A problem with the student's own numbers: what it is, the student's number and the grader's."""

    kind: str
    message: str
    student: str
    grader: str


def parse_row(value: str) -> StudentRow:
    """Parse 'version | kernels | floats/elem | ms | GB/s [| x copy]' (or the same separated by spaces,
    version first). Never raises: a field that does not parse is left None and `problem` says why."""
    if "|" in value:
        parts = [p.strip() for p in value.split("|")]
    else:
        tokens = value.split()
        numeric = 0
        while numeric < len(tokens) and NUMBER.fullmatch(tokens[-1 - numeric]):
            numeric += 1
        numeric = min(numeric, 5)
        parts = [" ".join(tokens[: len(tokens) - numeric])] + tokens[len(tokens) - numeric :]
    row = StudentRow(raw=value)
    if len(parts) not in (5, 6):
        row.problem = (
            f"expected 5 fields (version | kernels | floats/elem | ms | GB/s), found {len(parts)}"
        )
        return row
    row.version = parts[0] or None
    problems = []
    for name, text in zip(("kernels", "floats_per_elem", "ms", "gbs", "x_copy"), parts[1:], strict=False):
        pattern = _ASCII_WHOLE if name == "kernels" else NUMBER
        try:
            if not pattern.fullmatch(text):
                raise ValueError
            number = int(text) if name == "kernels" else float(text)
            if not math.isfinite(number) or number < 0:
                raise ValueError
            setattr(row, name, number)
        except ValueError:  # also int() of more than 4300 digits
            problems.append(f"{name} {_short(text, 40)!r} is not a number")
    if problems:
        row.problem = "; ".join(problems)
    return row


def parse_claim(value: str) -> StudentClaim:
    """Parse the student's sentence; the stated fraction is an 'NN%' or 'NN percent' (divided by 100) or a
    decimal number written with a point (e.g. 0.93; a sentence's closing period is not part of it; one above 2
    only where the words after it make it a fraction: `2.83 of the copy floor`, `2.83x copy`, `2.83 times`,
    so that a claim of any size is read and flagged), not followed by a unit of time, bandwidth or size
    (`1.142 ms`, `0.5 GB/s`, `1.5 bytes`), not an operand of a division (`0.5392 / 0.5601`; its result after
    `=` is), and not the bound the sentence explains (after "exceed", "above", "at most", ...: "it cannot
    exceed 1.0 x copy"). Where the sentence names the
    copy floor (copy floor, copyFloor, x copy, ...: _FLOOR_WORDS), the candidate nearest those words wins ("At
    1.142 ms it reached 0.94 of the copy floor; it cannot exceed 1.0" states 0.94); elsewhere the first
    percentage, else the first such decimal. Numbers are ASCII digits; a run such as
    1.2.3 is no number. Linear in the length of the sentence, but for a log factor."""
    claim = StudentClaim(raw=value)
    percents: list[tuple[int, int, float]] = []
    decimals: list[tuple[int, int, float]] = []
    for m in _RUN.finditer(value):
        if _WHOLE_OR_DECIMAL.fullmatch(m.group()) and _PERCENT.match(value, m.end()):
            percents.append((m.start(), m.end(), float(m.group()) / 100))
            continue
        number = m.group().rstrip(".")
        end = m.start() + len(number)
        if _DECIMAL.fullmatch(number) and (float(number) <= 2 or _FRACTION_AFTER.match(value, end)) \
                and not _UNIT_AFTER.match(value, end) and not _OPERAND_AFTER.match(value, end) \
                and not _before(value, m.start(), _OPERAND_BEFORE):
            decimals.append((m.start(), end, float(number)))
    percents = [c for c in percents if not _before(value, c[0], _BOUND_BEFORE)]
    decimals = [c for c in decimals if not _before(value, c[0], _BOUND_BEFORE)]
    candidates = sorted(percents + decimals)
    if not candidates:
        return claim
    floors = list(_FLOOR_WORDS.finditer(value))
    if not floors:
        claim.fraction = (percents or decimals)[0][2]
        return claim
    starts, ends = [f.start() for f in floors], [f.end() for f in floors]

    def distance(c: tuple[int, int, float]) -> int:
        gaps = []
        j = bisect.bisect_left(starts, c[1])  # the first floor words after the number
        if j < len(starts):
            gaps.append(starts[j] - c[1])
        k = bisect.bisect_right(ends, c[0]) - 1  # the last floor words before it
        if k >= 0:
            gaps.append(c[0] - ends[k])
        return min(gaps) if gaps else len(value)

    claim.fraction = min(candidates, key=distance)[2]
    return claim


def _before(value: str, start: int, pattern: re.Pattern) -> bool:
    """Whether `pattern` matches the 32 characters before index `start` of `value`, up to `start`."""
    return pattern.search(value, max(0, start - 32), start) is not None


PAGE_ROWS, PAGE_COLS = 16384, 1024
"""The course page's chain shape: "the bias vector is 1024 floats, 4 KiB against 64 MiB per buffer", so
64 MiB / 4 B = 16,777,216 elements = 16384 rows of 1024. The page's own table agrees: addBiasRow, 2 floats
per element in 0.5796 ms, is 2 x 4 x 16,777,216 / 0.5796e-3 / 1e9 = 231.6 GB/s, as printed."""

CONSISTENCY_RTOL = 0.02
"""A row is consistent when the GB/s its floats/elem and ms give, at some shape it may have been measured
at, is within this relative distance of its GB/s (plus the rounding of the two numbers as written: half a
unit of the last digit of each). The page's own rows agree to 0.03%: its GB/s is computed from the same
median ms. 2% leaves room for a GB/s taken from another statistic of the same run (mean against median)
while still catching what matters: a different floats/elem (3 against 2 is 50%), GiB/s for GB/s (7.4%),
a GB/s computed for another shape, or a typo."""

GBS_SLACK = 0.01
"""A claimed GB/s is flagged as impossible above (1 + GBS_SLACK) x the copy floor measured here: the
student's number comes from another run (often another card), and two medians of one copy differ by about
this much run to run. A claimed fraction is flagged above 1 with no slack: the student's fraction is the
ratio of two numbers from the student's own run, and the page says it cannot exceed 1."""


def byte_count_flags(
    row: StudentRow | None,
    claim: StudentClaim | None,
    *,
    rows: int | None,
    cols: int | None,
    floor_gbs: float | None,
    measured_gbs: float | None,
    measured_ms: float | None,
    floor_name: str | None = None,
    ex: Exercise,
) -> list[Flag]:
    """Flags for the student's table row and sentence (module docstring), in a fixed order: row missing or
    malformed, byte count, row consistency, impossible GB/s, impossible fraction (row, then sentence),
    sentence missing or without a fraction.

    row, claim: as parsed by grader.source.contract (None when not declared).
    ex: the exercise graded (grader.core.exercise.Exercise): its kernel's name labels the row, its floats per element
      and what they count (Exercise.floats_per_element, bytes_text) are the byte model the row is checked against.
    rows, cols: the graded benchmark shape (GradeReport.bench_rows/bench_cols); None when nothing was timed.
    floor_gbs: the copy floor measured here, GB/s (GradeReport.floor_gbs), named `floor_name`.
    measured_gbs, measured_ms: the submission's own median, GB/s at 2 floats per element, and ms (its
      TableRow); None when nothing was timed. The grader's fraction is measured_gbs / floor_gbs.

    Rules:
    - floats/elem above the byte model's (ex.floats_per_element; the page's 2): inflated byte count (3: the bias
      counted as 4 bytes per element, while it is one cols x 4-byte vector, 4 KiB on the page's 1024 columns, read
      once per row from cache); below it: a byte count that leaves out x or out.
    - row inconsistent: ms, GB/s and floats/elem are checked against each other with
      GB/s = floats/elem x 4 x rows x cols / (ms x 1e-3) / 1e9, within CONSISTENCY_RTOL plus rounding. The
      row comes from the student's own run, whose shape the grader does not know: it is checked at the
      graded benchmark shape (a student who timed on the grading card's benchmark) and at the page's
      16384 x 1024 (a student who ran the page's program), and flagged only when neither matches. The flag
      says how many elements the three numbers imply. Not checked when nothing was timed (rows/cols None).
    - GB/s above the floor measured here (with GBS_SLACK), or a fraction above 1 (the sentence's, or the
      row's x copy column): impossible, because the kernel moves exactly what the copy moves (ex.bytes_text:
      x read once, out written once) and the copy is the fastest way to move it.
    - no row, a row that does not parse (StudentRow.problem), no sentence, a sentence with no fraction:
      reported, never fatal; fields that did parse are still checked.

    Pure: no GPU, no I/O.
    """
    measured_fraction = measured_gbs / floor_gbs if measured_gbs and floor_gbs else None
    own_row = _own_row(measured_ms, measured_gbs, measured_fraction, ex)
    own_fraction = (f"{measured_fraction:.3f} of the copy floor" if measured_fraction is not None
                    else "not measured here (no timing)")
    if row is None:
        flags = [Flag(
            kind="row-missing",
            message="no table row found; add your part-3 row from your own run as a comment, in the page's "
                    f"form: `// {ex.kernel_name} 1 {ex.floats_per_element} MS GB/S X_COPY` (or `// grade: row = ...`)",
            student="no row", grader=own_row)]
    else:
        flags = [*_malformed(row, own_row), *_byte_count(row, cols, ex), *_consistency(row, rows, cols),
                 *_impossible_gbs(row, floor_gbs, measured_gbs, floor_name, ex)]
        if row.x_copy is not None and row.x_copy > 1:
            flags.append(_impossible_fraction(row.x_copy, "your row's x copy column", own_fraction))
    return flags + _claim_flags(claim, own_fraction)


def _malformed(row: StudentRow, own_row: str) -> list[Flag]:
    """A row that does not parse (StudentRow.problem), or whose ms or GB/s is 0."""
    if row.problem:
        return [Flag(
            kind="row-malformed",
            message=f"the table row cannot be read: {row.problem}; write "
                    "`version | kernels | floats/elem | ms | GB/s [| x copy]`",
            student=_short(row.raw), grader=own_row)]
    return [Flag(kind="row-malformed", message=f"the row's {'GB/s' if name == 'gbs' else name} is 0",
                 student=_short(row.raw), grader=own_row)
            for name in ("ms", "gbs") if getattr(row, name) == 0]


def _impossible_gbs(row: StudentRow, floor_gbs: float | None, measured_gbs: float | None,
                    floor_name: str | None, ex: Exercise) -> list[Flag]:
    """The row's GB/s above the copy floor measured here (with GBS_SLACK)."""
    if row.gbs is None or not floor_gbs or row.gbs <= (1 + GBS_SLACK) * floor_gbs:
        return []
    name = f" ({floor_name})" if floor_name else ""
    return [Flag(
        kind="impossible-gbs",
        message=f"your row's {row.gbs:g} GB/s is above the copy floor measured here{name}: impossible, "
                f"the kernel moves exactly what the copy moves ({ex.bytes_text}), and "
                "nothing moves those bytes faster than the fastest copy. A number above the floor "
                "means the byte count in the numerator is too big (usually the bias counted per "
                "element)",
        student=f"{row.gbs:g} GB/s",
        grader=f"copy floor {floor_gbs:.1f} GB/s" + (
            f"; your kernel {measured_gbs:.1f} GB/s" if measured_gbs else ""))]


def _claim_flags(claim: StudentClaim | None, own_fraction: str) -> list[Flag]:
    """The sentence missing, without a fraction, or with a fraction above 1."""
    if claim is None:
        return [Flag(
            kind="claim-missing",
            message="no sentence found; add the exercise's sentence as a comment: `// It reached F of the copy "
                    "floor; it cannot exceed 1 because ...` (or `// grade: claim = ...`)",
            student="no sentence", grader=own_fraction)]
    if claim.fraction is None:
        return [Flag(
            kind="claim-no-fraction",
            message="your sentence states no fraction of the copy floor (write it as 0.93 or 93%)",
            student=_short(claim.raw), grader=own_fraction)]
    if claim.fraction > 1:
        return [_impossible_fraction(claim.fraction, "your sentence", own_fraction)]
    return []


def _byte_count(row: StudentRow, cols: int | None, ex: Exercise) -> list[Flag]:
    f, model = row.floats_per_elem, ex.floats_per_element
    if f is None or f == model:
        return []
    grader = f"{model} floats/elem = {model * course.BYTES_PER_FLOAT} bytes ({ex.bytes_text})"
    if f < model:
        return [Flag(
            kind="low-byte-count",
            message=f"{f:g} floats per element leaves traffic out: the kernel reads x and writes out, 2 floats "
                    f"per element, so your GB/s is {model / f:.2g}x too low"
                    if f > 0 else "0 floats per element: the kernel reads x and writes out, 2 floats per element",
            student=f"{f:g} floats/elem", grader=grader)]
    inflate = f"counting {f:g} inflates GB/s by {f / model:g}x without moving the kernel"
    if math.isclose(f, 3):
        here = (f"; {cols * course.BYTES_PER_FLOAT / 1024:g} KiB at the graded {cols} columns"
                if cols else "")
        message = (
            "3 floats per element counts the bias as 4 bytes per element. The bias is one vector of cols "
            f"floats, cols x 4 bytes ({PAGE_COLS * course.BYTES_PER_FLOAT // 1024} KiB on the page's "
            f"{PAGE_COLS} columns{here}), read once per row from cache, not 4 bytes per element of DRAM "
            f"traffic; {inflate} (the page's Pitfalls)")
    elif math.isclose(f, 4):
        message = (
            "4 floats per element is what the two staged kernels move together (addBiasRow 2, applyGeluErf 2); "
            "the fused kernel deletes the store between them and the load after it, leaving x read and out "
            f"written: 2 floats; {inflate}")
    else:
        message = f"{f:g} floats per element is more than the kernel moves (x read, out written: 2); {inflate}"
    return [Flag(kind="inflated-byte-count", message=message, student=f"{f:g} floats/elem", grader=grader)]


def implied_gbs(floats_per_elem: float, ms: float, rows: int, cols: int) -> float:
    """GB/s (1e9 bytes/s) of floats_per_elem x 4 bytes x rows x cols moved in ms milliseconds."""
    return floats_per_elem * course.BYTES_PER_FLOAT * rows * cols / (ms * 1e-3) / 1e9


def _consistency(row: StudentRow, rows: int | None, cols: int | None) -> list[Flag]:
    f, ms, gbs = row.floats_per_elem, row.ms, row.gbs
    if not (f and ms and gbs and rows and cols):  # nothing timed here: the graded shape is unknown
        return []
    tol = CONSISTENCY_RTOL + _half_unit(row.raw, ms) / ms + _half_unit(row.raw, gbs) / gbs
    shapes = []
    if rows and cols:
        shapes.append(("the graded", rows, cols))
    shapes.append(("the page's", PAGE_ROWS, PAGE_COLS))
    implied = [(where, r, c, implied_gbs(f, ms, r, c)) for where, r, c in shapes]
    if any(abs(g / gbs - 1) <= tol for *_, g in implied):
        return []
    elements = gbs * 1e9 * ms * 1e-3 / (f * course.BYTES_PER_FLOAT)
    at = " and ".join(f"{g:.1f} GB/s at {where} {r} x {c}" for where, r, c, g in implied)
    return [Flag(
        kind="row-inconsistent",
        message=(f"your row's ms, GB/s and floats/elem disagree at every shape it could have been measured at "
                 f"(tolerance {100 * tol:.1f}%): GB/s = floats/elem x 4 x rows x cols / (ms x 1e-3) / 1e9. "
                 f"Together they imply {elements:,.0f} elements ({elements * course.BYTES_PER_FLOAT / 2**20:,.1f} "
                 "MiB per buffer). If you timed another shape, give the row for the page's "
                 f"{PAGE_ROWS} x {PAGE_COLS} or for the graded shape"),
        student=f"{f:g} floats/elem, {ms:g} ms, {gbs:g} GB/s",
        grader=f"{f:g} floats/elem in {ms:g} ms is {at}")]


def _impossible_fraction(value: float, where: str, own_fraction: str) -> Flag:
    return Flag(
        kind="impossible-fraction",
        message=f"{where} states {value:g} of the copy floor: impossible, the fraction cannot exceed 1 because "
                "the kernel reads one buffer and writes one, exactly what the copy moves (the bias is a small "
                "cached vector). Above 1 means the byte count in the numerator is wrong, usually the bias "
                "counted once per element instead of once per row",
        student=f"{value:g}", grader=own_fraction)


def _own_row(ms: float | None, gbs: float | None, fraction: float | None, ex: Exercise) -> str:
    """The grader's own row in the student's format, or the byte model part of it when nothing was timed."""
    head = f"{ex.kernel_name} | 1 | {ex.floats_per_element}"
    if ms is None or gbs is None:
        return head + " | (not timed here)"
    return head + f" | {ms:.4f} | {gbs:.1f}" + (f" | {fraction:.2f}" if fraction is not None else "")


def _half_unit(raw: str, value: float) -> float:
    """Half a unit of the last digit of `value` as written in `raw` (0 when it cannot be found)."""
    for token in NUMBER.findall(raw):
        try:
            if float(token) == value:
                return 0.5 * 10.0 ** Decimal(token).as_tuple().exponent
        except (ValueError, InvalidOperation):
            continue
    return 0.0


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- the row and the sentence in plain comments, in the page's own form ----------------------------------
NOTE_KINDS = ("row-missing", "claim-missing")
"""Flags that are notes to the student (something the exercise asks for is absent), not a problem with a
number: the text report shows them as notes, and the gradebook counts them once instead of flagging rows."""

_X_COPY_UNIT = re.compile(r"(?<=[0-9.])[ \t]*x(?:[ \t]*copy)?\b|(?<=[0-9.])[ \t]*(?:GB/s|ms)\b", re.I)
_FLOOR_WORDS = re.compile(r"copy[ -]?floor|copy[ -]ceiling|of the floor|of copy|x copy|copyFloor|244\.7", re.I)
MAX_CLAIM_CHARS = 400


@functools.cache
def _row_start(kernel: str) -> re.Pattern:
    """A comment line that starts with `kernel`'s name (the row's label, `KERNEL` or `KERNEL<4>`), then a space or
    a `|`; a markdown table row's leading `|` and spaces are skipped."""
    return re.compile(rf"[|\s]*(?P<label>{re.escape(kernel)}(?:<[0-9]+>)?)(?=[\s|])")


def comment_lines(text: str) -> list[tuple[int, str]]:
    """The comments of a C++ source as (line number, text) per line of the file, markers removed (`//`, `/*`,
    `*/`, a block comment's leading `*`). The source is read as grader.source.lexer's tokens, so nothing inside a
    string, character or raw string literal (whatever its delimiter: `R"x"( ... )x""`) is a comment, a digit
    separator (`16'384`) is part of its number, and a comment continued by a line splice goes on on the next
    line. One linear pass."""
    src = Spliced(normalize(text))
    s = src.s
    out: list[tuple[int, str]] = []
    for tok in tokens(s):
        if tok.kind == COMMENT and s.startswith("//", tok.start):
            pieces = _physical_lines(src, tok.start + 2, tok.end)
            out.append((pieces[0][0], pieces[0][1].lstrip("/!")))
            out += pieces[1:]
        elif tok.kind in (COMMENT, OPEN_COMMENT):
            body_end = tok.end - 2 if tok.kind == COMMENT else tok.end
            for k, (line, part) in enumerate(_physical_lines(src, tok.start + 2, body_end)):
                part = part.lstrip("*!") if k == 0 else part
                lead = part.lstrip(" \t")
                out.append((line, lead[1:] if lead.startswith("*") and not lead.startswith("*/") else part))
    return out


def _physical_lines(src: Spliced, a: int, b: int) -> list[tuple[int, str]]:
    """The spliced text from index a to b cut where the file's lines end (at a newline, dropped, and at a
    line splice), as (1-based line in the file, text) pieces; one piece at least."""
    s = src.s
    cuts = [(k, 0) for k in src.splices[bisect.bisect_right(src.splices, a) : bisect.bisect_left(src.splices, b)]]
    newline = s.find("\n", a, b)
    while newline >= 0:
        cuts.append((newline, 1))
        newline = s.find("\n", newline + 1, b)
    pieces, start = [], a
    for at, width in sorted(cuts):
        pieces.append((src.text_line(src.offset(start)), s[start:at]))
        start = at + width
    pieces.append((src.text_line(src.offset(start)), s[start:b]))
    return pieces


def find_row(text: str, kernel: str) -> StudentRow | None:
    """The student's part-3 row from a plain comment, in any layout the page prints: `KERNEL 1 2 0.4881
    4124.5`, with or without `|` separators (a markdown table row too), with or without an x copy column
    (`0.96`, `0.96x`, `0.96 x copy`) and units (`ms`, `GB/s`). The label must be the kernel's own name (the
    chain's `KERNEL + addResidual` row is not the kernel's row); `kernel`: that name (Exercise.kernel_name). The
    first line that parses wins; else the first that starts like one (the label, then two numbers or more) is
    returned with its `problem`; None when no comment holds one."""
    candidate = None
    for line_no, body in comment_lines(text):
        found = _row_fields(body, kernel)
        if found is None:
            continue
        label, fields = found
        row = parse_row(" | ".join([label, *fields]))
        row.raw, row.where = body.strip(), f"comment, line {line_no}"
        if row.problem is None:
            return row
        if candidate is None and _starts_like_a_row(fields):
            candidate = row
    return candidate


def _row_fields(body: str, kernel: str) -> tuple[str, list[str]] | None:
    """(label, fields) of a comment line that starts with the name `kernel` (not a `grade:` line), the x copy
    marks and units taken off; None for any other line."""
    m = _row_start(kernel).match(body)
    if not m or body.lstrip().startswith("grade:"):
        return None
    rest = _X_COPY_UNIT.sub("", body[m.end():]).strip().strip("|").strip()
    return m.group("label"), [f.strip() for f in rest.split("|")] if "|" in rest else rest.split()


def _starts_like_a_row(fields: list[str]) -> bool:
    """The label is followed by two numbers (kernels, floats/elem): a row, maybe a malformed one."""
    return sum(bool(NUMBER.fullmatch(f)) for f in fields[:2]) == 2


def _row_like(body: str, kernel: str) -> bool:
    """Whether a comment line is (or starts like) the table row of `kernel`, not a sentence that begins with the
    kernel's name ("KERNEL reached 97.9% of ...")."""
    found = _row_fields(body, kernel)
    return found is not None and _starts_like_a_row(found[1])


_HEADER_WORDS = frozenset({"version", "kernel", "kernels", "floats/elem", "ms", "gb/s", "x", "copy", "spread",
                           "(iqr)", "reps", "bytes/elem", "values/elem", "bytes/value", "per", "thread", "rounds",
                           "rse", "counted"})
"""The words of the headers of the tables the course program and the grader print."""


def table_line(body: str) -> bool:
    """Whether a comment line is part of a pasted table, not prose: a header (every cell a header word, three
    or more), a rule (`---`, `|---|:--|`), or a data row (three numbers or more, and no more words than
    numbers: `addBiasRow 1 2 0.5796 231.6 0.93`); a line with a lone `=` or `/` is arithmetic, not a row."""
    cells = body.replace("|", " ").split()
    if not cells or "=" in cells or "/" in cells:  # `239.6 / 244.7 = 0.979` is arithmetic, not a table
        return False
    if all(set(c) <= set("-:+=") for c in cells):
        return True
    if len(cells) >= 3 and all(c.lower() in _HEADER_WORDS for c in cells):
        return True
    numbers = sum(bool(NUMBER.fullmatch(c.rstrip("x%"))) for c in cells)
    return numbers >= 3 and numbers >= len(cells) - numbers


def _floor_words(m: re.Match) -> str:
    """The copy floor's words in one spelling, ` copy floor `, keeping the `of` or `x` they begin with (`0.94
    x copy` is ` 0.94  x copy floor `), which makes a number above 2 before them a fraction (parse_claim)."""
    lead = m.group().split()[0].lower() if " " in m.group() else ""
    return f" {lead} copy floor " if lead in ("of", "x") else " copy floor "


def find_claim(text: str, kernel: str) -> StudentClaim | None:
    """The student's sentence from a plain comment: the first comment paragraph (consecutive comment lines)
    that speaks of the copy floor (copy floor, copyFloor, copy ceiling, x copy, 244.7) and states a fraction
    of it (parse_claim: `0.93`, `93%`). A `// grade:` line, the row and the lines of a pasted table
    (table_line) are never part of the sentence; `kernel`: the kernel's name, which labels the row
    (Exercise.kernel_name). None when no comment states one."""
    paragraphs: list[tuple[int, list[str]]] = []
    last = -2
    for line_no, body in comment_lines(text):
        stripped = body.strip()
        if stripped.startswith("grade:") or _row_like(body, kernel) or table_line(body):
            last = -2
            continue
        if not stripped:
            last = -2
            continue
        if line_no == last + 1 and paragraphs:
            paragraphs[-1][1].append(stripped)
        else:
            paragraphs.append((line_no, [stripped]))
        last = line_no
    for line_no, lines in paragraphs:
        sentence = " ".join(lines)[:MAX_CLAIM_CHARS]
        if not _FLOOR_WORDS.search(sentence):
            continue
        claim = parse_claim(_FLOOR_WORDS.sub(_floor_words, sentence))
        if claim.fraction is not None:
            return StudentClaim(raw=sentence, where=f"comment, line {line_no}", fraction=claim.fraction)
    return None
