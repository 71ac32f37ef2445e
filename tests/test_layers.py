"""The import graph of grader/ and reference_kernels/: every import (module-level or inside a function) goes
from a module to one in a strictly lower layer, so there is no circle and no arrow back up. A new module
must be given a layer here; the test says which import breaks the order. reference_kernels sits on top of
the grader: no grader module imports it, nor names it for importlib."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LAYERS = [
    # the stage packages (each __init__.py is its docstring, importing nothing)
    ["grader.source", "grader.compile", "grader.gpu", "grader.check", "grader.timing", "grader.feedback",
     "grader.output", "grader.batch"],
    # what everything may use: the version (the package root), constants, errors and stage names, text, and
    # the bottom of stage 1: the tokenizer of C source
    ["grader.core.version"],
    ["grader.core.exercise", "grader.exercises.bias_gelu"],
    ["grader", "grader.core", "grader.pipeline", "grader.core.errors", "grader.core.text", "grader.source.lexer",
     "grader.core.procs",
     "grader.source.prelude", "grader.output.svgplot", "grader.compile.cubin"],
    # what the include policy calls: the directives nvcc's preprocessor and NVRTC read differently
    ["grader.source.pragmas"],
    # readers of its tokens: the include policy, the whole-program tokens
    ["grader.source.includes", "grader.source.program_tokens"],
    # a whole program's declarations, and what each one is
    ["grader.source.program_split"],
    ["grader.source.program_declarators"],
    ["grader.core.model", "grader.check.draws"],
    # the control flow of the machine code (blocks, loops, paths), below its accesses
    ["grader.feedback.sass_flow"],
    # a PTX body's statements, scopes and names, then the values its registers take (below the PTX paths)
    ["grader.feedback.ptx_statements"],
    ["grader.feedback.ptx_values"],
    # pure data and numerics: launches as data, the student's claims, float64 references, a hint and its kinds
    # (finding and running a disassembler, below the machine code's facts)
    # (and which PTX statements a launch reaches)
    ["grader.core.launch", "grader.source.claims", "grader.feedback.counters", "grader.feedback.hint",
     "grader.feedback.sass_disassembler", "grader.feedback.sass_access", "grader.gpu.clocks",
     "grader.output.gradescope_export", "grader.feedback.ptx_paths"],
    # the machine code's facts, and the values of its registers from one thread to the next
    ["grader.feedback.sass", "grader.feedback.sass_values", "grader.check.mistakes"],
    # reading a submission
    ["grader.source.contract", "grader.compile.sandbox", "grader.compile.toolkit", "grader.feedback.worth",
     "grader.feedback.sass_stride"],
    # what the machine code's control flow says of its accesses (its loops, strides, passes, divisions)
    ["grader.feedback.code_paths"],
    ["grader.feedback.flow_facts"],
    ["grader.compile.predefined", "grader.feedback.launch_facts"],
    ["grader.source.program"],
    ["grader.source.signature", "grader.source.read", "grader.compile.nvrtc", "grader.core.options"],
    ["grader.compile.kernel_cache", "grader.feedback.source_counters"],
    # the GPU (and the page's chain kernels as data, which the chain's rows and the profiled child launch)
    ["grader.gpu.device", "grader.gpu.kernels", "grader.gpu.capture", "grader.exercises.bias_gelu.page_kernels"],
    ["grader.timing.contention", "grader.check.verify", "grader.timing.timer", "grader.feedback.hints"],
    ["grader.timing.measure", "grader.output.report"],
    # the exercises, each a folder of data and code the harness takes as an argument (grader.core.exercise)
    ["grader.exercises", "grader.exercises.bias_gelu.reference", "grader.exercises.bias_gelu.hints"],
    ["grader.exercises.bias_gelu.mistakes", "grader.exercises.bias_gelu.device"],
    ["grader.exercises.bias_gelu.chain"],
    ["grader.exercises.bias_gelu.exercise"],
    # the RoPE exercise (grader/exercises/rope/): its float64 RoPE, sizes and inputs, known mistakes, on-GPU side
    ["grader.exercises.rope.reference", "grader.exercises.rope.answers"],
    ["grader.exercises.rope.problem"],
    ["grader.exercises.rope.mistakes", "grader.exercises.rope.device"],
    ["grader.exercises.rope"],
    ["grader.pipeline.grade", "grader.output.gradescope", "grader.output.terminal", "grader.pipeline.watchdog",
     "grader.output.student_files"],
    # the counters' child: the pipeline's front (grade.compile_submission, launch_spec), then its own launches
    ["grader.pipeline.profiled"],
    # a class: what the batch, its pool and its workers say to each other (grader.batch.protocol), one worker process
    # per submission, the pool of them, finding the submissions, the batch command
    ["grader.batch.protocol", "grader.batch.people", "grader.batch.reply"],
    ["grader.batch.worker"],
    ["grader.batch.gradebook", "grader.batch.pool", "grader.batch.discovery"],
    # the class page, from the gradebook: what each row means (triage), its colours, style and script, its plots;
    # the GPUs a batch plans for; the results files a merge reads; what a merge should have (its rows against the
    # class); the Slurm script
    ["grader.batch.triage", "grader.batch.classpage_assets", "grader.batch.gpus", "grader.batch.merging",
     "grader.batch.expect", "grader.batch.slurm"],
    ["grader.batch.classplots"],
    ["grader.batch.classpage"],
    # every file a batch and a merge write, in one table, and their one writer
    ["grader.batch.outputs"],
    ["grader.batch.command"],
    # entry points
    ["grader.cli"],
    ["grader.__main__"],
    # the reference kernels' self-check, on top of the grader (its page kernels, launch, check and measure
    # layers); `grade selfcheck` reaches it through an entry point (pyproject.toml), never an import
    ["reference_kernels.suite", "reference_kernels.expected"],
    ["reference_kernels.gates", "reference_kernels.timed"],
    ["reference_kernels.selfcheck_report", "reference_kernels.counted"],
    ["reference_kernels.selfcheck"],
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}

PACKAGES = ["grader.core", "grader.compile", "grader.source", "grader.gpu", "grader.check", "grader.timing",
            "grader.feedback", "grader.output", "grader.exercises", "grader.pipeline", "grader.batch", "grader",
            "reference_kernels"]
"""The packages, floor first: a module may import only from its own package or one below it, so the package graph
has no circle either. grader.core is the floor (errors, models, launches as data, text, version); the top-level
modules of grader (the command line, the lazy Python API) are the roof."""
PACKAGE_OF: dict[str, str] = {}
"""Modules placed in another package than their folder's: none (issue 32 emptied it; an entry is a debt)."""

