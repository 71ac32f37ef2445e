"""The class page's colours, style sheet and script (grader.batch.classpage): constants, hashed into the page's
Content-Security-Policy, so no data ever goes into them.

Colours (PALETTE): each verdict group (grader.batch.triage.GROUPS) has a mark colour for the plots and the badges'
borders (at least 3:1 against white: WCAG 2.1's 1.4.11 for graphics) and a text colour on a light tint for its badge
(at least 4.5:1: WCAG AA for text); tests/test_classpage.py computes every pair from the style sheet itself. A group
is also told by its shape (grader.batch.triage.GLYPHS) and its words, never by colour alone.

Layout: the page scrolls only vertically at any width (the plots and panels shrink to the screen, the table scrolls
in its own box, its header row and id column staying in view); printed, the controls go, the table and the folded
facts open in full, and badges keep their colours. Without script the page is complete and shows no control: the
filters and the lines about them are `hidden` (and `[hidden]` beats every display rule) until the script shows them,
the sort buttons and the facet buttons are made by the script from plain headers and labels.
"""

from __future__ import annotations

PALETTE = {  # group: (mark, text, tint)
    "gold": ("#a57c00", "#5c4400", "#fdf1c9"),
    "silver": ("#6b7785", "#3d4650", "#e8ecf0"),
    "slow": ("#c05a00", "#7a3800", "#fde6d2"),
    "wrong": ("#c62828", "#8e1b14", "#fde2df"),
    "error": ("#7b3294", "#5a2370", "#f1e4f7"),
    "grader": ("#455a64", "#2d3a44", "#e3e9ed"),
    "busy": ("#00796b", "#00594f", "#d9f2ee"),
    "no-gpu": ("#6e6e6e", "#444444", "#ececec"),
}
"""Per verdict group: the mark colour (plots, badge borders), the badge's text colour and its tint (background)."""
MARKS = {g: mark for g, (mark, _, _) in PALETTE.items()}
BLUE = "#1f5f99"
"""Bars and curves that are no verdict's (points, fast_p): 6.7:1 on white."""
INK, MUTED, PAGE, PANEL, HEAD = "#1d1d1d", "#555555", "#f6f6f4", "#ffffff", "#e9e9e9"

_BADGES = "\n".join(f".g-{g}{{color:{text};background:{tint};border-color:{mark}}}"
                    f".g-{g} .glyph{{color:{mark}}}" for g, (mark, text, tint) in PALETTE.items())

