"""A small SVG writer for the class page's plots (grader.batch.classpage): linear axes with round ticks, bars, points,
lines, step curves, reference lines and labels, as one `<svg>` string to inline in HTML.

Why not a plotting library: the page must be one self-contained file that works offline, under a strict
Content-Security-Policy, and be tested in a real browser. matplotlib would add a large dependency (and a font
cache) to a grader whose every other output is text, for five simple charts; Plotly's offline bundle and
Vega-Lite's runtime inline 1-4 MB of JavaScript and draw only when that script runs (an `unsafe-eval`-free CSP
and a page that shows its plots with scripts off both get harder). Plain SVG is drawn by every browser with no
script at all, is a few KB, and each mark carries its own `<title>` (the browser's tooltip, and what a screen
reader reads).

Everything written is escaped here (escape: `&`, `<`, `>` and quotes), so a student's id in a title cannot end
the element. Colours are presentation attributes (`fill="#..."`), never `style=` attributes, which a strict CSP
would block. Units: data coordinates in, pixels out (a fixed viewBox; the page scales it). Imports nothing
from the grader.
"""

from __future__ import annotations

import math
from html import escape as _escape

FONT = 12
"""Font size of tick labels, in SVG pixels (labels and titles scale from it)."""
HALO = 'stroke="#ffffff" stroke-width="3" stroke-linejoin="round" paint-order="stroke"'
"""A label's white outline, painted under its letters: lines and marks behind it stop short of the text."""
SHAPES = ("circle", "diamond", "down", "up", "square", "ring")
"""The markers Plot.point draws."""


def escape(text: object) -> str:
    """`text` (str() of it) safe inside an SVG or HTML element or a quoted attribute."""
    return _escape(str(text), quote=True)


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About `count` round tick values (steps of 1, 2 or 5 times a power of ten) covering [lo, hi]; [lo] when
    the range is empty. Values are rounded to the step's decimals, so 0.30000000000000004 is 0.3."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(1, count)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    digits = max(0, -math.floor(math.log10(step)) + 1)
    first = math.ceil(lo / step - 1e-9)
    ticks = []
    k = first
    while k * step <= hi + 1e-9 * step:
        ticks.append(round(k * step, digits))
        k += 1
    return ticks


