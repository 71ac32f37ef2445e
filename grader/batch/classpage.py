"""The class page: OUT/index.html, one self-contained file (no network, no other file needed but the reports it
links to) that `grade batch` and `grade merge` write beside the gradebook.

It leads with triage (grader.batch.triage): how the class did (a line, and a tile per verdict group: gold, silver,
correct but slow, wrong output, errors of the students, errors of the grader, busy; each with its points), the rows to
look at, what the class got wrong (where fails and errors stopped, the hints received, the notes and flags on the
part-3 rows and sentences; each a filter of the table), and the points as scores.csv gives them (a distribution with
mean and median). Then the table of every student (the rows to look at first; each row's points and first hint;
empty columns left out), the plots of speed and claims (grader.batch.classplots), and, folded, how the class was
graded (card, driver, copy floor, clocks, versions, settings). What it shows is in docs/batch.md ("The class page").

Everything on it comes from the gradebook's rows, in an order of their own (by id), and nothing from the batch's
settings or clock: `grade merge` of a batch's results writes the same page as the batch. The table carries every fact
the plots show, so the page reads without them and without script (sorting and the filters are the only things the
script adds; it makes their controls itself, so none shows where it does not run: grader.batch.classpage_assets).

Safety: every string a student controls (ids, names, emails, reasons, compiler messages) is escaped for HTML
(grader.output.svgplot.escape, after grader.core.text.printable), and no data is ever put inside the script: the script
is a
constant, read from the table's DOM. A Content-Security-Policy meta allows nothing from the network
(`default-src 'none'`) and only this page's own script and style, by their sha256 (no 'unsafe-inline'), so an
injected `<script>` or `onerror=` would not run even if escaping failed.
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections import Counter
from urllib.parse import quote

from grader.batch import classplots as plots
from grader.batch import triage
from grader.batch.classpage_assets import SCRIPT, STYLE
from grader.batch.gradebook import BatchResult, Gradebook
from grader.core import exercise as course
from grader.core.text import printable
from grader.output.student_files import report_file
from grader.output.svgplot import escape


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


CSP = (f"default-src 'none'; script-src {_sha256(SCRIPT)}; style-src {_sha256(STYLE)}; img-src 'none'; "
       "base-uri 'none'; form-action 'none'")
"""The page's Content-Security-Policy: nothing from anywhere, but this page's own script and style (by hash)."""


def _t(text: object, limit: int | None = None) -> str:
    """Untrusted text as HTML: one printable line (grader.core.text.printable, cut to `limit`), then escaped."""
    return escape(printable(str(text), limit))


def _f(value: float | None, digits: int = 3) -> str:
    return "" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def breakable(text: str, limit: int = 60, run: int = 16) -> str:
    """An id as HTML that wraps only after `._-@/\\+` or every `run` characters (a `<wbr>`), never mid-word
    elsewhere: untrusted text, printable and cut to `limit`, each piece escaped."""
    out, since = [], 0
    for ch in printable(text, limit):
        out.append(escape(ch))
        since += 1
        if ch in "._-@/\\+ " or since >= run:
            out.append("<wbr>")
            since = 0
    return "".join(out)


def badge(key: str) -> str:
    """A verdict group's badge: its shape and its words, in its colours."""
    return (f'<span class="v g-{escape(key)}"><span class="glyph" aria-hidden="true">{triage.GLYPHS.get(key, "")}'
            f"</span> {escape(triage.group_label(key))}</span>")


def _links(book: Gradebook, row: BatchResult) -> tuple[str, str]:
    """The (text, JSON) report links of a row, quoted for an href."""
    report = book.reports.get(row.id, report_file(row.id))
    href = quote(report, safe="/~@")
    return href, (quote(report[: -len(".txt")] + ".json", safe="/~@") if report.endswith(".txt") else href)