STYLE = f"""
[hidden]{{display:none!important}}
*{{box-sizing:border-box}}
body{{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:{INK};background:{PAGE};
line-height:1.4}}
header,main,footer{{max-width:1360px;margin:0 auto;padding:0 14px}}
header{{padding-top:8px}}
h1{{font-size:1.4rem;margin:.2rem 0}}
h2{{font-size:1.08rem;margin:.9rem 0 .35rem}}
h3{{font-size:.9rem;margin:.5rem 0 .2rem}}
a{{color:#1a5a96}}
code{{font-size:.9em}}
.sub{{color:{MUTED};margin:0 0 .3rem;font-size:.9rem}}
.headline{{font-size:1.02rem;margin:.25rem 0 .5rem}}
.tiles{{list-style:none;display:flex;flex-wrap:wrap;gap:8px;margin:0;padding:0}}
.tile{{flex:1 1 9.5rem;max-width:14rem}}
.tile .facet{{display:block;width:100%;text-align:left;border:1px solid;border-left-width:6px;border-radius:6px;
padding:3px 10px;font:inherit;line-height:1.3}}
.tile b{{font-size:1.35rem;margin-right:.35rem}}
.tile small{{display:block;font-size:.8rem}}
.panels{{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,360px),1fr));gap:12px;margin-top:12px}}
.panel,.card{{background:{PANEL};border:1px solid #d4d4d4;border-radius:6px;padding:6px 12px 8px;min-width:0}}
.panel h2{{margin:.2rem 0 .3rem}}
.panel p,.card p{{font-size:.85rem;color:{MUTED};margin:.25rem 0}}
.looklist{{margin:0;padding-left:1.3rem;font-size:.88rem;max-height:24rem;overflow-y:auto}}
.looklist li{{margin:.1rem 0}}
.chips{{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:4px 6px;font-size:.86rem}}
.chips .facet{{display:inline-block;border:1px solid #c8c8c8;border-radius:12px;padding:0 8px;background:#f7f7f7;
color:{INK};font:inherit}}
.chips span.facet{{border-color:transparent;background:none;padding:0 2px}}
button.facet{{cursor:pointer}}
button.facet:hover{{border-color:{BLUE}}}
button.facet:focus-visible{{outline:3px solid {BLUE};outline-offset:1px}}
button.facet[aria-pressed=true]{{background:{BLUE};border-color:{BLUE};color:#ffffff}}
button.facet[aria-pressed=true] .glyph{{color:#ffffff;background:{BLUE}}}
.cards{{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,480px),1fr));gap:12px}}
svg.plot{{width:100%;height:auto;display:block;max-width:100%}}
.controls{{display:flex;flex-wrap:wrap;gap:6px 14px;align-items:center;margin:.3rem 0;font-size:.9rem}}
.controls input[type=search]{{width:min(100%,20rem);padding:3px 6px;font:inherit}}
.controls select,.controls button{{font:inherit}}
.table-box{{overflow:auto;max-height:80vh;border:1px solid #d4d4d4;background:{PANEL}}}
table.students{{border-collapse:separate;border-spacing:0;width:100%;font-size:.84rem}}
table.students th,table.students td{{border-bottom:1px solid #e0e0e0;padding:3px 6px;vertical-align:top;
text-align:left}}
table.students th{{background:{HEAD};color:{INK};position:sticky;top:0;z-index:1;white-space:nowrap;font-weight:600}}
table.students th button{{all:unset;cursor:pointer;font-weight:600}}
table.students th button:focus-visible{{outline:2px solid {BLUE}}}
table.students th[aria-sort=ascending] button::after{{content:" \\25B2"}}
table.students th[aria-sort=descending] button::after{{content:" \\25BC"}}
table.students td:first-child{{position:sticky;left:0;background:{PANEL};z-index:1}}
table.students th:first-child{{left:0;z-index:2}}
table.students tr.look td:first-child{{box-shadow:inset 4px 0 0 {BLUE}}}
td.num{{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}}
td.id{{min-width:7rem;max-width:13rem}}
td.people{{min-width:7rem;max-width:11rem;overflow-wrap:anywhere}}
td.hint{{min-width:8rem;max-width:12rem}}
td.reason{{min-width:14rem;max-width:30rem;overflow-wrap:anywhere}}
td.verdict{{min-width:11.5rem}}
td .json{{font-size:.8em}}
.none{{color:{MUTED}}}
.v{{display:inline-block;white-space:nowrap;border:1px solid;border-radius:4px;padding:0 5px;font-weight:600}}
{_BADGES}
details.facts-box{{margin:1rem 0;background:{PANEL};border:1px solid #d4d4d4;border-radius:6px;padding:6px 12px}}
details.facts-box summary{{cursor:pointer;font-weight:600}}
.facts{{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:2px 14px;margin:.4rem 0 0;font-size:.9rem}}
.facts dt{{font-weight:600}}
.facts dd{{margin:0;overflow-wrap:anywhere}}
footer{{margin:18px auto;color:{MUTED};font-size:.8rem}}
@media (max-width:640px){{
h1{{font-size:1.2rem}}
.tile{{flex-basis:calc(50% - 4px);max-width:none}}
.facts{{grid-template-columns:minmax(0,1fr)}}
.facts dd{{margin-bottom:.3rem}}
}}
@media print{{
@page{{size:A4 landscape;margin:10mm}}
body{{background:#ffffff;font-size:9pt}}
header,main,footer{{max-width:none;padding:0}}
.controls,#clear,[data-js],td .json{{display:none!important}}
.v,.tile .facet,button.facet[aria-pressed=true]{{-webkit-print-color-adjust:exact;print-color-adjust:exact}}
button.facet{{cursor:auto}}
.table-box{{overflow:visible;max-height:none;border:0}}
table.students{{font-size:7pt}}
table.students th,table.students td{{padding:2px 4px}}
table.students th,table.students td:first-child{{position:static}}
table.students th{{-webkit-print-color-adjust:exact;print-color-adjust:exact}}
table.students th button{{display:contents}}
table.students th button::after{{content:none!important}}
table.students thead{{display:table-header-group}}
table.students tr{{break-inside:avoid}}
td.reason{{max-width:none;width:42%}}
td.people,td.hint,td.verdict{{min-width:0}}
td.id{{min-width:6.5rem}}
.looklist{{max-height:none;overflow:visible}}
.panels,.cards{{grid-template-columns:repeat(3,minmax(0,1fr));gap:8px}}
.panel,.card,svg.plot{{break-inside:avoid}}
details.facts-box::details-content{{content-visibility:visible;display:block}}
a{{color:{INK};text-decoration:none}}
}}
"""

