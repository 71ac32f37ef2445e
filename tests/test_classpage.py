"""The class page (grader.batch.classpage, triage, classplots, classpage_assets) and its SVG writer
(grader.output.svgplot) without a browser: it leads with triage (the verdict split, points as scores.csv gives them,
the rows to look at, what the class got wrong, each row's first hint), hides empty columns, is the same page from
`grade batch` and `grade merge`, meets WCAG AA contrast in the colours of its own style sheet, escapes everything a
student wrote, and its Content-Security-Policy admits its own script and style and nothing else.
tests/test_classpage_browser.py loads it in Chromium."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import re
import statistics
from collections import Counter
from html.parser import HTMLParser

import pytest

from class_fixture import HOSTILE, realistic_rows
from grader.batch import classpage as cp
from grader.batch import classplots as plots
from grader.batch import gradebook as gb
from grader.batch import triage
from grader.batch.classpage_assets import MARKS, PALETTE, STYLE
from grader.output.report import first_step
from grader.output.student_files import report_file
from grader.output.svgplot import Plot, escape, nice_ticks
from h200_class import batch_and_merge, h200_class


@pytest.fixture(scope="module")
def book() -> gb.Gradebook:
    return gb.build_gradebook(realistic_rows(), "0.1.0", {"arch": None, "seed": 7, "sandbox": "landlock ABI 4"})


@pytest.fixture(scope="module")
def page(book) -> str:
    return cp.class_page(book)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """(batch folder, merge folder, rows) of the H200 class (tests/h200_class.py)."""
    batch, merge = batch_and_merge(tmp_path_factory.mktemp("h200"))
    return batch, merge, h200_class()


class Parsed(HTMLParser):
    """Tags, attributes, scripts and text of a page, as a browser's tokenizer splits them."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self._in_script = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        (self.scripts if self._in_script else self.text).append(data)


def heads(page: str) -> list[str]:
    return re.findall(r'<th scope="col" data-type="\w+">([^<]+)</th>', page)


def table_rows(page: str) -> list[str]:
    return re.findall(r"<tr data-verdict=.*?</tr>", page)


# --- safety ----------------------------------------------------------------------------------------------
def test_hostile_ids_are_text_and_nothing_else(page):
    parsed = Parsed(page)
    assert [t for t, _ in parsed.tags].count("script") == 1 and parsed.scripts == [cp.SCRIPT]
    assert not any(t == "img" for t, _ in parsed.tags)
    assert not any(k.startswith("on") for _, attrs in parsed.tags for k in attrs)  # no event handler anywhere
    text = "".join(parsed.text)
    for hostile in HOSTILE[:4]:
        assert hostile in text  # shown, as text
    assert "<img src=x" not in page and "</script><script>" not in page


def test_the_policy_admits_the_page_s_own_script_and_style_only(page):
    meta = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
    policy = meta.group(1).replace("&#x27;", "'")
    assert page.index(meta.group(0)) < page.index("<style>") < page.index("<script>")
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["default-src"] == "'none'" and "unsafe" not in policy

    def digest(text):
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    script = page.split("<script>")[1].split("</script>")[0]
    style = page.split("<style>")[1].split("</style>")[0]
    assert directives["script-src"] == digest(script) and directives["style-src"] == digest(style)
    assert ' style="' not in page  # an inline style attribute would be blocked: colours are SVG attributes
    assert not re.search(r'(?:src|href)="(?:https?:)?//', page)  # nothing from the network
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) == {"http://www.w3.org/2000/svg"}  # a namespace


def test_without_the_script_there_is_no_control(page):
    """The script makes every control (the sort buttons, the facet buttons) or shows it (the filters): the page as
    written holds no button, input or select outside the hidden controls, which [hidden] hides whatever their
    display rule (tests/test_classpage_browser.py checks what Chromium shows)."""
    controls = page.split('<div class="controls" id="controls" hidden>')[1].split("</div>")[0]
    outside = page.replace(controls, "")
    assert not re.search(r"<(button|input|select)\b", outside)
    assert "[hidden]{display:none!important}" in STYLE.replace(" ", "")
    assert re.search(r"\.controls\{[^}]*display:flex", STYLE)  # the rule [hidden] must beat