NAMES_AN_EXERCISE: set[str] = set()
"""The harness modules that import an exercise's own folder (grader.exercises.NAME, or a module in it) instead of
taking an Exercise from their caller: none since issue 32 (the counters and their profiled child were the last).
The list only shrinks: test_only_the_listed_harness_modules_name_an_exercise fails on a new entry."""


def package(name: str) -> str:
    """The package of module `name` (PACKAGES): its first two parts when that is a package of grader/."""
    if name in PACKAGE_OF:
        return PACKAGE_OF[name]
    parts = name.split(".")
    if parts[0] == "reference_kernels":
        return "reference_kernels"
    if len(parts) > 1 and (ROOT / parts[0] / parts[1]).is_dir():
        return ".".join(parts[:2])
    return parts[0]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    files = [*(ROOT / "grader").rglob("*.py"), *(ROOT / "reference_kernels").rglob("*.py")]
    return {module_name(p): p for p in files if module_name(p) != "reference_kernels"}


def imports(path: Path, known: set[str]) -> set[str]:
    """The project modules `path` imports, anywhere in it (TYPE_CHECKING blocks included)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names]  # a name that is no module: its module
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                out.add(name)
    return out


def test_every_module_has_a_layer():
    missing = sorted(set(modules()) - set(RANK))
    assert not missing, f"give these modules a layer in tests/test_layers.py: {missing}"


def test_imports_only_go_down():
    mods = modules()
    upward = []
    for name, path in mods.items():
        for dep in imports(path, set(mods)) - {name}:
            if RANK[dep] >= RANK[name]:
                upward.append(f"{name} (layer {RANK[name]}) imports {dep} (layer {RANK[dep]})")
    assert not upward, "\n".join(sorted(upward))


def test_packages_only_import_down():
    """The package graph is a ladder: no import from a package to one above it (the floor imports no stage, the
    stages never import the pipeline, the batch or the command line)."""
    mods = modules()
    unknown = sorted({package(n) for n in mods} - set(PACKAGES))
    assert not unknown, f"give these packages a place in PACKAGES: {unknown}"
    level = {p: i for i, p in enumerate(PACKAGES)}
    upward = sorted(f"{name} ({package(name)}) imports {dep} ({package(dep)})"
                    for name, path in mods.items() for dep in imports(path, set(mods)) - {name}
                    if level[package(dep)] > level[package(name)])
    assert not upward, "\n".join(upward)


def test_only_the_listed_harness_modules_name_an_exercise():
    """The harness (every grader module outside grader/exercises/) takes its exercise as an argument
    (grader.core.exercise.Exercise, found by grader.exercises.get): an import of an exercise's folder is allowed only
    in NAMES_AN_EXERCISE, and each module listed there must still have one (else it leaves the list)."""
    mods = modules()
    naming = {name for name, path in mods.items()
              if name.startswith("grader") and not name.startswith("grader.exercises")
              and any(dep.startswith("grader.exercises.") for dep in imports(path, set(mods)))}
    assert not naming - NAMES_AN_EXERCISE, f"these import an exercise's folder; take an Exercise instead: " \
                                           f"{sorted(naming - NAMES_AN_EXERCISE)}"
    assert not NAMES_AN_EXERCISE - naming, f"no longer naming an exercise, remove from NAMES_AN_EXERCISE: " \
                                           f"{sorted(NAMES_AN_EXERCISE - naming)}"


def test_reference_kernels_sit_above_the_whole_grader():
    grader_top = max(rank for name, rank in RANK.items() if name.startswith("grader"))
    below = sorted(name for name, rank in RANK.items() if name.startswith("reference_kernels") and rank <= grader_top)
    assert not below, f"reference_kernels modules at or below the grader's top layer: {below}"


def test_the_grader_never_imports_reference_kernels():
    """No import of it in grader/, and no module name of it in a string the code uses (an importlib call, a
    `-m` command line); docstrings may name it."""
    mods = modules()
    found = []
    for name, path in mods.items():
        if not name.startswith("grader"):
            continue
        found += [f"{name} imports {dep}" for dep in imports(path, set(mods)) if dep.startswith("reference_kernels")]
        tree = ast.parse(path.read_text())
        docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
        found += [f"{name}:{n.lineno} names {n.value!r}" for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str) and "reference_kernels" in n.value
                  and id(n) not in docs]
    assert not found, "\n".join(sorted(found))