# --- how the class was graded ----------------------------------------------------------------------------
def graded_on(book: Gradebook) -> list[tuple[str, str]]:
    """(what, value) pairs from the rows alone: the cards, drivers, copy floor, clocks, versions and settings the
    class was graded with, and when (each value as plain text, escaped later)."""
    rows = [r for r in book.rows if r.report is not None]
    gpus = Counter(f"{g.name}, compute capability {g.compute_capability}, {g.multiprocessors} SMs, "
                   f"L2 {g.l2_bytes / 2**20:.0f} MiB" for r in rows if (g := r.report.gpu))
    drivers = Counter(g.driver_cuda for r in rows if (g := r.report.gpu))
    facts = [("Card", _counted(gpus) or "none (no GPU: static checks only)"),
             ("Driver", _counted(Counter({f"CUDA {k}": v for k, v in drivers.items()})) or "-")]
    if book.floor_gbs_median is not None:
        versions = sorted({r.floor_version for r in rows if r.floor_version})
        facts.append(("Copy floor", f"median {book.floor_gbs_median:.0f} GB/s (min {book.floor_gbs_min:.0f}, max "
                      f"{book.floor_gbs_max:.0f}) over the timed submissions, each judged against the floor "
                      f"measured in its own process; fastest copy: {', '.join(versions)}"))
    else:
        facts.append(("Copy floor", "not measured (no submission reached timing)"))
    clocks = Counter(f"SM {c.sm_mhz} MHz, memory {c.mem_mhz} MHz" if c.known else "not known (no NVML)"
                     for r in rows if (c := r.report.clocks) is not None)
    facts.append(("Clocks while timing", _counted(clocks) or "-"))
    nvrtc = Counter(r.report.versions.get("nvrtc", "") for r in rows if r.report.versions.get("nvrtc"))
    facts.append(("Grader", _versions(book) + (f"; NVRTC {_counted(nvrtc)}" if nvrtc else "")))
    facts.append(("Thresholds", f"{course.THRESHOLDS_TEXT} of the copy floor; bytes counted: "
                  f"{plots.bytes_per_elem(rows)} per element"))
    facts.append(("Settings", _settings(rows)))
    finished = sorted(r.finished for r in book.rows if r.finished)
    if finished:
        facts.append(("Graded", finished[0] if finished[0] == finished[-1] else f"{finished[0]} to {finished[-1]}"))
    return facts


def _versions(book: Gradebook) -> str:
    return ", ".join(sorted({r.grader_version for r in book.rows if r.grader_version})) or book.grader_version


def _settings(rows: list[BatchResult]) -> str:
    """The settings the rows were graded with, as their reports give them: the compile target, the input seed (one
    for all, or each its own), the NVRTC sandbox, how many kernels were profiled."""
    arch = Counter(r.report.compile.arch for r in rows if r.report.compile)
    seeds = Counter(r.report.seed for r in rows if r.report.seed is not None and r.report.verification)
    sandbox = Counter(r.report.sandbox for r in rows if r.report.sandbox)
    profiled = sum(1 for r in rows if r.report.counters is not None and not r.report.counters.unavailable)
    out = [f"compiled for {_counted(arch)}" if arch else "",
           (f"input seed {next(iter(seeds))} for every submission" if len(seeds) == 1 and sum(seeds.values()) > 1
            else "a fresh input seed for each submission (its report gives it)") if seeds else "",
           f"NVRTC sandbox: {_counted(sandbox)}" if sandbox else "",
           f"counters (Nsight Compute) measured for {plots.count(profiled, 'submission')}" if profiled else ""]
    return "; ".join(s for s in out if s) or "-"


def _counted(c: Counter) -> str:
    """'A (3 rows); B (1 row)', most common first; a single value alone."""
    if len(c) == 1:
        return str(next(iter(c)))
    ranked = sorted(c.items(), key=lambda kv: (-kv[1], str(kv[0])))
    return "; ".join(f"{k} ({plots.count(n, 'row')})" for k, n in ranked)