class Plot:
    """One x-y chart of `width` x `height` SVG pixels: axes over `x_range` and `y_range` (data units), ticks
    (`x_ticks`/`y_ticks`: values, or (value, label) pairs; default nice_ticks), axis labels, a title and a
    description (the `<desc>` a screen reader reads: say what the chart shows in words); `top` is the margin
    above the plot area (the title, and the labels of reference lines: 30 holds one row of them beside the
    title, 44 two rows under it). Marks are added with
    the methods below and drawn in the order added; render() gives the `<svg>` element. `css_class` names the
    chart for the page's style and tests."""

    def __init__(self, *, title: str, x_label: str, y_label: str, x_range: tuple[float, float],
                 y_range: tuple[float, float], desc: str = "", width: int = 560, height: int = 300,
                 x_ticks: list | None = None, y_ticks: list | None = None, x_format: str = "{:g}",
                 y_format: str = "{:g}", css_class: str = "", top: int = 30) -> None:
        self.title, self.desc, self.x_label, self.y_label = title, desc, x_label, y_label
        self.width, self.height, self.css_class = width, height, css_class
        self.x0, self.x1 = x_range
        self.y0, self.y1 = y_range
        if self.x1 <= self.x0:
            self.x1 = self.x0 + 1
        if self.y1 <= self.y0:
            self.y1 = self.y0 + 1
        self.left, self.right, self.top, self.bottom = 56, 16, top, 44
        self.x_ticks = _ticks(x_ticks if x_ticks is not None else nice_ticks(self.x0, self.x1), x_format)
        self.y_ticks = _ticks(y_ticks if y_ticks is not None else nice_ticks(self.y0, self.y1), y_format)
        self.marks: list[str] = []
        self.defs: list[str] = []

    def px(self, x: float) -> float:
        """The SVG x coordinate of data value x (clamped to the plot area; NaN at its left edge)."""
        x = self.x0 if math.isnan(x) else min(max(x, self.x0), self.x1)
        return round(self.left + (x - self.x0) / (self.x1 - self.x0) * (self.width - self.left - self.right), 2)

    def py(self, y: float) -> float:
        """The SVG y coordinate of data value y (clamped to the plot area, NaN at its bottom; up is larger)."""
        y = self.y0 if math.isnan(y) else min(max(y, self.y0), self.y1)
        return round(self.height - self.bottom - (y - self.y0) / (self.y1 - self.y0)
                     * (self.height - self.top - self.bottom), 2)

    def bar(self, x0: float, x1: float, y: float, *, fill: str, title: str, css: str = "bar") -> None:
        """A bar over [x0, x1] from the x axis's bottom (y0) up to y, with a tooltip `title`."""
        left, right, top = self.px(x0), self.px(x1), self.py(y)
        self.marks.append(f'<rect class="{escape(css)}" x="{left + 1}" y="{top}" width="{max(0.5, right - left - 2)}" '
                          f'height="{max(0.0, self.py(self.y0) - top)}" fill="{escape(fill)}">'
                          f"<title>{escape(title)}</title></rect>")

    def point(self, x: float, y: float, *, fill: str, title: str, shape: str = "circle", r: float = 4.5,
              css: str = "point", data: dict[str, str] | None = None, ring: bool = False,
              nudge: tuple[float, float] = (0.0, 0.0)) -> None:
        """A marker at (x, y): shape "circle", "diamond", "down" or "up" (triangles), "square", or "ring" (a
        hollow circle with a cross: a flagged value, readable without colour); ring=True adds a dashed ring
        around it (flagged, class "flagged"); `nudge` moves it by (dx, dy) pixels (points that would hide
        each other: nudged); `data` adds data-* attributes (names as given, values escaped)."""
        cx, cy = round(self.px(x) + nudge[0], 2), round(self.py(y) + nudge[1], 2)
        attrs = "".join(f' data-{escape(k)}="{escape(v)}"' for k, v in (data or {}).items())
        tip = f"<title>{escape(title)}</title>"
        flagged = " flagged" if ring or shape == "ring" else ""
        halo = (f'<circle cx="{cx}" cy="{cy}" r="{r + 4}" fill="none" stroke="#222222" stroke-width="1.3" '
                f'stroke-dasharray="2.5 2"/>' if ring else "")
        if shape == "ring":
            d = r * 0.7
            mark = (f'<circle cx="{cx}" cy="{cy}" r="{r + 1}" fill="#ffffff" stroke="{escape(fill)}" stroke-width="2"/>'
                    f'<path d="M{cx - d},{cy - d}L{cx + d},{cy + d}M{cx - d},{cy + d}L{cx + d},{cy - d}" '
                    f'stroke="{escape(fill)}" stroke-width="1.5"/>')
        else:
            mark = _marker(shape, cx, cy, r, fill)
        self.marks.append(f'<g class="{escape(css)}{flagged}"{attrs}>{mark}{halo}{tip}</g>')

    def line(self, points: list[tuple[float, float]], *, stroke: str, width: float = 2, dash: str = "",
             title: str = "", css: str = "line", step: bool = False) -> None:
        """A polyline through `points` (data units); step=True draws it as a staircase (horizontal, then
        vertical: a value held until the next point)."""
        if not points:
            return
        pts = []
        for i, (x, y) in enumerate(points):
            if step and i:
                pts.append((self.px(x), self.py(points[i - 1][1])))
            pts.append((self.px(x), self.py(y)))
        dashed = f' stroke-dasharray="{escape(dash)}"' if dash else ""
        tip = f"<title>{escape(title)}</title>" if title else ""
        self.marks.append(f'<polyline class="{escape(css)}" points="{" ".join(f"{a},{b}" for a, b in pts)}" '
                          f'fill="none" stroke="{escape(stroke)}" stroke-width="{width}"{dashed}>{tip}</polyline>')

    def vline(self, x: float, label: str, *, stroke: str = "#555555", css: str = "threshold", row: int = 0,
              anchor: str = "start") -> None:
        """A dashed vertical reference line at x, labelled at its top (a threshold, the model's bytes); `row` 1,
        2, ... moves the label down a line and starts the line below it, so a label in an upper row never
        crosses a line of a lower one (two lines close together); anchor "end" puts it left of the line. The
        label has a white halo: a mark under it never runs through its letters."""
        cx = self.px(x)
        tx = cx + 3 if anchor == "start" else cx - 3
        ty = self.top - 8 + row * (FONT + 2)
        self.marks.append(f'<g class="{escape(css)}"><line x1="{cx}" y1="{ty + 4}" x2="{cx}" '
                          f'y2="{self.py(self.y0)}" stroke="{escape(stroke)}" stroke-width="1.5" '
                          f'stroke-dasharray="5 3"/><text x="{tx}" y="{ty}" font-size="{FONT - 1}" '
                          f'text-anchor="{escape(anchor)}" fill="{escape(stroke)}" {HALO}>'
                          f"{escape(label)}</text></g>")

    def hatch(self, name: str, color: str) -> str:
        """Define a diagonal hatch of `color` on white (a fill told apart from a solid one without colour); returns
        the fill value for bar(): url(#ID), the ID made from the plot's class and `name`, unique on a page whose
        plots have distinct classes."""
        pid = f"{self.css_class or 'plot'}-{name}".replace(" ", "-")
        self.defs.append(f'<pattern id="{escape(pid)}" patternUnits="userSpaceOnUse" width="6" height="6" '
                         f'patternTransform="rotate(45)"><rect width="6" height="6" fill="#ffffff"/>'
                         f'<rect width="3.2" height="6" fill="{escape(color)}"/></pattern>')
        return f"url(#{pid})"

    def label(self, x: float, y: float, text: str, *, anchor: str = "start", fill: str = "#222222") -> None:
        """Text at data point (x, y), anchored start, middle or end, with a white halo (HALO)."""
        self.marks.append(f'<text x="{self.px(x)}" y="{self.py(y)}" font-size="{FONT - 1}" '
                          f'text-anchor="{escape(anchor)}" fill="{escape(fill)}" {HALO}>{escape(text)}</text>')

    def apart(self, points: list[tuple[float, float]], r: float = 4.5) -> list[tuple[float, float]]:
        """Pixel nudges (dx, dy), one per data point in `points`, that keep markers of radius `r` from covering each
        other: a point goes where it belongs unless an earlier one lies within 1.6 r, else to the first free place
        on rings of 2 r, 4 r, ... around it (deterministic: the same points give the same nudges)."""
        placed: list[tuple[float, float]] = []
        out = []
        for x, y in points:
            cx, cy = self.px(x), self.py(y)
            spot = (cx, cy)
            for ring in range(0, 6):
                steps = 1 if ring == 0 else 6 * ring
                found = None
                for k in range(steps):
                    a = 2 * math.pi * k / steps + ring * 0.5
                    c = (cx + 2 * r * ring * math.cos(a), cy + 2 * r * ring * math.sin(a))
                    if all(math.hypot(c[0] - px, c[1] - py) >= 1.6 * r for px, py in placed):
                        found = c
                        break
                if found is not None:
                    spot = found
                    break
            placed.append(spot)
            out.append((round(spot[0] - cx, 2), round(spot[1] - cy, 2)))
        return out

    def render(self) -> str:
        """The chart as one `<svg>` element (role img, titled and described for assistive technology)."""
        w, h = self.width, self.height
        base, left, right = self.py(self.y0), self.left, w - self.right
        grid, ticks = [], []
        for v, text in self.y_ticks:
            y = self.py(v)
            grid.append(f'<line x1="{left}" y1="{y}" x2="{right}" y2="{y}" stroke="#e4e4e4"/>')
            ticks.append(f'<text x="{left - 6}" y="{y + 4}" font-size="{FONT}" text-anchor="end">{escape(text)}</text>')
        for v, text in self.x_ticks:
            x = self.px(v)
            ticks.append(f'<line x1="{x}" y1="{base}" x2="{x}" y2="{base + 4}" stroke="#333333"/>'
                         f'<text x="{x}" y="{base + 17}" font-size="{FONT}" text-anchor="middle">{escape(text)}</text>')
        axes = (f'<line x1="{left}" y1="{base}" x2="{right}" y2="{base}" stroke="#333333"/>'
                f'<line x1="{left}" y1="{self.top}" x2="{left}" y2="{base}" stroke="#333333"/>')
        labels = (f'<text x="{(left + right) / 2}" y="{h - 6}" font-size="{FONT}" text-anchor="middle">'
                  f"{escape(self.x_label)}</text>"
                  f'<text x="14" y="{(self.top + base) / 2}" font-size="{FONT}" text-anchor="middle" '
                  f'transform="rotate(-90 14 {(self.top + base) / 2})">{escape(self.y_label)}</text>')
        heading = f'<text x="{left}" y="14" font-size="{FONT + 1}" font-weight="bold">{escape(self.title)}</text>'
        return (f'<svg class="plot {escape(self.css_class)}" xmlns="http://www.w3.org/2000/svg" role="img" '
                f'viewBox="0 0 {w} {h}" width="{w}" height="{h}" font-family="sans-serif">'
                f"<title>{escape(self.title)}</title><desc>{escape(self.desc)}</desc>"
                + (f"<defs>{''.join(self.defs)}</defs>" if self.defs else "") + heading
                + "".join(grid) + axes + "".join(ticks) + labels + "".join(self.marks) + "</svg>")


