"""Auto-grader for the course exercise `biasGeluFused` (out = GELU_erf(x + bias[col])).

Stages, one module each, data flowing one way: source -> compile -> device -> reference/verify -> timing
-> grade -> report (and batch for a class). The exercise's constants live in grader.exercise.

Python API (for a notebook or a script; docs/grading.md, "From Python"):

    from grader import grade_file, render_text
    report = grade_file("my_kernel.cu")      # a GradeReport (pydantic): verdict, fraction, table, ...
    print(render_text(report))               # the text report `grade FILE` prints

grade_file raises InputError (unreadable file, bad option value), InstallError or GraderFault (the grader,
not the submission); every problem of the submission itself is in the report (verdict "error" or "fail").
The names are imported on first use, so `import grader` stays light.
"""

__version__ = "0.1.0"

__all__ = ["grade_file", "render_text", "GradeReport", "GraderError", "InputError", "InstallError", "GraderFault",
           "__version__"]

_API = {"grade_file": "grader.grade", "render_text": "grader.output.report", "GradeReport": "grader.output.report",
        "GraderError": "grader.errors", "InputError": "grader.errors", "InstallError": "grader.errors",
        "GraderFault": "grader.errors"}


def __getattr__(name: str):
    """The public names of __all__, imported from their modules on first use (PEP 562)."""
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'grader' has no attribute {name!r}")
