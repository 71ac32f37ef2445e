"""Argument types shared by the `grade` command (grader.cli) and `grade batch` (grader.batch): argparse
`type=` functions that refuse a bad value with a message naming it and the form to use (argparse then exits
2, the usage error's code)."""

from __future__ import annotations

import argparse
import re

from grader.errors import InputError

SEED_LIMIT = 2**63
ARCH_PATTERN = re.compile(r"^sm_\d{2,3}[a-z]?$")


def arch_type(value: str) -> str:
    """argparse type of --arch: a compile target such as sm_90, sm_90a or sm_100a."""
    if not ARCH_PATTERN.fullmatch(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a GPU architecture; write it like sm_90, sm_90a or sm_120")
    from grader.toolkit import check_arch, install_problem

    if install_problem() is None:  # else grading stops on the install first, with the pip command
        try:
            check_arch(value)
        except InputError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
    return value


def seed_type(value: str) -> int:
    """argparse type of --seed: a whole number in [0, 2**63) (the range of the seeds the reports print)."""
    try:
        seed = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if not 0 <= seed < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"{seed} is outside 0 .. 2**63 - 1")
    return seed


def positive_seconds(value: str) -> float:
    """argparse type of --run-limit: a positive number of seconds."""
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not 0 < seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r}: give a positive number of seconds")
    return seconds
