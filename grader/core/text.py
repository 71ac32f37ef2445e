"""Untrusted text made safe to show: the one place where names, compiler messages and source excerpts are
escaped before they reach a terminal or a markdown file.

A student controls file and folder names, every line of the source (NVRTC echoes source lines under its
diagnostics) and the `// grade:` row and claim. Shown raw, an escape sequence there clears the screen,
rewrites the window title or hides a line, a bidirectional override reorders what is read, and HTML in a
markdown file runs in whoever renders it. This module imports nothing from the grader, so the report,
the batch and the gradebook can all use it without an import cycle.
"""

from __future__ import annotations

_MARKDOWN = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\\": "\\\\", "|": "\\|", "`": "\\`",
                           "[": "\\[", "]": "\\]"})


def printable(text: str, limit: int | None = 80) -> str:
    """`text` as one line safe for a terminal: every character that is not printable (control characters
    such as ESC, line breaks, tabs, format characters such as bidirectional overrides) shown as its Python
    escape (`\\x1b`, `\\n`, `\\u202e`), and a byte of a file name that was not UTF-8 as that byte (`\\xe9`);
    cut to `limit` characters with `...` (None: no cut)."""
    out = _escape(text, "")
    return out if limit is None or len(out) <= limit else out[: max(0, limit - 3)] + "..."


def name_text(name: str) -> str:
    """A file or folder name (a student's, or a path) as every output shows it and as batch ids are made:
    printable without a cut, a backslash doubled first, so that the escape of a byte that is not UTF-8
    (`caf\\xe9`) and a name spelled with a backslash (`caf\\\\xe9`) stay different."""
    return printable(name.replace("\\", "\\\\"), None)


def printable_lines(text: str) -> str:
    """Multi-line `text` (a report, a compile log with its source excerpts) safe for a terminal: as
    `printable` without a cut, but line breaks (`\\n`) and tabs (a source excerpt's indentation) kept."""
    return _escape(text, "\n\t")


def _escape(text: str, keep: str) -> str:
    return "".join(ch if ch.isprintable() or ch in keep else _escaped_char(ch) for ch in text)


def _escaped_char(ch: str) -> str:
    """One character that is not printable as its escape: a byte that was not UTF-8 in a file name (Python
    decodes it as a lone surrogate U+DC80..U+DCFF, PEP 383) as that byte, `\\xe9`; anything else as Python
    writes it (`\\x1b`, `\\n`, `\\u202e`)."""
    if "\udc80" <= ch <= "\udcff":
        return f"\\x{ord(ch) - 0xDC00:02x}"
    return ch.encode("unicode_escape").decode("ascii")


def markdown_cell(text: str, limit: int | None = 80) -> str:
    """`text` safe for one cell of a markdown table: `printable` (one line, cut to `limit`), then the
    characters markdown or HTML would read as markup escaped: `<`, `>` and `&` as HTML entities (no raw
    HTML), and `\\`, `|`, a backquote, `[` and `]` with a backslash (no cell break, code span, link or
    image)."""
    return printable(text, limit).translate(_MARKDOWN)
