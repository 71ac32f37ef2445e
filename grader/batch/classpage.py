"""The class page: OUT/index.html, one self-contained file (no network, no other file needed but the reports it
links to) that `grade batch` and `grade merge` write beside the gradebook.

Everything on it comes from the gradebook (grader.batch.gradebook.Gradebook); what it shows is in docs/batch.md ("The
class page"). The table of every student carries every fact the plots show, so the page reads without them (and
without script: sorting and filtering are the only things the script adds).

Safety: every string a student controls (ids, names, emails, reasons, compiler messages) is escaped for HTML
(grader.output.svgplot.escape, after grader.text.printable), and no data is ever put inside the script: the script is a
constant, read from the table's DOM. A Content-Security-Policy meta allows nothing from the network
(`default-src 'none'`) and only this page's own script and style, by their sha256 (no 'unsafe-inline'), so an
injected `<script>` or `onerror=` would not run even if escaping failed. Plots: grader.output.svgplot (why there).
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections import Counter
from pathlib import Path
from urllib.parse import quote

from grader import exercise
from grader.output.student_files import report_file, write_atomic
from grader.batch.gradebook import BIN_WIDTH, BINS, VERDICTS, BatchResult, Gradebook, fraction_bins, to_look_at
from grader.output.gradescope import is_graded
from grader.output.svgplot import Plot, escape, nice_ticks
from grader.text import printable

COLORS = {"gold": "#c99a06", "silver": "#7f8c99", "fail": "#c0392b", "error": "#7b3294", "no-gpu": "#b0b0b0",
          "busy": "#e08214"}
"""A colour per verdict (the plots and the table's verdict cells); every plot also says it in words."""
CLAIM_MAX = 1.5
"""The claimed-against-measured plot shows fractions up to this; a claim above it is drawn on the top edge
(the table gives its value)."""

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d1d1d;background:#f6f6f4}
header,main{max-width:1200px;margin:0 auto;padding:0 16px}
header{padding-top:12px}
h1{font-size:1.5rem;margin:.4rem 0}
h2{font-size:1.1rem;margin:1.2rem 0 .4rem}
.sub{color:#555;margin:0 0 .6rem}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0;font-size:.92rem}
.facts dt{font-weight:600}
.facts dd{margin:0}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:14px}
.card{background:#fff;border:1px solid #ddd;border-radius:6px;padding:8px 10px}
.card p{font-size:.85rem;color:#444;margin:.3rem 0}
svg.plot{width:100%;height:auto;display:block}
.counts{border-collapse:collapse;font-size:.9rem;margin:.3rem 0}
.counts td,.counts th{border:1px solid #ddd;padding:2px 10px;text-align:right}
.controls{display:flex;flex-wrap:wrap;gap:12px;align-items:center;margin:.4rem 0;font-size:.9rem}
.controls input[type=search]{min-width:260px;padding:3px 6px}
table.students{border-collapse:collapse;width:100%;background:#fff;font-size:.85rem}
table.students th,table.students td{border:1px solid #ddd;padding:3px 6px;vertical-align:top;text-align:left}
table.students th{background:#eee;position:sticky;top:0}
table.students th button{all:unset;cursor:pointer;font-weight:600}
table.students th button:focus{outline:2px solid #3b6ea5}
table.students th[aria-sort=ascending] button::after{content:" \\25B2"}
table.students th[aria-sort=descending] button::after{content:" \\25BC"}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.reason{min-width:280px;max-width:420px;overflow-wrap:anywhere}
td.people{max-width:240px;overflow-wrap:anywhere}
td.id{overflow-wrap:anywhere;max-width:220px}
.v{display:inline-block;padding:0 6px;border-radius:3px;color:#fff;font-weight:600}
.v-gold{background:#a87f00}.v-silver{background:#66727e}.v-fail{background:#b03020}
.v-error{background:#6b2a85}.v-busy{background:#b8650c}.v-no-gpu{background:#777}
footer{max-width:1200px;margin:20px auto;padding:0 16px;color:#666;font-size:.8rem}
"""

SCRIPT = """
(function () {
  "use strict";
  var table = document.getElementById("students");
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var text = document.getElementById("filter");
  var verdict = document.getElementById("verdict");
  var look = document.getElementById("look");
  var shown = document.getElementById("shown");
  function apply() {
    var q = text.value.trim().toLowerCase();
    var n = 0;
    rows.forEach(function (r) {
      var ok = (!q || r.textContent.toLowerCase().indexOf(q) >= 0) &&
        (!verdict.value || r.getAttribute("data-verdict") === verdict.value) &&
        (!look.checked || r.getAttribute("data-look") === "1");
      r.hidden = !ok;
      if (ok) { n += 1; }
    });
    shown.textContent = n + " of " + rows.length + " students shown";
  }
  function key(r, col, numeric) {
    var c = r.cells[col];
    var s = c.hasAttribute("data-sort") ? c.getAttribute("data-sort") : c.textContent;
    if (!numeric) { return s.toLowerCase(); }
    return s === "" ? NaN : parseFloat(s);
  }
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
    var button = th.querySelector("button");
    if (!button) { return; }
    button.addEventListener("click", function () {
      var up = th.getAttribute("aria-sort") !== "ascending";
      var numeric = th.getAttribute("data-type") === "num";
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", up ? "ascending" : "descending");
      rows.slice().sort(function (a, b) {
        var x = key(a, col, numeric), y = key(b, col, numeric);
        if (numeric) {
          if (isNaN(x) || isNaN(y)) { return isNaN(x) === isNaN(y) ? 0 : (isNaN(x) ? 1 : -1); }
          return up ? x - y : y - x;
        }
        return up ? x.localeCompare(y) : y.localeCompare(x);
      }).forEach(function (r) { body.appendChild(r); });
    });
  });
  text.addEventListener("input", apply);
  verdict.addEventListener("change", apply);
  look.addEventListener("change", apply);
  document.getElementById("controls").hidden = false;
  apply();
})();
"""


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


CSP = (f"default-src 'none'; script-src {_sha256(SCRIPT)}; style-src {_sha256(STYLE)}; img-src 'none'; "
       "base-uri 'none'; form-action 'none'")
"""The page's Content-Security-Policy: nothing from anywhere, but this page's own script and style (by hash)."""


def _t(text: object, limit: int | None = None) -> str:
    """Untrusted text as HTML: one printable line (grader.text.printable, cut to `limit`), then escaped."""
    return escape(printable(str(text), limit))


def _f(value: float | None, digits: int = 3) -> str:
    return "" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def claimed(row: BatchResult) -> float | None:
    """The fraction of the copy floor the student claims: their sentence's, else their table row's x copy; None
    when they state none."""
    contract = row.report.contract if row.report else None
    if contract is None:
        return None
    if contract.claim is not None and contract.claim.fraction is not None:
        return contract.claim.fraction
    return contract.row.x_copy if contract.row is not None else None


def dram_per_elem(row: BatchResult) -> float | None:
    """DRAM bytes read plus written per element by the student's kernel, where counters were measured."""
    c = row.report.counters if row.report else None
    if c is None or c.unavailable:
        return None
    mine = next((k for k in c.kernels if k.label == exercise.KERNEL_NAME), None)
    return mine.dram_per_elem if mine else None


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


# --- the plots -------------------------------------------------------------------------------------------
def verdict_plot(counts: dict[str, int]) -> str:
    """Bars of the count of each verdict."""
    top = max(counts.values()) or 1
    ticks = [t for t in range(0, top + 1, max(1, math.ceil(top / 5)))]
    plot = Plot(title="Submissions per verdict", x_label="verdict", y_label="submissions",
                x_range=(0, len(VERDICTS)), y_range=(0, top * 1.1), height=240, css_class="verdicts",
                x_ticks=[(i + 0.5, v) for i, v in enumerate(VERDICTS)], y_ticks=ticks,
                desc=", ".join(f"{v}: {counts.get(v, 0)}" for v in VERDICTS))
    for i, v in enumerate(VERDICTS):
        n = counts.get(v, 0)
        plot.bar(i + 0.15, i + 0.85, n, fill=COLORS[v], title=f"{v}: {n}")
        plot.label(i + 0.5, n + top * 0.03, str(n), anchor="middle")
    return plot.render()


def histogram_plot(rows: list[BatchResult]) -> str:
    """Bars of the fractions in the gradebook's equal bins (grader.batch.gradebook.fraction_bins; the last bin is 1.0
    and above), coloured by the verdict its range earns, with the silver and gold lines."""
    fractions = [r.fraction for r in rows if r.fraction is not None]
    counts = fraction_bins(fractions)
    top = max(counts) or 1
    ticks = [t for t in range(0, top + 1, max(1, math.ceil(top / 5)))]
    x_max = (BINS + 1) * BIN_WIDTH
    plot = Plot(title="Fraction of the copy floor", x_label="fraction of the copy floor (bins of 0.05; last: 1.0 "
                "and above)", y_label="submissions", x_range=(0, x_max), y_range=(0, top * 1.12),
                x_ticks=[i / 10 for i in range(0, 11)], x_format="{:.1f}", y_ticks=ticks, css_class="histogram",
                desc=f"{len(fractions)} timed submissions; " + ", ".join(
                    f"{_bin_label(i)}: {n}" for i, n in enumerate(counts) if n))
    for i, n in enumerate(counts):
        if not n:
            continue
        lo = i * BIN_WIDTH
        color = COLORS["gold"] if lo >= exercise.GOLD - 1e-9 else COLORS["silver"] if lo >= exercise.SILVER - 1e-9 \
            else COLORS["fail"]
        plot.bar(lo, lo + BIN_WIDTH, n, fill=color, title=f"{_bin_label(i)}: {n} submissions")
    plot.vline(exercise.SILVER, f"silver {exercise.SILVER:.2f}")
    plot.vline(exercise.GOLD, f"gold {exercise.GOLD:.2f}")
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
    at = {p: fast_p(rows, p) for p in (exercise.SILVER, exercise.GOLD)}
    plot = Plot(title="Correct and at least p of the floor (fast_p)", x_label="p: fraction of the copy floor",
                y_label="share of graded submissions", x_range=(0, x_max), y_range=(0, 1.05),
                x_ticks=nice_ticks(0, x_max, 10), x_format="{:.1f}",
                y_ticks=[(t / 5, f"{t * 20}%") for t in range(6)], css_class="fastp",
                desc=f"over {len(graded)} graded submissions: {len(fractions)} correct; " + "; ".join(
                    f"at p = {p:.2f}: {100 * (v or 0):.0f}%" for p, v in at.items()))
    plot.line(points, stroke="#1f5f99", width=2.5, step=True, css="curve",
              title=f"{len(fractions)} of {len(graded)} graded submissions are correct")
    for p, v in at.items():
        name = "silver" if p == exercise.SILVER else "gold"
        plot.vline(p, f"{name} {p:.2f}: {100 * (v or 0):.0f}%", anchor="end", row=0 if name == "silver" else 1)
    return plot.render()


def claims_plot(rows: list[BatchResult]) -> tuple[str, int, int]:
    """Each student's claimed fraction (y) against the measured one (x), the line y = x, flagged students as
    crossed rings; returns the SVG, the count drawn and the count of claims without a measured fraction."""
    pairs = [(r, claimed(r)) for r in rows]
    drawn = [(r, c) for r, c in pairs if c is not None and r.fraction is not None]
    unmeasured = sum(1 for r, c in pairs if c is not None and r.fraction is None)
    hi = min(CLAIM_MAX, max([1.05] + [max(r.fraction, c) for r, c in drawn if math.isfinite(c)]))
    plot = Plot(title="Claimed against measured fraction", x_label="measured fraction of the copy floor",
                y_label="claimed fraction", x_range=(0, hi), y_range=(0, hi), css_class="claims",
                x_ticks=nice_ticks(0, hi, 8), y_ticks=nice_ticks(0, hi, 6), x_format="{:.1f}", y_format="{:.1f}",
                desc=f"{len(drawn)} students stated a fraction and were timed; points above the diagonal claim "
                     "more than was measured; crossed rings are flagged")
    plot.line([(0, 0), (hi, hi)], stroke="#888888", width=1, dash="4 3", css="diagonal", title="claim = measured")
    for r, c in drawn:
        shown = c if math.isfinite(c) else hi
        tip = f"{printable(r.id, 60)}: claimed {c:g}, measured {r.fraction:.3f}" + (
            f"; flags: {', '.join(r.flags)}" if r.flags else "")
        plot.point(r.fraction, min(shown, hi), fill=COLORS.get(r.verdict, "#444444"), title=tip,
                   shape="ring" if r.flags else "circle", data={"id": printable(r.id, None)})
    return plot.render(), len(drawn), unmeasured


def dram_plot(rows: list[BatchResult]) -> tuple[str, int]:
    """DRAM bytes per element (x) against the fraction (y) of the rows whose counters were measured, with the
    byte model's 8 bytes; returns the SVG ("" when none was measured) and the count drawn."""
    drawn = [(r, d) for r in rows if (d := dram_per_elem(r)) is not None and r.fraction is not None]
    if not drawn:
        return "", 0
    model = exercise.FLOATS_PER_ELEMENT * exercise.BYTES_PER_FLOAT
    x_hi = max([model * 1.5] + [d * 1.05 for _, d in drawn])
    y_hi = max([1.05] + [r.fraction * 1.05 for r, _ in drawn])
    plot = Plot(title="DRAM bytes per element (Nsight Compute)", x_label="DRAM bytes read + written per element",
                y_label="fraction of the copy floor", x_range=(0, x_hi), y_range=(0, y_hi), css_class="dram",
                desc=f"{len(drawn)} students' kernels profiled; the model counts {model} bytes per element")
    plot.vline(model, f"model: {model} B")
    for r, d in drawn:
        plot.point(d, r.fraction, fill=COLORS.get(r.verdict, "#444444"),
                   title=f"{printable(r.id, 60)}: {d:.2f} B/elem, {r.fraction:.3f} of the floor",
                   data={"id": printable(r.id, None)})
    return plot.render(), len(drawn)


# --- the page --------------------------------------------------------------------------------------------
def graded_on(book: Gradebook) -> list[tuple[str, str]]:
    """(what, value) pairs: the cards, drivers, copy floor, clocks, versions and settings the class was graded
    with (each value as plain text, escaped later)."""
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
    facts.append(("Grader", f"{book.grader_version}" + (f"; NVRTC {_counted(nvrtc)}" if nvrtc else "")))
    facts.append(("Thresholds", f"{exercise.THRESHOLDS_TEXT} of the copy floor; bytes counted: "
                  f"{exercise.FLOATS_PER_ELEMENT * exercise.BYTES_PER_FLOAT} per element"))
    settings = book.settings
    picked = [f"{k} {settings[k]}" for k in ("arch", "seed", "sandbox") if settings.get(k) not in (None, "")]
    if picked:
        facts.append(("Settings", "; ".join(picked)))
    facts.append(("Written", book.created))
    return facts


def _counted(c: Counter) -> str:
    """'A (3 rows); B (1 row)', most common first; a single value alone."""
    if len(c) == 1:
        return next(iter(c))
    return "; ".join(f"{k} ({n} rows)" for k, n in c.most_common())


def _people(row: BatchResult) -> str:
    return "; ".join(s.label() for s in row.submitters)


VERDICT_RANK = {v: i for i, v in enumerate(VERDICTS)}


def table_rows(book: Gradebook) -> str:
    """The `<tr>` of every student (gradebook order): escaped text, numbers with a data-sort value, and the
    data-verdict and data-look attributes the filters read."""
    look = {r.id for r, _ in to_look_at(book.rows)}
    out = []
    for r in book.rows:
        report = book.reports.get(r.id, report_file(r.id))
        href = quote(report, safe="/~@")
        json_href = quote(report[: -len(".txt")] + ".json", safe="/~@") if report.endswith(".txt") else href
        claim, dram = claimed(r), dram_per_elem(r)
        stage = r.stage if r.stage and r.stage != "grade" else ""
        cells = [
            f'<td class="id" title="{_t(r.id)}" data-sort="{_t(r.id)}">'
            f'<a class="report" href="{escape(href)}">{_t(r.id, 60)}</a> '
            f'<a class="json" href="{escape(json_href)}" aria-label="JSON report of {_t(r.id, 60)}">json</a></td>',
            f'<td class="people">{_t(_people(r), 200)}</td>',
            f'<td data-sort="{VERDICT_RANK.get(r.verdict, 99)}"><span class="v v-{escape(r.verdict)}">'
            f"{escape(r.verdict)}</span></td>",
            f'<td class="num" data-sort="{_f(r.fraction, 6)}">{_f(r.fraction)}</td>',
            f'<td class="num" data-sort="{_f(claim, 6)}">{"" if claim is None else _t(f"{claim:g}")}</td>',
            f"<td>{_t(', '.join(r.flags), 200)}</td>",
            f"<td>{_t(', '.join(r.notes), 120)}</td>",
            f"<td>{_t(stage)}</td>",
            f'<td class="num" data-sort="{_f(dram, 6)}">{_f(dram, 2)}</td>',
            f'<td class="reason">{_t(r.reason, 240)}</td>',
        ]
        out.append(f'<tr data-verdict="{escape(r.verdict)}" data-look="{1 if r.id in look else 0}">'
                   + "".join(cells) + "</tr>")
    return "\n".join(out)


COLUMNS = [("id (report)", "text"), ("submitted by", "text"), ("verdict", "num"), ("fraction", "num"),
           ("claimed", "num"), ("flags", "text"), ("notes", "text"), ("stopped at", "text"),
           ("DRAM B/elem", "num"), ("reason", "text")]


def class_page(book: Gradebook) -> str:
    """The class page of `book` as one HTML document (module docstring)."""
    rows = book.rows
    counts = book.counts
    graded = graded_rows(rows)
    timed = [r for r in rows if r.fraction is not None]
    claims_svg, claims_n, unmeasured = claims_plot(rows)
    dram_svg, dram_n = dram_plot(rows)
    at = {p: fast_p(rows, p) for p in (exercise.SILVER, exercise.GOLD)}
    facts = "".join(f"<dt>{escape(k)}</dt><dd>{_t(v, 400)}</dd>" for k, v in graded_on(book))
    count_cells = "".join(f"<th scope=\"col\">{escape(v)}</th>" for v in VERDICTS)
    count_values = "".join(f"<td>{counts.get(v, 0)}</td>" for v in VERDICTS)
    heads = "".join(f'<th scope="col" data-type="{t}"><button type="button">{escape(name)}</button></th>'
                    for name, t in COLUMNS)
    options = "".join(f'<option value="{escape(v)}">{escape(v)}</option>' for v in VERDICTS)
    fast_text = "; ".join(f"{100 * v:.0f}% at p = {p:.2f}" for p, v in at.items() if v is not None) or "nothing graded"
    dram_card = (f'<div class="card">{dram_svg}<p>{dram_n} kernels profiled with <code>grade batch --counters</code>'
                 "; the table's DRAM column holds each value.</p></div>" if dram_svg else
                 '<div class="card"><h2>DRAM bytes per element</h2><p>No counters were measured in this batch '
                 "(<code>grade batch --counters</code> measures them with Nsight Compute).</p></div>")
    title = f"biasGeluFused: {len(rows)} submissions"
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
<p class="sub">{len(graded)} graded, {len(timed)} timed; the class page of <code>grade batch</code>
(<code>summary.md</code>, <code>gradebook.csv</code> and <code>gradebook.json</code> beside it hold the same rows).</p>
<dl class="facts" id="graded-on">{facts}</dl>
</header>
<main>
<h2>Verdicts</h2>
<table class="counts" id="counts"><tr>{count_cells}</tr><tr>{count_values}</tr></table>
<div class="cards">
<div class="card">{verdict_plot(counts)}</div>
<div class="card">{histogram_plot(rows)}<p>Equal bins of {BIN_WIDTH:.2f}; bars are coloured by the verdict their
range earns (a correct kernel below 0.75 fails). The dashed lines are the grade thresholds.</p></div>
<div class="card">{fast_p_plot(rows)}<p>KernelBench's fast_p: the share of the {len(graded)} graded submissions
that is correct and reaches at least p of the copy floor ({escape(fast_text)}).</p></div>
<div class="card">{claims_svg}<p>{claims_n} students stated a fraction (their sentence, else their row's x copy)
and were timed; {unmeasured} more stated one but were not timed. Above the diagonal: a claim higher than
measured. Crossed rings have flags.</p></div>
{dram_card}
</div>
<h2 id="students-heading">Students</h2>
<div class="controls" id="controls" hidden>
<label>Filter <input type="search" id="filter" placeholder="id, name, flag, reason..."></label>
<label>Verdict <select id="verdict"><option value="">any</option>{options}</select></label>
<label><input type="checkbox" id="look"> only rows to look at (errors of the input or grader, busy, flags)</label>
<span id="shown" aria-live="polite"></span>
</div>
<table class="students" id="students" aria-labelledby="students-heading">
<thead><tr>{heads}</tr></thead>
<tbody>
{table_rows(book)}
</tbody>
</table>
</main>
<footer>Written by the biasGeluFused grader {escape(book.grader_version)} on {escape(book.created)}. Each id links
to the report its student gets (text, and JSON beside it). Everything students wrote is shown as text.</footer>
<script>{SCRIPT}</script>
</body>
</html>
"""


def write_page(book: Gradebook, path: Path) -> Path:
    """Write class_page(book) to `path` (a temporary name, then renamed); return `path`. Raises OSError when it
    cannot be written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, class_page(book))
    return path
