"""Auto-grader for the course's kernel exercises: one folder each under grader/exercises/ (the default is the page's
own, out = GELU_erf(x + bias[col]); `grade --exercise rope` grades its RoPE kernel).

The stages are subpackages, data flowing one way from the source file to the report (docs/development.md,
"Layout"): source (reading the file, includes, tokens, whole programs, prelude, contract, claims) -> build
(NVRTC in its sandbox, the cubin) -> gpu (device, launch, kernels) -> check (float64 reference, verification)
-> timing (timer, copy floor, measure, chain) -> feedback (hints, disassembly, counters) -> output (report,
terminal, Gradescope), and batch for a class. grader.pipeline.grade runs them for one file, grader.cli is the command
line; the exercise's constants live in grader.exercises.bias_gelu.

Python API (for a notebook or a script; docs/grading.md, "From Python"):

    from grader import grade_file, render_text
    report = grade_file("my_kernel.cu")      # a GradeReport (pydantic): verdict, fraction, table, ...
    print(render_text(report))               # the text report `grade FILE` prints

grade_file raises InputError (unreadable file, bad option value), InstallError or GraderFault (the grader,
not the submission); every problem of the submission itself is in the report (verdict "error" or "fail").
The names are imported on first use, so `import grader` stays light.
"""

from grader.core.version import __version__

__all__ = ["grade_file", "render_text", "GradeReport", "GraderError", "InputError", "InstallError", "GraderFault",
           "__version__"]

_API = {"grade_file": "grader.pipeline.grade", "render_text": "grader.output.report",
        "GradeReport": "grader.output.report",
        "GraderError": "grader.core.errors", "InputError": "grader.core.errors", "InstallError": "grader.core.errors",
        "GraderFault": "grader.core.errors"}


def __getattr__(name: str):
    """The public names of __all__, imported from their modules on first use (PEP 562)."""
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'grader' has no attribute {name!r}")