# --- triage ----------------------------------------------------------------------------------------------
def scores(folder) -> dict[str, str]:
    """id -> Score of scores.csv."""
    rows = csv.DictReader(io.StringIO((folder / "scores.csv").read_text(encoding="utf-8-sig")))
    return {r["id"]: r["Score"] for r in rows}


def test_the_verdicts_split_fail_and_error_by_what_the_instructor_does(site):
    batch, _, rows = site
    page = (batch / "index.html").read_text()
    c = Counter(triage.group(r) for r in rows)
    assert c == {"gold": 20, "silver": 7, "slow": 17, "wrong": 8, "error": 10, "grader": 1, "busy": 1}
    assert c["slow"] + c["wrong"] == sum(r.verdict == "fail" for r in rows)
    for g, n in c.items():
        tile = re.search(rf'<span class="facet g-{g}" data-facet="group:{g}"[^>]*><b>(\d+)</b>.*?</li>', page)
        assert tile and int(tile.group(1)) == n and triage.group_label(g) in tile.group(0), g
    assert "1 point each" in page and "10 points each" in page and "5 points each" in page
    assert re.search(r'data-facet="group:wrong".*?1 point each', page) and "not graded</small>" in page
    headline = re.search(r'<p class="headline" id="headline">(.*?)</p>', page).group(1)
    assert headline.startswith("27 of 64 submissions pass (20 gold, 7 silver), 17 are correct but too slow, 8 give "
                               "wrong output, 10 stopped on an error in their submission")


def test_points_are_scores_csv_s_in_the_table_and_their_distribution(site):
    batch, _, rows = site
    page = (batch / "index.html").read_text()
    got = scores(batch)
    table = {re.search(r'title="([^"]+)"', tr).group(1): re.findall(r'<td class="num" data-sort="([^"]*)">', tr)[0]
             for tr in table_rows(page)}
    assert table == got  # every id, the same points, empty where scores.csv is empty
    numbers = [float(v) for v in got.values() if v]
    pts = triage.points_summary(rows)
    assert pts.graded == len(numbers) == 62 and pts.mean == pytest.approx(statistics.fmean(numbers))
    assert pts.median == statistics.median(numbers)
    assert f"mean {pts.mean:.1f} and median {pts.median:g} of 10 over 62 graded submissions" in page
    desc = re.search(r'<svg class="plot points".*?<desc>(.*?)</desc>', page).group(1)
    assert ", ".join(f"{p:g} points: {n}" for p, n in sorted(Counter(numbers).items())) in desc


def test_the_rows_to_look_at_come_first_in_the_panel_and_the_table(site):
    batch, _, rows = site
    page = (batch / "index.html").read_text()
    look = gb.to_look_at(rows)
    assert len(look) == 5
    shown = [re.search(r'title="([^"]+)"', tr).group(1) for tr in table_rows(page)]
    assert set(shown[:len(look)]) == {r.id for r, _ in look}
    assert all('class="look"' in tr for tr in table_rows(page)[:len(look)])
    assert sum('class="look"' in tr for tr in table_rows(page)) == len(look)
    panel = page.split('id="look-panel"')[1].split("</section>")[0]
    assert f"To look at: {len(look)}" in panel and panel.count("<li>") == len(look)
    assert all(f'<a href="{report_file(r.id)}">' in panel for r, _ in look)
    order = [triage.TRIAGE_ORDER.index(triage.group(r)) for r in triage.triage_order(rows)[len(look):]]
    assert order == sorted(order)