# --- the top: how the class did, who needs me, what went wrong -------------------------------------------
def headline(rows: list[BatchResult], pts: triage.Points) -> str:
    """One sentence: how many pass, how many are slow, wrong, stopped on their own error or the grader's, not graded;
    the points' mean and median."""
    c = Counter(triage.group(r) for r in rows)
    parts = [f"{c['gold'] + c['silver']} of {plots.count(len(rows), 'submission')} pass ({c['gold']} gold, "
             f"{c['silver']} silver)", f"{c['slow']} are correct but too slow", f"{c['wrong']} give wrong output",
             f"{c['error']} stopped on an error in their submission"]
    if c["grader"]:
        parts.append(f"{c['grader']} on an error of the grader")
    if c["busy"] + c["no-gpu"]:
        parts.append(f"{c['busy'] + c['no-gpu']} could not be graded here (busy GPU, no GPU)")
    text = ", ".join(parts[:-1]) + " and " + parts[-1] + "."
    if pts.graded:
        text += (f" Points (scores.csv): mean {pts.mean:.1f} and median {pts.median:g} of 10 over "
                 f"{plots.count(pts.graded, 'graded submission')}.")
    return escape(text)


def tiles(rows: list[BatchResult]) -> str:
    """A tile per verdict group (the four of a graded kernel always, the others when present): count, share, shape,
    words and the points its rows get; each a filter of the table (with the script)."""
    c = Counter(triage.group(r) for r in rows)
    scores: dict[str, set] = {}
    for r in rows:
        scores.setdefault(triage.group(r), set()).add(triage.points(r))
    out = []
    for g in triage.GROUPS:
        if not c[g] and g not in ("gold", "silver", "slow", "wrong"):
            continue
        got = sorted(p for p in scores.get(g, set()) if p is not None)
        pts = ("not graded" if c[g] and not got else "" if not got else
               f"{got[0]:g} point{'' if got[0] == 1 else 's'} each" if len(got) == 1 else
               f"{got[0]:g} to {got[-1]:g} points")
        share = f"{100 * c[g] / len(rows):.0f}%" if rows else ""
        label = triage.group_label(g)
        out.append(f'<li class="tile"><span class="facet g-{g}" data-facet="group:{g}" data-label="{escape(label)}">'
                   f'<b>{c[g]}</b><span class="glyph" aria-hidden="true">{triage.GLYPHS[g]}</span> {escape(label)}'
                   f"<small>{share}{' &middot; ' if share and pts else ''}{escape(pts)}</small></span></li>")
    return f'<ul class="tiles" id="tiles">{"".join(out)}</ul>'


def look_panel(book: Gradebook, rows: list[BatchResult]) -> str:
    """The rows to look at (grader.batch.gradebook.to_look_at), each linked to its report, with its flags or (an
    error, busy) its reason."""
    look = triage.look_reasons(rows)
    picked = [r for r in triage.triage_order(rows) if r.id in look]
    items = "".join(f'<li><a href="{escape(_links(book, r)[0])}">{breakable(r.id, 60)}</a> {badge(triage.group(r))}'
                    f" {_t(look[r.id] if r.flags else r.reason, 80)}</li>" for r in picked)
    body = (f'<ol class="looklist">{items}</ol><p data-js hidden><span class="facet" data-facet="look" '
            'data-label="to look at">show them in the table</span></p>' if picked else
            "<p>Nothing: no error of the input or of the grader, no busy row, no flag.</p>")
    return (f'<section class="panel" id="look-panel" aria-labelledby="look-h"><h2 id="look-h">To look at: '
            f"{len(picked)}</h2><p>Errors of the input or of the grader, busy rows (run again), flags. A student's own "
            f"fail or error is not listed: their report tells them.</p>{body}</section>")


def _chips(items: list[tuple[str, str, int]]) -> str:
    if not items:
        return '<p class="none">none</p>'
    return '<ul class="chips">' + "".join(
        f'<li><span class="facet" data-facet="{escape(key)}" data-label="{_t(label)}">{_t(label)} <b>{n}</b></span>'
        "</li>" for key, label, n in items) + "</ul>"


