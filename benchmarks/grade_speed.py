"""How long `grade FILE` takes, wall clock, per example: this tree and, optionally, an earlier checkout,
interleaved so both see the same machine.

    python benchmarks/grade_speed.py [--before BEFORE_DIR] [--repeats 5] [--out grade_speed.json]
                                     [--profile FILE.prof] [FILE.cu ...]

Each grading is its own process (`python -m grader.cli FILE --format json`, PYTHONPATH set to the tree, run
from the tree), timed from start to exit with time.perf_counter: the student's wait, imports and a cold
CUDA context included. Defaults to every example in submissions/. Prints and writes, per file and tree, the
median and the spread (min, max) of the wall times, the verdicts and the median fraction of the copy floor.
--profile also writes a cProfile of one grading of the first file by this tree (read it with
`python -m pstats FILE.prof`). The issue's goal on the H200: a timed example graded in at most 2.2 s (median
of 5). Exit 3 without a GPU (the timing path would not run, so the figure would mean nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

from grader.core.errors import EXIT_NO_GPU, NoGpuError  # noqa: E402
from grader.gpu.device import visible_gpus  # noqa: E402 - after the tree is on the path


def grade_once(tree: Path, path: str, profile: str | None = None) -> dict:
    """One `grade` of `path` by the grader in `tree`: wall seconds, verdict, fraction, exit code."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]))
    command = [sys.executable, *(["-m", "cProfile", "-o", profile] if profile else []), "-m", "grader.cli",
               str(Path(path).resolve()), "--format", "json"]
    start = time.perf_counter()
    p = subprocess.run(command, env=env, cwd=tree, capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - start
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError:
        doc = {"verdict": "no-report", "reason": p.stderr[-300:]}
    return {"wall_s": wall, "verdict": doc.get("verdict"), "fraction": doc.get("fraction"), "exit": p.returncode,
            "clocks": doc.get("clocks")}


def summary(runs: list[dict]) -> dict:
    """Median and range of the wall times, the verdicts seen and the median fraction of a list of runs."""
    walls = [r["wall_s"] for r in runs]
    fractions = [r["fraction"] for r in runs if isinstance(r["fraction"], (int, float))]
    return {"median_s": statistics.median(walls), "min_s": min(walls), "max_s": max(walls),
            "verdicts": sorted({str(r["verdict"]) for r in runs}),
            "fraction": statistics.median(fractions) if fractions else None}


def main(argv: list[str] | None = None) -> int:
    """The script's entry point (module docstring); returns its exit code."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", help="submissions to grade (default: submissions/*.cu)")
    ap.add_argument("--before", type=Path, help="an earlier checkout to time beside this one")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", help="write the figures as JSON here")
    ap.add_argument("--profile", help="write a cProfile of one grading of the first file here")
    args = ap.parse_args(argv)
    try:
        visible_gpus()
    except NoGpuError as err:
        print(f"grade_speed: no GPU ({err}); no figure printed", file=sys.stderr)
        return EXIT_NO_GPU
    files = args.files or sorted(str(p) for p in (HERE / "submissions").glob("*.cu"))
    trees = {"this": HERE, **({"before": args.before.resolve()} if args.before else {})}
    if args.profile:
        grade_once(HERE, files[0], profile=str(Path(args.profile).resolve()))
    runs: dict[str, dict[str, list[dict]]] = {t: {f: [] for f in files} for t in trees}
    for _ in range(args.repeats):
        for f in files:
            for name, tree in trees.items():
                runs[name][f].append(grade_once(tree, f))
    figures = {name: {Path(f).name: summary(r) for f, r in by_file.items()} for name, by_file in runs.items()}
    for f in files:
        line = [f"{Path(f).name:24s}"]
        for name in trees:
            s = figures[name][Path(f).name]
            frac = f"{s['fraction']:.3f}" if s["fraction"] is not None else "-"
            line.append(f"{name}: {s['median_s']:.2f} s ({s['min_s']:.2f}-{s['max_s']:.2f}) {'/'.join(s['verdicts'])} "
                        f"{frac}")
        print("  ".join(line))
    if args.out:
        Path(args.out).write_text(json.dumps({"repeats": args.repeats, "figures": figures, "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