def test_what_went_wrong_counts_students_and_each_count_filters_as_many_rows(site):
    batch, _, rows = site
    page = (batch / "index.html").read_text()
    panel = page.split('id="wrong-panel"')[1].split("</section>")[0]
    chips = re.findall(r'data-facet="([^"]+)" data-label="[^"]*">[^<]*<b>(\d+)</b>', panel)
    facets = [tr.split('data-facets="')[1].split('"')[0].split() for tr in table_rows(page)]
    for key, n in chips:
        assert sum(key in f for f in facets) == int(n), key
    kinds = Counter(k for r in rows for k in {h.kind for h in r.report.hints})
    assert {k[len("hint:"):]: int(n) for k, n in chips if k.startswith("hint:")} == kinds
    assert kinds["width"] >= 10 and kinds["tanh"] == 4
    stages = dict(chips)
    assert stages["stage:verify"] == "8" and stages["stage:compile"] == "4" and "stage:grade" not in stages
    right = [r for r in rows if triage.output_right(r)]
    assert int(stages["note:row-missing"]) == sum("row-missing" in r.notes for r in right) < sum(
        "row-missing" in r.notes for r in rows)  # notes only where the output is right, as the reports show them


def test_each_row_shows_the_hint_its_report_shows_first(site):
    batch, _, rows = site
    page = (batch / "index.html").read_text()
    by_id = {r.id: r for r in rows}
    seen = 0
    for tr in table_rows(page):
        row = by_id[re.search(r'title="([^"]+)"', tr).group(1)]
        kind = re.search(r'<td class="hint" title="[^"]*" data-kind="([^"]*)">', tr).group(1)
        hint = first_step(row.report)[1]
        assert kind == (hint.kind if hint else "")
        seen += bool(kind)
    assert seen >= 25


def test_columns_no_row_fills_are_left_out():
    rows = [r for r in h200_class() if not r.submitters and r.report.counters is None]
    page = cp.class_page(gb.build_gradebook(rows, "0.1.0", {}))
    assert "submitted by" not in heads(page) and "DRAM B/elem" not in heads(page)
    full = cp.class_page(gb.build_gradebook(h200_class(), "0.1.0", {}))
    assert {"submitted by", "DRAM B/elem", "first hint", "flags", "stopped at"} <= set(heads(full))
    assert all(tr.count("<td") == len(heads(page)) for tr in table_rows(page))


def test_the_merge_writes_the_batch_s_page_settings_line_included(site):
    batch, merge, _ = site
    page = (batch / "index.html").read_text()
    assert (merge / "index.html").read_text() == page
    settings = re.search(r"<dt>Settings</dt><dd>(.*?)</dd>", page).group(1)
    assert "compiled for sm_90" in settings and "NVRTC sandbox: landlock ABI 7" in settings
    assert "a fresh input seed for each submission" in settings and "counters (Nsight Compute) measured" in settings
    assert '<details class="facts-box" id="graded-on">' in page  # the machine facts, folded below the table
    assert page.index('id="students"') < page.index('id="graded-on"')


def test_ids_break_only_at_punctuation_or_after_16_characters():
    assert cp.breakable("gs_submission_1001") == "gs_<wbr>submission_<wbr>1001"
    assert cp.breakable("x" * 40) == "x" * 16 + "<wbr>" + "x" * 16 + "<wbr>" + "x" * 8
    assert cp.breakable("<a>") == "&lt;a&gt;"
    assert "overflow-wrap:anywhere" not in re.search(r"td\.id\{[^}]*\}", STYLE).group(0)