def wrong_panel(rows: list[BatchResult]) -> str:
    """What the class got wrong (grader.batch.triage.what_went_wrong): stages, hint kinds, part-3 notes and flags."""
    w = triage.what_went_wrong(rows)
    right = sum(1 for r in rows if triage.output_right(r))
    return ('<section class="panel" id="wrong-panel" aria-labelledby="wrong-h"><h2 id="wrong-h">What went wrong</h2>'
            f"<h3>Where fails and errors stopped</h3>{_chips(w.stages)}"
            f"<h3>Hints the students received (students per kind)</h3>{_chips(w.hints)}"
            f"<h3>Part-3 rows and sentences ({plots.count(right, 'correct kernel')})</h3>{_chips(w.claims)}"
            "<p data-js hidden>Each count is a filter of the table below.</p></section>")


def points_panel(pts: triage.Points, rows: list[BatchResult]) -> str:
    """The points as scores.csv gives them: the distribution, mean and median, and how many it leaves empty."""
    empty = len(rows) - pts.graded
    said = (f"Mean {pts.mean:.1f}, median {pts.median:g} of 10 over {plots.count(pts.graded, 'graded submission')}"
            if pts.graded else "Nothing was graded")
    return (f'<section class="panel" id="points-panel" aria-labelledby="points-h"><h2 id="points-h">Points</h2>'
            f"{plots.points_plot(pts)}<p>{escape(said)}"
            + (f"; {plots.count(empty, 'row')} not graded (busy, no GPU, the grader's error): scores.csv leaves "
               f"{'it' if empty == 1 else 'them'} empty" if empty else "") + ".</p></section>")


# --- the table -------------------------------------------------------------------------------------------
def _cells(book: Gradebook, r: BatchResult) -> dict[str, str]:
    """The `<td>` of each column (COLUMNS) for row `r`: escaped text, numbers with a data-sort value."""
    href, json_href = _links(book, r)
    claim, dram, score = plots.claimed(r), plots.dram_per_elem(r), triage.points(r)
    kind, label, text = triage.first_hint(r)
    g = triage.group(r)
    rank = triage.TRIAGE_ORDER.index(g) if g in triage.TRIAGE_ORDER else 99
    stage = triage.STAGE_LABELS.get(r.stage or "", r.stage or "") if g in ("error", "grader") else ""
    return {
        "id (report)": f'<td class="id" title="{_t(r.id)}" data-sort="{_t(r.id)}"><a class="report" '
                       f'href="{escape(href)}">{breakable(r.id, 60)}</a> <a class="json" href="{escape(json_href)}" '
                       f'aria-label="JSON report of {_t(r.id, 60)}">json</a></td>',
        "submitted by": f'<td class="people">{_t("; ".join(s.label() for s in r.submitters), 200)}</td>',
        "verdict": f'<td class="verdict" data-sort="{rank}">{badge(g)}</td>',
        "points": f'<td class="num" data-sort="{"" if score is None else f"{score:g}"}">'
                  + ('<span class="none" title="not graded: scores.csv leaves it empty">-</span>' if score is None
                     else f"{score:g}") + "</td>",
        "fraction": f'<td class="num" data-sort="{_f(r.fraction, 6)}">{_f(r.fraction)}</td>',
        "claimed": f'<td class="num" data-sort="{_f(claim, 6)}">{"" if claim is None else _t(f"{claim:g}")}</td>',
        "first hint": f'<td class="hint" title="{_t(text, 600)}" data-kind="{escape(kind)}">{_t(label)}</td>',
        "flags": f"<td>{_t(', '.join(r.flags), 200)}</td>",
        "stopped at": f"<td>{_t(stage)}</td>",
        "DRAM B/elem": f'<td class="num" data-sort="{_f(dram, 6)}">{_f(dram, 2)}</td>',
        "reason": f'<td class="reason">{_t(r.reason, 240)}</td>',
    }


