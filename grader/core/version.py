"""The grader's version, as pyproject.toml gives it (grader.__version__ re-exports it)."""

__version__ = "0.1.0"
