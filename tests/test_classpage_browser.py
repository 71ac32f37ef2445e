"""The class page in a real browser, as an instructor sees it: Debian's Chromium, driven by playwright, loads from disk
(file://, nothing from the network) the index.html that `grade batch` and `grade merge` wrote for the H200 class
(tests/h200_class.py), and the page of a class with hostile ids (tests/class_fixture.py).

At 1400 and 390 px wide, with and without JavaScript, and printed: the top screen answers how the class did, who needs
the instructor and what went wrong most; the page never scrolls sideways (the table scrolls in its own box); no
control shows without the script; every text meets WCAG AA contrast in the colours Chromium computes; verdicts carry
a shape and words; printed, the controls go, the headers and badges stay readable, the folded facts open. No console
error and no dialog; sorting and filtering work; a report link opens that student's report.

Screenshots and the PDF go to the folder CLASSPAGE_SCREENS names (e.g. results/screens, git-ignored), else to the
test's own temporary folder: look at them. Skips, saying why, where playwright (`pip install ".[browser]"`) or
Chromium (`apt-get install chromium`; or CHROMIUM=PATH) is missing, so a plain developer machine passes; with
GRADER_REQUIRE_BROWSER=1 (.ci/run, which installs both) a missing one fails instead, so CI really runs it.
`playwright install` is never needed: the system's Chromium is used.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from class_fixture import HOSTILE, write_results
from grader.batch import command as batch
from grader.batch import gradebook as gb
from grader.batch import triage
from grader.output.student_files import report_file
from h200_class import batch_and_merge

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SCREENS = {1400: 900, 390: 844}
"""The widths an instructor opens the page at (a laptop, a phone), with the height of their first screen."""


def chromium_path() -> str | None:
    """CHROMIUM, else /usr/bin/chromium, else chromium on PATH; None where there is none."""
    for candidate in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    """{"batch": folder, "merge": folder, "hostile": folder} and the H200 class's rows."""
    tmp = tmp_path_factory.mktemp("classpage")
    folders = dict(zip(("batch", "merge"), batch_and_merge(tmp), strict=True))
    write_results(tmp / "hostile-results" / "results.jsonl")
    assert batch.main(["merge", str(tmp / "hostile"), str(tmp / "hostile-results"), "--quiet"]) == 0
    folders["hostile"] = tmp / "hostile"
    rows, _ = gb.load_rows(folders["batch"] / "results.jsonl")
    return folders, rows