COLUMNS = [("id (report)", "text"), ("submitted by", "text"), ("verdict", "num"), ("points", "num"),
           ("fraction", "num"), ("claimed", "num"), ("first hint", "text"), ("flags", "text"), ("stopped at", "text"),
           ("DRAM B/elem", "num"), ("reason", "text")]
"""The table's columns (name, sort type); a column no row has a value for is left out (shown_columns)."""
ALWAYS = ("id (report)", "verdict", "points", "reason")


def shown_columns(rows: list[BatchResult]) -> list[tuple[str, str]]:
    """COLUMNS less those empty in every row (no submitters, no timing, no claim, no hint, no flag, no error, no
    counters)."""
    has = {
        "submitted by": any(r.submitters for r in rows),
        "fraction": any(r.fraction is not None for r in rows),
        "claimed": any(plots.claimed(r) is not None for r in rows),
        "first hint": any(triage.first_hint(r)[0] for r in rows),
        "flags": any(r.flags for r in rows),
        "stopped at": any(triage.group(r) in ("error", "grader") for r in rows),
        "DRAM B/elem": any(plots.dram_per_elem(r) is not None for r in rows),
    }
    return [(name, kind) for name, kind in COLUMNS if name in ALWAYS or has.get(name)]


def table_rows(book: Gradebook, rows: list[BatchResult], columns: list[tuple[str, str]]) -> str:
    """The `<tr>` of every student in the table's order (grader.batch.triage.triage_order), with its verdict
    (data-verdict) and the data-group and data-facets attributes the filters read; a row to look at has class
    "look"."""
    look = triage.look_reasons(rows)
    out = []
    for r in triage.triage_order(rows):
        cells = _cells(book, r)
        keys = " ".join(triage.facets(r, look))
        out.append(f'<tr data-verdict="{escape(r.verdict)}" data-group="{escape(triage.group(r))}" '
                   f'data-facets="{escape(keys)}"'
                   + (' class="look"' if r.id in look else "") + ">"
                   + "".join(cells[name] for name, _ in columns) + "</tr>")
    return "\n".join(out)


def students(book: Gradebook, rows: list[BatchResult]) -> str:
    """The students' section: the controls (hidden until the script shows them) and the table in its own scrolling
    box."""
    columns = shown_columns(rows)
    heads = "".join(f'<th scope="col" data-type="{t}">{escape(name)}</th>' for name, t in columns)
    present = {triage.group(r) for r in rows}
    options = "".join(f'<option value="{g}">{escape(triage.group_label(g))}</option>'
                      for g in triage.GROUPS if g in present)
    return f"""<h2 id="students-heading">Students ({len(rows)}): the ones to look at first, then by verdict</h2>
<div class="controls" id="controls" hidden>
<label>Filter <input type="search" id="filter" placeholder="id, name, hint, reason..."></label>
<label>Verdict <select id="group"><option value="">any</option>{options}</select></label>
<button type="button" id="clear" hidden>show all</button>
<span id="shown" aria-live="polite"></span>
</div>
<div class="table-box" tabindex="0" role="region" aria-labelledby="students-heading">
<table class="students" id="students">
<thead><tr>{heads}</tr></thead>
<tbody>
{table_rows(book, rows, columns)}
</tbody>
</table>
</div>"""