# --- colours ---------------------------------------------------------------------------------------------
def luminance(color: str) -> float:
    """WCAG 2.1's relative luminance of an sRGB colour #rrggbb."""
    c = [int(color[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4 for v in c)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG 2.1's contrast ratio of two colours (1 to 21)."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def css_rules(style: str) -> list[tuple[str, dict[str, str]]]:
    """(selector, {property: value}) of every rule of a style sheet, @media blocks opened."""
    return [(sel.strip(), dict(d.split(":", 1) for d in body.replace("\n", "").split(";") if ":" in d))
            for sel, body in re.findall(r"([^{}]+)\{([^{}]*)\}", style)]


def test_every_text_colour_of_the_style_sheet_meets_wcag_aa():
    """Each rule that sets a text colour: against its own background, or (none) against every background a text may
    lie on (the page, the panels, the table's header); 4.5:1 for text, 3:1 for a badge's shape (a graphic beside the
    words that say the same)."""
    rules = css_rules(STYLE)
    backgrounds = {d["background"] for _, d in rules if d.get("background", "").startswith("#")}
    assert {"#f6f6f4", "#ffffff", "#e9e9e9"} <= backgrounds
    checked = 0
    for selector, d in rules:
        fg = d.get("color", "")
        if not fg.startswith("#"):
            continue
        under = [d["background"]] if d.get("background", "").startswith("#") else ["#f6f6f4", "#ffffff", "#e9e9e9"]
        need = 3.0 if selector.endswith(".glyph") else 4.5
        for bg in under:
            assert contrast(fg, bg) >= need, (selector, fg, bg, round(contrast(fg, bg), 2))
            checked += 1
    assert checked >= 30
    for g, (mark, text, tint) in PALETTE.items():  # each badge: its words on its tint, its shape and border
        assert contrast(text, tint) >= 4.5 and contrast(mark, tint) >= 3 and contrast(mark, "#ffffff") >= 3, g


def test_every_plot_colour_meets_wcag_on_white(site):
    """Text in the plots 4.5:1, marks (bars, points, lines, hatches) 3:1 (WCAG 2.1's 1.4.11), on the cards' white."""
    page = (site[0] / "index.html").read_text()
    svgs = "".join(re.findall(r"<svg class=\"plot.*?</svg>", page, re.S))
    text = set(re.findall(r'<text[^>]* fill="(#[0-9a-f]{6})"', svgs))
    marks = set(re.findall(r'<(?:rect|polygon|circle)[^>]* fill="(#[0-9a-f]{6})"', svgs)) - {"#ffffff"}
    lines = set(re.findall(r'<(?:polyline|line)[^>]* stroke="(#[0-9a-f]{6})"', svgs)) - {"#e4e4e4"}  # the grid
    assert text and marks >= {MARKS["gold"], MARKS["silver"]} and lines
    assert [c for c in text if contrast(c, "#ffffff") < 4.5] == []
    assert [c for c in marks | lines if contrast(c, "#ffffff") < 3] == []


# --- the plots -------------------------------------------------------------------------------------------
def test_the_plots_say_what_the_rows_say(book, page):
    assert page.count('<svg class="plot') == 5  # points, histogram, fast_p, claims, DRAM
    graded = plots.graded_rows(book.rows)
    assert {r.verdict for r in graded} <= {"gold", "silver", "fail", "error"}
    assert not any(r.stage in ("grader", "setup") for r in graded)
    correct = plots.correct_fractions(graded)
    assert plots.fast_p(book.rows, 0.0) == len(correct) / len(graded)
    assert plots.fast_p(book.rows, 0.9) == sum(f >= 0.9 for f in correct) / len(graded)
    assert f"at p = 0.90: {100 * plots.fast_p(book.rows, 0.9):.0f}%" in page
    assert 'class="threshold"' in page and "silver 0.75" in page and "gold 0.90" in page
    assert page.count('class="point flagged"') == sum(1 for r in book.rows if r.flags and plots.claimed(r) is not None
                                                       and r.fraction is not None)
    assert "model: 8 B" in page and "NVIDIA H200" in page and "CUDA 13.0" in page and "SM 1980 MHz" in page


def test_a_class_without_a_gpu_still_gets_a_page():
    from grader.output.report import GradeReport

    rows = [gb.make_result(id="a", path="a.cu", key="a", sha256=None, grader_version="t",
                           report=GradeReport(file="a.cu", verdict="no-gpu", reason="no GPU"))]
    page = cp.class_page(gb.build_gradebook(rows, "t", {}))
    assert "none (no GPU: static checks only)" in page and "No counters were measured" in page
    assert "1 submission:" not in page and "biasGeluFused: 1 submission<" in page


def threshold_labels(svg: str) -> list[tuple[float, float, float, str, str]]:
    """(line x, line top y, label y, anchor, label) of each reference line of a plot."""
    return [(float(x), float(y1), float(ty), anchor, label) for x, y1, ty, anchor, label in re.findall(
        r'<g class="threshold"><line x1="([\d.]+)" y1="([\d.]+)"[^>]*/><text x="[\d.]+" y="([\d.]+)"[^>]*'
        r'text-anchor="(\w+)"[^>]*>([^<]+)</text>', svg)]


@pytest.mark.parametrize("make", [plots.fast_p_plot, plots.histogram_plot])
def test_no_threshold_label_crosses_another_line(make):
    """The fast_p plot's gold label sits left of its line, over the silver line: it must be in the row above where
    the silver line starts (the label used to run through it)."""
    svg = make(h200_class())
    lines = threshold_labels(svg)
    assert len(lines) == 2
    for x, _, ty, anchor, label in lines:
        width = len(label) * 11 * 0.62
        span = (x - width, x) if anchor == "end" else (x, x + width)
        for ox, oy1, *_ in lines:
            if ox != x and span[0] <= ox <= span[1]:
                assert ty < oy1 - 2, (label, ox)


def test_points_that_would_hide_each_other_are_nudged_apart_and_one_student_is_singular():
    rows = [r for r in h200_class() if plots.claimed(r) is not None and r.fraction is not None]
    twin = rows[0].model_copy(update={"id": "twin"})
    svg, n, _ = plots.claims_plot([rows[0], twin])
    centres = re.findall(r'<g class="point[^"]*"[^>]*><(?:circle|polygon|rect)[^>]*?(?:cx="([\d.]+)" cy="([\d.]+)"|'
                         r'points="([\d.]+),([\d.]+))', svg)
    assert n == 2 and len(centres) == 2 and centres[0] != centres[1]
    assert "1 student stated" in plots.claims_plot(rows[:1])[0] and "1 students" not in plots.claims_plot(rows[:1])[0]
    plot = Plot(title="t", x_label="x", y_label="y", x_range=(0, 1), y_range=(0, 1))
    nudges = plot.apart([(0.5, 0.5)] * 7 + [(0.1, 0.1)])
    spots = {(round(plot.px(0.5) + dx, 1), round(plot.py(0.5) + dy, 1)) for dx, dy in nudges[:7]}
    assert len(spots) == 7 and nudges[0] == (0, 0) and nudges[-1] == (0, 0)


def test_nice_ticks_and_escaping():
    assert nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(0, 0.95, 10) == [round(0.1 * i, 1) for i in range(10)] and nice_ticks(0, 1.05, 10)[-1] == 1.0
    assert nice_ticks(0, 17) == [0, 5, 10, 15] and nice_ticks(3, 3) == [3]
    assert escape('<a b="c">&\'') == "&lt;a b=&quot;c&quot;&gt;&amp;&#x27;"
    plot = Plot(title="<t>", x_label="x", y_label="y", x_range=(0, 1), y_range=(0, 1))
    plot.point(0.5, 0.5, fill="#000", title='"><script>alert(1)</script>', data={"id": "</svg>"})
    svg = plot.render()
    assert "<script>" not in svg and "</svg>" not in svg[:-6] and svg.endswith("</svg>")
    assert plot.px(0) == plot.left and plot.py(0) == plot.height - plot.bottom and plot.px(5) == plot.px(1)
    assert plot.px(float("nan")) == plot.left and plot.py(float("inf")) == plot.py(1)  # never "nan" in an attribute