@pytest.fixture(scope="module")
def screens(tmp_path_factory) -> Path:
    folder = Path(os.environ.get("CLASSPAGE_SCREENS") or tmp_path_factory.mktemp("screens"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def missing(reason: str) -> None:
    """Skip with `reason`, or fail where GRADER_REQUIRE_BROWSER is set (CI must run this test)."""
    if os.environ.get("GRADER_REQUIRE_BROWSER"):
        pytest.fail(f"GRADER_REQUIRE_BROWSER is set, but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright import sync_api
    except ImportError as err:  # not installed, or broken
        missing(f"playwright cannot be imported ({err}): pip install '.[browser]' for the class page's browser test")
    exe = chromium_path()
    if exe is None:
        missing("no Chromium here (apt-get install chromium, or CHROMIUM=PATH); the class page's browser test needs it")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture()
def open_page(browser, sites):
    """open_page(site, width, js=True): the page open in a fresh context of that width (SCREENS' height), with its
    console errors, page errors, dialogs and requests kept in .problems and .requests."""
    contexts = []

    def opener(site: str = "merge", width: int = 1400, js: bool = True):
        ctx = browser.new_context(viewport={"width": width, "height": SCREENS[width]}, java_script_enabled=js)
        contexts.append(ctx)
        tab = ctx.new_page()
        tab.problems, tab.requests = [], []
        tab.on("console", lambda m: m.type in ("error", "warning")
               and tab.problems.append(f"console {m.type}: {m.text}"))
        tab.on("pageerror", lambda e: tab.problems.append(f"page error: {e}"))
        tab.on("dialog", lambda d: (tab.problems.append(f"dialog: {d.message}"), d.dismiss()))
        tab.on("request", lambda r: tab.requests.append(r.url))
        tab.goto((sites[0][site] / "index.html").as_uri())
        return tab

    yield opener
    for ctx in contexts:
        ctx.close()


def column(page, name: str) -> list[str]:
    """The text of column `name` in the rows shown, in order."""
    return page.evaluate("""(name) => {
        const heads = Array.from(document.querySelectorAll('#students thead th')).map(h => h.textContent.trim());
        const i = heads.indexOf(name);
        return Array.from(document.querySelectorAll('#students tbody tr')).filter(r => !r.hidden)
            .map(r => r.cells[i].textContent.trim());
    }""", name)


def sort_by(page, name: str) -> None:
    """Click the sort button of column `name` (its accessible name gains the arrow once sorted)."""
    page.locator("#students thead th button").filter(has_text=re.compile(f"^{re.escape(name)}")).click()


def top(page, selector: str) -> float:
    """The y of `selector`'s top edge in the page, px (its first match)."""
    return page.evaluate("(s) => document.querySelector(s).getBoundingClientRect().top + window.scrollY", selector)


CONTRAST = """() => {
  // WCAG 2.1 contrast of every visible text node's colour on the background it is painted on (the first ancestor
  // with an opaque background colour), as Chromium computes both; shapes beside their words (.glyph) apart.
  const rgb = (s) => s.match(/[\\d.]+/g).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map(v => v / 255).map(v => v <= 0.04045 ? v / 12.92 :
      Math.pow((v + 0.055) / 1.055, 2.4)).reduce((a, v, i) => a + v * [0.2126, 0.7152, 0.0722][i], 0);
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const background = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length < 4 || c[3] === 1) { return c.slice(0, 3); }
    }
    return [255, 255, 255];
  };
  const out = [];
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const el = n.parentElement;
    if (!n.textContent.trim() || el.closest("svg, script") || !el.getClientRects().length) { continue; }
    if (getComputedStyle(el).visibility !== "visible") { continue; }
    out.push([ratio(rgb(getComputedStyle(el).color).slice(0, 3), background(el)), el.closest(".glyph") ? 1 : 0,
              el.tagName + "." + el.className + ": " + n.textContent.trim().slice(0, 40)]);
  }
  return out;
}"""


# --- what an instructor sees ------------------------------------------------------------------------------
@pytest.mark.parametrize("site", ["batch", "merge"])
@pytest.mark.parametrize("width", sorted(SCREENS, reverse=True))
def test_the_top_screen_says_how_the_class_did_who_needs_me_and_what_went_wrong(open_page, sites, screens, site,
                                                                                 width):
    page = open_page(site, width)
    _, rows = sites
    assert page.problems == [] and all(u.startswith("file://") for u in page.requests), page.requests
    page.screenshot(path=str(screens / f"{site}-{width}-top.png"))
    height = SCREENS[width]
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # never sideways
    box = page.evaluate("(() => { const b = document.querySelector('.table-box'); "
                        "return [b.scrollWidth, b.clientWidth, b.getBoundingClientRect().right]; })()")
    assert box[2] <= width and (width > 400 or box[0] > box[1])  # on a phone the table scrolls in its own box
    headline = page.locator("#headline").inner_text()
    assert headline.startswith("27 of 64 submissions pass (20 gold, 7 silver), 17 are correct but too slow, 8 give "
                               "wrong output")
    order = [top(page, s) for s in ("#headline", "#tiles", "#look-panel", "#wrong-panel", "#students", ".cards",
                                    "#graded-on")]
    assert order == sorted(order) if width > 400 else order[:2] == sorted(order[:2])
    assert top(page, "#tiles .tile:last-child") < height  # how the class did: the whole verdict split
    if width > 400:  # who needs me, what went wrong most: beside it, on the first screen
        assert top(page, "#look-panel li:first-child") < height and top(page, "#wrong-panel .chips") < height
        assert page.locator("#wrong-panel").inner_text().index("wrong output 8") < 200
    assert page.locator("#graded-on dl").is_hidden()  # the machine facts are folded
    assert page.locator("#students tbody tr").count() == len(rows)


@pytest.mark.parametrize("width", sorted(SCREENS, reverse=True))
def test_without_javascript_no_control_shows_and_the_page_is_complete(open_page, sites, screens, width):
    """The controls are `hidden` and [hidden] beats `.controls{display:flex}`: this test fails if they show."""
    page = open_page("merge", width, js=False)
    _, rows = sites
    page.screenshot(path=str(screens / f"nojs-{width}-top.png"))
    assert page.locator("#controls").bounding_box() is None and not page.locator("#controls").is_visible()
    assert page.locator("button:visible, input:visible, select:visible").count() == 0
    assert page.locator("span.facet").count() > 15 and page.locator("span.facet").first.is_visible()  # as text
    assert page.locator("#students tbody tr:visible").count() == len(rows)
    assert page.locator("svg.plot").count() == 5 and page.evaluate("document.documentElement.scrollWidth") <= width
    assert page.evaluate("document.scripts.length") == 1  # there, but not run: nothing it would add shows


def test_every_text_meets_wcag_aa_in_the_colours_chromium_computes(open_page):
    page = open_page("merge", 1400)
    page.click("#graded-on summary")
    measured = page.evaluate(CONTRAST)
    page.locator('#tiles button.facet[data-facet="group:wrong"]').click()  # a pressed button's colours too
    measured += page.evaluate(CONTRAST)
    assert len(measured) > 800
    low = [(round(r, 2), what) for r, glyph, what in measured if r < (3.0 if glyph else 4.5)]
    assert low == []
    assert min(r for r, glyph, _ in measured if not glyph) >= 4.5


def test_verdicts_carry_a_shape_and_words_not_colour_alone(open_page):
    page = open_page("merge", 1400)
    badges = page.evaluate("Array.from(document.querySelectorAll('#students .v')).map(b => b.textContent.trim())")
    words = {f"{triage.GLYPHS[g]} {triage.group_label(g)}" for g in triage.GROUPS}
    assert badges and set(badges) <= words and len(set(badges)) == 7
    shapes = page.evaluate("""Array.from(document.querySelectorAll('svg.claims .point')).map(g =>
        g.querySelector('circle, polygon, rect').tagName + (g.querySelector('polygon') ?
        g.querySelector('polygon').getAttribute('points').split(' ').length : ''))""")
    assert len(set(shapes)) >= 3  # gold circles, silver diamonds, slow triangles
    assert page.locator("svg.histogram rect.bar[fill^='url(']").count() >= 3  # under 0.75: hatched


def test_no_threshold_label_is_crossed_by_a_line(open_page):
    page = open_page("merge", 1400)
    crossings = page.evaluate("""Array.from(document.querySelectorAll('svg.plot')).flatMap(svg => {
        const lines = Array.from(svg.querySelectorAll('.threshold line')).map(l => l.getBoundingClientRect());
        return Array.from(svg.querySelectorAll('.threshold text')).flatMap(t => {
            const b = t.getBoundingClientRect();
            return lines.filter(l => l.left >= b.left && l.left <= b.right && l.top < b.bottom - 1 && l.bottom > b.top)
                .map(() => svg.getAttribute('class') + ': ' + t.textContent);
        });
    })""")
    assert page.locator("svg.fastp .threshold").count() == 2 and crossings == []


def test_printed_the_controls_go_and_headers_badges_and_facts_stay_readable(open_page, screens):
    page = open_page("merge", 1400)
    pdf = screens / "classpage.pdf"
    page.pdf(path=str(pdf), format="A4", landscape=True)
    assert pdf.read_bytes().startswith(b"%PDF") and pdf.read_bytes().count(b"/Type /Page\n") in range(2, 12)
    page.emulate_media(media="print")
    page.screenshot(path=str(screens / "print-1400.png"), full_page=True)
    assert not page.locator("#controls").is_visible() and page.locator("button:visible").count() > 0  # as text
    heads = page.evaluate("""Array.from(document.querySelectorAll('#students th')).map(th => [th.innerText.trim(),
        getComputedStyle(th).position, getComputedStyle(th.querySelector('button')).display])""")
    assert all(text and position == "static" and display == "contents" for text, position, display in heads), heads
    badge = page.locator("#students .v").first.evaluate("b => getComputedStyle(b).printColorAdjust")
    assert badge == "exact"
    assert page.locator("#graded-on dl").is_visible()  # the folded facts print
    assert page.evaluate("getComputedStyle(document.querySelector('.table-box')).overflow") == "visible"


# --- what the script adds ------------------------------------------------------------------------------------
def test_the_page_loads_offline_and_draws_plots_and_table(open_page, sites, screens):
    page = open_page("merge", 1400)
    _, rows = sites
    assert page.problems == []
    plots = page.locator("svg.plot")
    assert plots.count() == 5
    for i in range(5):
        box = plots.nth(i).bounding_box()
        assert box and box["width"] > 300 and box["height"] > 150
    assert page.locator("svg.histogram rect.bar").count() > 5
    assert page.locator("svg.fastp polyline.curve").count() == 1
    assert page.locator("svg.claims .point").count() >= 10 and page.locator("svg.dram .point").count() > 3
    assert page.locator("#controls").is_visible()  # the script ran (under the page's own CSP)
    assert page.locator("#shown").inner_text() == f"{len(rows)} of {len(rows)} students shown"
    page.screenshot(path=str(screens / "full-1400.png"), full_page=True)


def test_hostile_ids_are_shown_as_text_and_run_nothing(open_page):
    page = open_page("hostile", 1400)
    ids = column(page, "id (report)")
    for hostile in HOSTILE[:2]:
        assert any(i.startswith(hostile) for i in ids), hostile
    assert page.evaluate("document.querySelectorAll('img, iframe, object, embed').length") == 0
    assert page.evaluate("document.scripts.length") == 1
    page.locator("svg.claims .point").first.hover()  # a tooltip holding an id is text too
    assert page.problems == []


def test_sorting_orders_numbers_with_empty_cells_last_and_text_both_ways(open_page):
    page = open_page("merge", 1400)
    for name in ("fraction", "points"):
        sort_by(page, name)
        shown = column(page, name)
        numbers = [float(v) for v in shown if v not in ("", "-")]
        assert numbers == sorted(numbers) and set(shown[len(numbers):]) <= {"", "-"}
    assert page.locator("th[aria-sort=ascending]").inner_text().startswith("points")
    sort_by(page, "points")
    assert [float(v) for v in column(page, "points") if v != "-"] == sorted(numbers, reverse=True)
    sort_by(page, "id (report)")
    ids = [i.removesuffix(" json") for i in column(page, "id (report)")]
    collated = page.evaluate("(ids) => ids.slice().sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase()))",
                             ids)  # the browser's own collation (ICU's): punctuation is not ordered as Python does
    assert ids == collated and len(ids) == len(set(ids))
    sort_by(page, "verdict")
    order = [triage.TRIAGE_ORDER.index(next(g for g in triage.GROUPS if v.endswith(triage.group_label(g))))
             for v in column(page, "verdict")]
    assert order == sorted(order)


def test_filters_by_text_verdict_facet_and_rows_to_look_at(open_page, sites, screens):
    page = open_page("merge", 1400)
    _, rows = sites
    page.fill("#filter", "example.edu")
    assert len(column(page, "id (report)")) == 2 and page.locator("#clear").is_visible()
    page.click("#clear")
    assert page.locator("#shown").inner_text() == f"{len(rows)} of {len(rows)} students shown"
    page.select_option("#group", "wrong")
    assert set(column(page, "verdict")) == {"\u2717 wrong output"} and len(column(page, "verdict")) == 8
    page.select_option("#group", "")
    chip = page.locator('#wrong-panel button.facet[data-facet="hint:tanh"]')
    assert chip.inner_text() == "tanh GELU 4"
    chip.click()
    assert chip.get_attribute("aria-pressed") == "true" and len(column(page, "first hint")) == 4
    assert page.locator("#shown").inner_text() == f"4 of {len(rows)} students shown (tanh GELU)"
    page.screenshot(path=str(screens / "facet-tanh-1400.png"))
    chip.click()  # again: all
    assert len(column(page, "id (report)")) == len(rows)
    page.locator('button.facet[data-facet="look"]').click()
    assert len(column(page, "id (report)")) == len(gb.to_look_at(rows))
    page.locator('#tiles button.facet[data-facet="group:slow"]').click()
    assert len(column(page, "id (report)")) == 17 and set(column(page, "points")) == {"5"}


def test_a_report_link_opens_the_student_s_report(open_page, sites):
    page = open_page("merge", 1400)
    out = sites[0]["merge"]
    student = "zoë.çelik"  # non-ASCII: the text file must read as UTF-8
    page.locator("a.report", has_text=student).click()
    page.wait_for_load_state()
    assert page.url == (out / report_file(student)).as_uri().replace("+", "%2B")
    assert page.evaluate("document.body.innerText") == (out / report_file(student)).read_text(encoding="utf-8")
    assert page.problems == []