# --- the page --------------------------------------------------------------------------------------------
def plot_cards(rows: list[BatchResult]) -> str:
    """The cards of the speed and claims plots (grader.batch.classplots), each with a line saying how to read it."""
    graded = plots.graded_rows(rows)
    claims_svg, claims_n, unmeasured = plots.claims_plot(rows)
    dram_svg, dram_n = plots.dram_plot(rows)
    at = {p: plots.fast_p(rows, p) for p in (course.SILVER, course.GOLD)}
    fast_text = "; ".join(f"{100 * v:.0f}% at p = {p:.2f}" for p, v in at.items() if v is not None) or "nothing graded"
    dram = (f'<div class="card">{dram_svg}<p>{plots.count(dram_n, "kernel")} profiled with Nsight Compute (<code>grade '
            "batch --counters</code> or <code>--counters-when-slow</code>); the table's DRAM column holds each value."
            "</p></div>" if dram_svg else
            '<div class="card"><h3>DRAM bytes per element</h3><p>No counters were measured in this batch '
            "(<code>grade batch --counters</code> measures them with Nsight Compute).</p></div>")
    return f"""<div class="cards">
<div class="card">{plots.histogram_plot(rows)}<p>Bins of 0.05, coloured by the verdict their range earns (hatched:
correct but slow, under 0.75). The dashed lines are the grade thresholds.</p></div>
<div class="card">{plots.fast_p_plot(rows)}<p>KernelBench's fast_p: the share of the
{plots.count(len(graded), 'graded submission')} that is correct and reaches at least p of the copy floor
({escape(fast_text)}).</p></div>
<div class="card">{claims_svg}<p>{plots.count(claims_n, 'student')} stated a fraction (their sentence, else their
row's x copy) and were timed; {unmeasured} more stated one but were not timed. Above the diagonal: a claim higher than
measured. Ringed: flagged. Shapes: {escape(_shapes())}.</p></div>
{dram}
</div>"""


def _shapes() -> str:
    names = {"circle": "circle", "diamond": "diamond", "down": "down triangle", "square": "square"}
    return ", ".join(f"{triage.group_label(g)} {names[plots.MARKERS[g]]}" for g in ("gold", "silver", "slow", "busy"))


def _kernel(rows: list) -> str:
    """The kernel the class wrote: the one its reports name (else their exercise's: grader.batch.classplots.
    class_exercises)."""
    named = {r.report.kernel for r in rows if r.report and r.report.kernel}
    return escape(" / ".join(sorted(named or {ex.kernel_name for ex in plots.class_exercises(rows)})))


def class_page(book: Gradebook) -> str:
    """The class page of `book` as one HTML document (module docstring)."""
    rows = sorted(book.rows, key=lambda r: r.id)
    pts = triage.points_summary(rows)
    facts = "".join(f"<dt>{escape(k)}</dt><dd>{_t(v, 600)}</dd>" for k, v in graded_on(book))
    cards = sorted({f"{g.name} (CUDA {g.driver_cuda})" for r in rows if r.report and (g := r.report.gpu)})
    kernel = _kernel(rows)
    title = f"{kernel}: {plots.count(len(rows), 'submission')}"
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{escape(CSP)}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<style>{STYLE}</style>
</head>
<body>
<header>
<h1>{escape(title)}</h1>
<p class="sub">{_t(", ".join(cards) or "no GPU (static checks only)")}; grader {_t(_versions(book))};
{sum(r.fraction is not None for r in rows)} timed. <a href="#graded-on">How the class was graded</a></p>
</header>
<main>
<section id="triage" aria-labelledby="triage-h">
<h2 id="triage-h">How the class did</h2>
<p class="headline" id="headline">{headline(rows, pts)}</p>
{tiles(rows)}
</section>
<div class="panels">
{look_panel(book, rows)}
{wrong_panel(rows)}
{points_panel(pts, rows)}
</div>
{students(book, rows)}
<h2 id="plots-heading">Speed and claims</h2>
{plot_cards(rows)}
<details class="facts-box" id="graded-on"><summary>How the class was graded: card, driver, copy floor, clocks,
versions, settings</summary><dl class="facts">{facts}</dl></details>
</main>
<footer>Written by the {kernel} grader {_t(_versions(book))} from {plots.count(len(rows), 'row')};
<code>summary.md</code>, <code>gradebook.csv</code>, <code>gradebook.json</code> and <code>scores.csv</code> beside this
page hold the same rows. Each id links to the report its student gets (text, and JSON beside it). Everything students
wrote is shown as text.</footer>
<script>{SCRIPT}</script>
</body>
</html>
"""