def _marker(shape: str, cx: float, cy: float, r: float, fill: str) -> str:
    """A filled marker of `shape` (SHAPES, but "ring") centred on (cx, cy), about 2r across, with a dark outline."""
    paint = f'fill="{escape(fill)}" stroke="#222222" stroke-width="0.7"'
    if shape == "circle":
        return f'<circle cx="{cx}" cy="{cy}" r="{r}" {paint}/>'
    if shape == "square":
        a = round(r * 0.9, 2)
        return f'<rect x="{round(cx - a, 2)}" y="{round(cy - a, 2)}" width="{2 * a}" height="{2 * a}" {paint}/>'
    k = round(r * 1.3, 2)
    corners = {"diamond": [(0, -k), (k, 0), (0, k), (-k, 0)], "down": [(-k, -k * 0.7), (k, -k * 0.7), (0, k)],
               "up": [(-k, k * 0.7), (k, k * 0.7), (0, -k)]}.get(shape, [(0, -k), (k, 0), (0, k), (-k, 0)])
    points = " ".join(f"{round(cx + dx, 2)},{round(cy + dy, 2)}" for dx, dy in corners)
    return f'<polygon points="{points}" {paint}/>'


def _ticks(values: list, fmt: str) -> list[tuple[float, str]]:
    """(value, label) pairs from values or pairs, labels formatted with `fmt`."""
    return [v if isinstance(v, tuple) else (v, fmt.format(v)) for v in values]
