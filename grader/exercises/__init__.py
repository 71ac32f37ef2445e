"""The course's exercises, one folder each (grader.core.exercise says what an exercise gives the harness).
`get(name)` is the only way the harness reaches one: it names none of them."""

from __future__ import annotations

import importlib
from pathlib import Path

from grader.core.errors import InputError

DEFAULT = "bias_gelu"
"""The exercise `grade FILE` grades when none is named: the course page's own exercise (bias_gelu)."""


def names() -> tuple[str, ...]:
    """Every exercise's name (its folder under grader/exercises/), sorted."""
    here = Path(__file__).resolve().parent
    return tuple(sorted(p.name for p in here.iterdir() if (p / "__init__.py").is_file()))


def get(name: str = DEFAULT):
    """The Exercise named `name`: EXERCISE of its folder's exercise.py (or of its __init__.py). Raises InputError
    naming the exercises there are."""
    if name not in names():
        raise InputError(f"no exercise {name!r}; the exercises are {', '.join(names())}")
    package = importlib.import_module(f"{__name__}.{name}")
    if hasattr(package, "EXERCISE"):
        return package.EXERCISE
    return importlib.import_module(f"{__name__}.{name}.exercise").EXERCISE
