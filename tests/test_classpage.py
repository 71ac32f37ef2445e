"""The class page (grader.batch.classpage) and its SVG writer (grader.output.svgplot) without a browser: what the page
holds, that everything a student wrote is escaped, that its Content-Security-Policy admits its own script and style
and nothing else, and that `grade batch` and `grade merge` write it. tests/test_classpage_browser.py loads it
in Chromium."""

from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser

import pytest

from class_fixture import HOSTILE, realistic_rows
from grader.batch import classpage as cp
from grader.batch import gradebook as gb
from grader.output.student_files import report_file
from grader.output.svgplot import Plot, escape, nice_ticks


@pytest.fixture(scope="module")
def book() -> gb.Gradebook:
    return gb.build_gradebook(realistic_rows(), "0.1.0", {"arch": None, "seed": 7, "sandbox": "landlock ABI 4"})


@pytest.fixture(scope="module")
def page(book) -> str:
    return cp.class_page(book)


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


def test_the_table_has_a_row_per_student_linking_to_its_report(book, page):
    parsed = Parsed(page)
    rows = [a for t, a in parsed.tags if t == "tr" and "data-verdict" in a]
    assert len(rows) == len(book.rows)
    links = [a["href"] for t, a in parsed.tags if t == "a" and a.get("class") == "report"]
    assert links == [report_file(r.id).replace("+", "%2B") for r in book.rows]
    looks = {r.id for r, _ in gb.to_look_at(book.rows)}
    assert sum(a["data-look"] == "1" for a in rows) == len(looks) > 0


def test_the_plots_say_what_the_rows_say(book, page):
    assert page.count('<svg class="plot') == 5
    counts = book.counts
    assert f"gold: {counts['gold']}, silver: {counts['silver']}, fail: {counts['fail']}" in page
    graded = cp.graded_rows(book.rows)
    assert {r.verdict for r in graded} <= {"gold", "silver", "fail", "error"}
    assert not any(r.stage in ("grader", "setup") for r in graded)
    correct = cp.correct_fractions(graded)
    assert cp.fast_p(book.rows, 0.0) == len(correct) / len(graded)
    assert cp.fast_p(book.rows, 0.9) == sum(f >= 0.9 for f in correct) / len(graded)
    assert f"at p = 0.90: {100 * cp.fast_p(book.rows, 0.9):.0f}%" in page
    assert 'class="threshold"' in page and "silver 0.75" in page and "gold 0.90" in page
    assert page.count('class="point flagged"') == sum(1 for r in book.rows if r.flags and cp.claimed(r) is not None
                                                       and r.fraction is not None)
    assert "model: 8 B" in page and "NVIDIA H200" in page and "CUDA 13.0" in page and "SM 1980 MHz" in page


def test_a_class_without_a_gpu_still_gets_a_page():
    from grader.output.report import GradeReport

    rows = [gb.make_result(id="a", path="a.cu", key="a", sha256=None, grader_version="t",
                           report=GradeReport(file="a.cu", verdict="no-gpu", reason="no GPU"))]
    page = cp.class_page(gb.build_gradebook(rows, "t", {}))
    assert "none (no GPU: static checks only)" in page and "No counters were measured" in page


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
