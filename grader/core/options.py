"""Argument types shared by the `grade` command (grader.cli) and `grade batch` (grader.batch.command): argparse
`type=` functions that refuse a bad value with a message naming it and the form to use (argparse then exits
2, the usage error's code), and HelpFormatter, the layout of every command's -h (its exit-code table)."""

from __future__ import annotations

import argparse
import re
import textwrap

SEED_LIMIT = 2**63




def seed_type(value: str) -> int:
    """argparse type of --seed: a whole number in [0, 2**63) (the range of the seeds the reports print)."""
    try:
        seed = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if not 0 <= seed < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"{seed} is outside 0 .. 2**63 - 1")
    return seed


FORMATS = {"text": "the report or summary for people (default)",
           "json": "one JSON document on stdout, everything else on stderr (same as --json)",
           "gradescope": "Gradescope's results.json"}
"""The words of --format, one meaning each in every command that takes them (grader.cli's docstring)."""
FORMAT_ALIASES = {"gradebook": "text"}
"""Words an earlier version took, read as today's (`grade batch --format gradebook` was its default, text)."""


def add_format_options(p: argparse.ArgumentParser, choices: tuple[str, ...],
                       helps: dict[str, str] | None = None) -> None:
    """Add --format (FORMATS' words among `choices`, default text; `helps` says what a word does in this command)
    and --json (the same as --format json) to `p`; both set `args.format`."""
    said = {**FORMATS, **(helps or {})}
    p.add_argument("--format", choices=choices, default="text", type=lambda word: FORMAT_ALIASES.get(word, word),
                   help="; ".join(f"{word}: {said[word]}" for word in choices))
    p.add_argument("--json", action="store_const", const="json", dest="format", help="same as --format json")


def gpu_list(value: str) -> list[int]:
    """argparse type of --gpus: distinct positions among the visible GPUs, `0,2` -> [0, 2]."""
    words = [w.strip() for w in value.split(",")]
    if not all(w.isdigit() and w.isascii() for w in words):
        raise argparse.ArgumentTypeError(f"{value!r}: give positions of visible GPUs as whole numbers, e.g. 0 or 0,2")
    chosen = [int(w) for w in words]
    if len(set(chosen)) != len(chosen):
        raise argparse.ArgumentTypeError(f"{value!r}: a GPU is named twice")
    return chosen


def positive_seconds(value: str) -> float:
    """argparse type of --run-limit and --compile-limit: a positive, finite number of seconds (nan and inf
    would switch a limit off)."""
    return _positive(value, "seconds")


def positive_number(value: str) -> float:
    """argparse type of --memory-limit: a positive, finite number (GiB)."""
    return _positive(value, "GiB")


def _positive(value: str, unit: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of {unit}") from None
    if not 0 < number < float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r}: give a positive number of {unit}")
    return number


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help formatter, except that a text holding indented lines (a table: the exit codes of
    grader.core.errors.exit_codes_help, `grade -h`'s commands) keeps its lines, each wrapped to the terminal's width
    under its second column (the text after the first run of two spaces). Other text is filled as argparse
    fills it."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n  " not in text:
            return super()._fill_text(text, width, indent)
        lines = []
        for line in text.splitlines():
            column = re.match(r"\s*\S.*?\s{2,}", line)
            hang = indent + " " * (column.end() if column else 0)
            lines += textwrap.wrap(line, width, initial_indent=indent, subsequent_indent=hang,
                                   break_on_hyphens=False, break_long_words=False) or [indent]
        return "\n".join(lines)
