"""The class page's plots (grader.batch.classpage), each an inline SVG from grader.output.svgplot with a `<desc>` that
says in words what it shows: the points as scores.csv gives them (with their mean and median), the fraction of the
copy floor in the gradebook's bins, KernelBench's fast_p, each student's claimed fraction against the measured one,
and DRAM bytes per element where counters were measured.

Colours come from grader.batch.classpage_assets; a verdict is also told by its marker's shape (grader.batch.triage:
the same groups as the table's badges) and the histogram's bars under 0.75 are hatched, so nothing rests on colour.
Markers that would cover each other are nudged apart (grader.output.svgplot.Plot.apart); the table gives every
exact value.
"""

from __future__ import annotations

import math

from grader import exercises
from grader.batch.classpage_assets import BLUE, MARKS
from grader.batch.gradebook import BIN_WIDTH, BINS, BatchResult, fraction_bins
from grader.batch.triage import GROUPS, Points, group
from grader.core import exercise as course
from grader.core.exercise import Exercise
from grader.core.text import printable
from grader.output.gradescope import is_graded
from grader.output.svgplot import FONT, Plot, nice_ticks

CLAIM_MAX = 1.5
"""The claimed-against-measured plot shows fractions up to this; a claim above it is drawn on the top edge
(the table gives its value)."""
MARKERS = dict(zip(GROUPS, ("circle", "diamond", "down", "up", "up", "square", "square", "square"), strict=True))
"""The marker shape of each verdict group in the point plots (a timed row is gold, silver, slow or busy)."""