SCRIPT = """
(function () {
  "use strict";
  var table = document.getElementById("students");
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var text = document.getElementById("filter");
  var group = document.getElementById("group");
  var shown = document.getElementById("shown");
  var clear = document.getElementById("clear");
  var facet = "";
  var buttons = [];
  function apply() {
    var q = text.value.trim().toLowerCase();
    var n = 0;
    rows.forEach(function (r) {
      var keys = " " + r.getAttribute("data-facets") + " ";
      var ok = (!q || r.textContent.toLowerCase().indexOf(q) >= 0) &&
        (!group.value || r.getAttribute("data-group") === group.value) &&
        (!facet || keys.indexOf(" " + facet + " ") >= 0);
      r.hidden = !ok;
      if (ok) { n += 1; }
    });
    var named = "";
    buttons.forEach(function (b) {
      var on = b.getAttribute("data-facet") === facet;
      b.setAttribute("aria-pressed", on ? "true" : "false");
      if (on && !named) { named = b.getAttribute("data-label"); }
    });
    shown.textContent = n + " of " + rows.length + " students shown" + (named ? " (" + named + ")" : "");
    clear.hidden = !(q || group.value || facet);
  }
  Array.prototype.forEach.call(document.querySelectorAll("span.facet[data-facet]"), function (span) {
    var b = document.createElement("button");
    b.type = "button";
    b.className = span.className;
    b.setAttribute("data-facet", span.getAttribute("data-facet"));
    b.setAttribute("data-label", span.getAttribute("data-label") || span.textContent.trim());
    b.setAttribute("aria-controls", "students");
    b.title = "show these students in the table (again: show all)";
    while (span.firstChild) { b.appendChild(span.firstChild); }
    span.parentNode.replaceChild(b, span);
    b.addEventListener("click", function () {
      facet = facet === b.getAttribute("data-facet") ? "" : b.getAttribute("data-facet");
      apply();
      if (facet) { document.getElementById("students-heading").scrollIntoView({block: "start"}); }
    });
    buttons.push(b);
  });
  function key(r, col, numeric) {
    var c = r.cells[col];
    var s = c.hasAttribute("data-sort") ? c.getAttribute("data-sort") : c.textContent;
    if (!numeric) { return s.toLowerCase(); }
    return s === "" ? NaN : parseFloat(s);
  }
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
    var button = document.createElement("button");
    button.type = "button";
    while (th.firstChild) { button.appendChild(th.firstChild); }
    th.appendChild(button);
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
  group.addEventListener("change", apply);
  clear.addEventListener("click", function () { text.value = ""; group.value = ""; facet = ""; apply(); });
  document.getElementById("controls").hidden = false;
  Array.prototype.forEach.call(document.querySelectorAll("[data-js]"), function (e) { e.hidden = false; });
  apply();
})();
"""