def count(n: int, noun: str) -> str:
    """'1 student', '2 students'."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def graded_rows(rows: list[BatchResult]) -> list[BatchResult]:
    """The rows that were graded (gold, silver, fail, or an error of the submission): not busy, no-gpu, or an
    error of the grader or of a worker that did not start."""
    return [r for r in rows if r.report is not None and is_graded(r.report) and r.stage != "setup"]


def correct_fractions(rows: list[BatchResult]) -> list[float]:
    """The fractions of the rows that are correct and were timed (stage grade: gold, silver, or a slow fail)."""
    return [r.fraction for r in rows if r.stage == "grade" and r.fraction is not None and math.isfinite(r.fraction)]


def fast_p(rows: list[BatchResult], p: float) -> float | None:
    """KernelBench's fast_p over the graded rows: the share that is correct and at least p of the floor (None
    when nothing was graded)."""
    graded = graded_rows(rows)
    if not graded:
        return None
    return sum(1 for f in correct_fractions(graded) if f >= p) / len(graded)


def claimed(row: BatchResult) -> float | None:
    """The fraction of the copy floor the student claims: their sentence's, else their table row's x copy; None
    when they state none."""
    contract = row.report.contract if row.report else None
    if contract is None:
        return None
    if contract.claim is not None and contract.claim.fraction is not None:
        return contract.claim.fraction
    return contract.row.x_copy if contract.row is not None else None


def exercise_of(row: BatchResult) -> Exercise | None:
    """The exercise `row`'s report answers (GradeReport.exercise; a report that names none was graded as the default
    exercise, grader.exercises.DEFAULT), None for a row without a report."""
    if row.report is None:
        return None
    return exercises.get(row.report.exercise or exercises.DEFAULT)


def class_exercises(rows: list[BatchResult]) -> list[Exercise]:
    """The exercises the rows' reports answer, by name: one for a class (`grade batch --exercise` grades every file
    as one); the default exercise when no row has a report (a batch's rows name theirs: grader.batch.worker)."""
    found = {ex.name: ex for r in rows if (ex := exercise_of(r)) is not None}
    return [found[name] for name in sorted(found)] or [exercises.get(exercises.DEFAULT)]


def bytes_per_elem(rows: list[BatchResult]) -> str:
    """The bytes per element the rows' exercises' byte models count (Exercise.floats_per_element x 4), as text:
    '8', or '8 / 12' for rows of exercises that count differently."""
    counts = sorted({ex.floats_per_element * course.BYTES_PER_FLOAT for ex in class_exercises(rows)})
    return " / ".join(str(n) for n in counts)


def dram_per_elem(row: BatchResult) -> float | None:
    """DRAM bytes read plus written per element by the student's kernel (the counters' launch labelled with the
    kernel's name, the one its report names), where counters were measured."""
    c = row.report.counters if row.report else None
    if c is None or c.unavailable:
        return None
    kernel = row.report.kernel or exercise_of(row).kernel_name
    mine = next((k for k in c.kernels if k.label == kernel), None)
    return mine.dram_per_elem if mine else None


def label_lines(plot: Plot, lines: list[tuple[float, str]], stroke: str = "#555555") -> None:
    """Two (or one) labelled reference lines whose labels cross no line: each label goes on the side with room
    (left of its line near the right edge), and a label that must reach over the other line goes in the row above
    it (grader.output.svgplot.Plot.vline starts each line below its own label's row; a plot that may need two rows
    under its title has `top` 46)."""
    width = {text: len(text) * (FONT - 1) * 0.58 for _, text in lines}
    room_left = {x: plot.px(x) - plot.left for x, _ in lines}
    room_right = {x: plot.width - plot.right - plot.px(x) for x, _ in lines}
    placed = []
    for i, (x, text) in enumerate(sorted(lines)):
        prefer_end = i == 0 and len(lines) > 1
        anchor = "end" if (prefer_end and room_left[x] > width[text]) or room_right[x] < width[text] else "start"
        reach = (plot.px(x) - width[text], plot.px(x)) if anchor == "end" else (plot.px(x), plot.px(x) + width[text])
        placed.append((x, text, anchor, reach))
    crossing = [any(o is not p and p[3][0] - 3 <= plot.px(o[0]) <= p[3][1] + 3 for o in placed) for p in placed]
    for (x, text, anchor, _), over in zip(placed, crossing, strict=True):
        plot.vline(x, text, anchor=anchor, row=0 if over or not any(crossing) else 1, stroke=stroke)


def points_plot(summary: Points) -> str:
    """Bars of the students per score out of 10 (scores.csv's), with the mean and median lines."""
    counts = summary.counts
    top = max(counts.values(), default=0) or 1
    plot = Plot(title="Points out of 10 (scores.csv)", x_label="points: 1 compiles, +4 correct, +3 silver, +5 gold",
                y_label="students", x_range=(-0.6, 10.6), y_range=(0, top * 1.3), css_class="points", width=440,
                height=260, top=46,
                x_ticks=list(range(11)), y_ticks=nice_ticks(0, top, 4),
                desc=f"{count(summary.graded, 'graded student')}; " + ", ".join(
                    f"{p:g} points: {n}" for p, n in counts.items()) + (
                    f"; mean {summary.mean:.1f}, median {summary.median:g}" if summary.graded else ""))
    if summary.mean is not None:  # first: the bars and their counts are drawn over the lines
        label_lines(plot, [(summary.mean, f"mean {summary.mean:.1f}"), (summary.median, f"median {summary.median:g}")],
                    stroke="#333333")
    for p, n in counts.items():
        plot.bar(p - 0.4, p + 0.4, n, fill=BLUE, title=f"{p:g} points: {count(n, 'student')}")
        plot.label(p, n + top * 0.03, str(n), anchor="middle")
    return plot.render()


def histogram_plot(rows: list[BatchResult]) -> str:
    """Bars of the fractions in the gradebook's equal bins (grader.batch.gradebook.fraction_bins; the last bin is 1.0
    and above), coloured by the verdict its range earns (hatched under 0.75: correct but slow), with the silver and
    gold lines."""
    fractions = [r.fraction for r in rows if r.fraction is not None]
    counts = fraction_bins(fractions)
    top = max(counts) or 1
    plot = Plot(title="Fraction of the copy floor", x_label="fraction of the copy floor (bins of 0.05; last: 1.0 "
                "and above)", y_label="students", x_range=(0, (BINS + 1) * BIN_WIDTH), y_range=(0, top * 1.12),
                x_ticks=[i / 10 for i in range(0, 11)], x_format="{:.1f}", y_ticks=nice_ticks(0, top, 4),
                css_class="histogram", desc=f"{count(len(fractions), 'timed submission')}; " + ", ".join(
                    f"{_bin_label(i)}: {n}" for i, n in enumerate(counts) if n))
    slow = plot.hatch("slow", MARKS["slow"])
    for i, n in enumerate(counts):
        if not n:
            continue
        lo = i * BIN_WIDTH
        fill = MARKS["gold"] if lo >= course.GOLD - 1e-9 else MARKS["silver"] if lo >= course.SILVER - 1e-9 \
            else slow
        plot.bar(lo, lo + BIN_WIDTH, n, fill=fill, title=f"{_bin_label(i)}: {count(n, 'submission')}")
    label_lines(plot, [(p, f"{'silver' if p == course.SILVER else 'gold'} {p:.2f}")
                       for p in (course.SILVER, course.GOLD)])
    return plot.render()


def _bin_label(i: int) -> str:
    return f"{i * BIN_WIDTH:.2f}-{(i + 1) * BIN_WIDTH:.2f}" if i < BINS else "1.00 and above"


def fast_p_plot(rows: list[BatchResult]) -> str:
    """The staircase of fast_p against p: the share of the graded rows that is correct and at least p of the
    floor, with its values at the silver and gold lines."""
    graded = graded_rows(rows)
    fractions = sorted(correct_fractions(graded))
    n = len(graded) or 1
    x_max = max(1.0, max(fractions, default=0.0)) + 0.02
    points = [(0.0, len(fractions) / n)] + [(f, (len(fractions) - i - 1) / n) for i, f in enumerate(fractions)]
    points.append((x_max, 0.0))
    at = {p: fast_p(rows, p) for p in (course.SILVER, course.GOLD)}
    plot = Plot(title="Correct and at least p of the floor (fast_p)", x_label="p: fraction of the copy floor",
                y_label="share of graded submissions", x_range=(0, x_max), y_range=(0, 1.05),
                x_ticks=nice_ticks(0, x_max, 10), x_format="{:.1f}",
                y_ticks=[(t / 5, f"{t * 20}%") for t in range(6)], css_class="fastp", top=46,
                desc=f"over {count(len(graded), 'graded submission')}: {len(fractions)} correct; " + "; ".join(
                    f"at p = {p:.2f}: {100 * (v or 0):.0f}%" for p, v in at.items()))
    plot.line(points, stroke=BLUE, width=2.5, step=True, css="curve",
              title=f"{len(fractions)} of {count(len(graded), 'graded submission')} are correct")
    label_lines(plot, [(p, f"{'silver' if p == course.SILVER else 'gold'} {p:.2f}: {100 * (v or 0):.0f}%")
                       for p, v in at.items()])
    return plot.render()


def claims_plot(rows: list[BatchResult]) -> tuple[str, int, int]:
    """Each student's claimed fraction (y) against the measured one (x), the line y = x, flagged students ringed,
    points that would cover each other nudged apart; returns the SVG, the count drawn and the count of claims
    without a measured fraction."""
    pairs = [(r, claimed(r)) for r in rows]
    drawn = [(r, c) for r, c in pairs if c is not None and r.fraction is not None]
    unmeasured = sum(1 for r, c in pairs if c is not None and r.fraction is None)
    hi = min(CLAIM_MAX, max([1.05] + [max(r.fraction, c) for r, c in drawn if math.isfinite(c)]))
    plot = Plot(title="Claimed against measured fraction", x_label="measured fraction of the copy floor",
                y_label="claimed fraction", x_range=(0, hi), y_range=(0, hi), css_class="claims",
                x_ticks=nice_ticks(0, hi, 8), y_ticks=nice_ticks(0, hi, 6), x_format="{:.1f}", y_format="{:.1f}",
                desc=f"{count(len(drawn), 'student')} stated a fraction and were timed; points above the diagonal "
                     "claim more than was measured; ringed points are flagged; the marker's shape is the verdict")
    plot.line([(0, 0), (hi, hi)], stroke="#767676", width=1, dash="4 3", css="diagonal", title="claim = measured")
    shown = [(r.fraction, min(c if math.isfinite(c) else hi, hi)) for r, c in drawn]
    for (r, c), xy, nudge in zip(drawn, shown, plot.apart(shown), strict=True):
        g = group(r)
        tip = f"{printable(r.id, 60)}: claimed {c:g}, measured {r.fraction:.3f} ({g})" + (
            f"; flags: {', '.join(r.flags)}" if r.flags else "")
        plot.point(*xy, fill=MARKS.get(g, "#444444"), title=tip, shape=MARKERS.get(g, "circle"), ring=bool(r.flags),
                   nudge=nudge, data={"id": printable(r.id, None)})
    return plot.render(), len(drawn), unmeasured


def dram_plot(rows: list[BatchResult]) -> tuple[str, int]:
    """DRAM bytes per element (x) against the fraction (y) of the rows whose counters were measured, with the
    byte model's bytes (the drawn rows' exercise's: Exercise.floats_per_element x 4, 8 for biasGeluFused; the most of
    them, were rows of two exercises drawn); returns the SVG ("" when none was measured) and the count drawn."""
    drawn = [(r, d) for r in rows if (d := dram_per_elem(r)) is not None and r.fraction is not None]
    if not drawn:
        return "", 0
    model = max(ex.floats_per_element for ex in class_exercises([r for r, _ in drawn])) * course.BYTES_PER_FLOAT
    x_hi = max([model * 1.5] + [d * 1.05 for _, d in drawn])
    y_hi = max([1.05] + [r.fraction * 1.05 for r, _ in drawn])
    plot = Plot(title="DRAM bytes per element (Nsight Compute)", x_label="DRAM bytes read + written per element",
                y_label="fraction of the copy floor", x_range=(0, x_hi), y_range=(0, y_hi), css_class="dram",
                desc=f"{count(len(drawn), 'kernel')} profiled; the model counts {model} bytes per element")
    plot.vline(model, f"model: {model} B")
    xy = [(d, r.fraction) for r, d in drawn]
    for (r, d), nudge in zip(drawn, plot.apart(xy), strict=True):
        g = group(r)
        plot.point(d, r.fraction, fill=MARKS.get(g, "#444444"), shape=MARKERS.get(g, "circle"), nudge=nudge,
                   title=f"{printable(r.id, 60)}: {d:.2f} B/elem, {r.fraction:.3f} of the floor ({g})",
                   data={"id": printable(r.id, None)})
    return plot.render(), len(drawn)
