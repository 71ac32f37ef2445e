"""Grade the same files with two copies of the grader, interleaved, to show that a change kept every verdict
and fraction (a refactor's check on the GPU).

    python benchmarks/before_after.py BEFORE_DIR [--repeats 2] [--out before_after.json] FILE.cu ...

BEFORE_DIR is a checkout of the earlier grader (e.g. `git archive OLD | tar -x -C _before`); the current tree
is this script's repository. Each round grades every file with the earlier tree, then with the current one, each
in its own process (`python -m grader.cli FILE --format json`, PYTHONPATH set to the tree), so both see the
same GPU conditions. Prints, per file and tree, the verdicts and the fractions (median), and the relative
difference of the medians; writes everything as JSON. Exit 3 without a GPU (the fractions would be absent).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def grade(tree: Path, path: str) -> dict:
    """One grading of `path` by the grader in `tree`: {"verdict", "fraction", "stage", "reason", "exit"}."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, "-m", "grader.cli", path, "--format", "json"], env=env, cwd=tree,
                       capture_output=True, text=True, timeout=300)
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError:
        return {"verdict": "no-report", "fraction": None, "stage": None, "reason": p.stderr[-300:],
                "exit": p.returncode}
    return {"verdict": doc["verdict"], "fraction": doc.get("fraction"), "stage": doc.get("stage"),
            "reason": doc.get("reason", "")[:200], "exit": p.returncode}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("before_after.json"))
    args = ap.parse_args()
    trees = {"before": args.before.resolve(), "after": HERE}
    runs: dict[str, dict[str, list[dict]]] = {f: {t: [] for t in trees} for f in args.files}
    for _ in range(args.repeats):
        for f in args.files:
            for name, tree in trees.items():
                runs[f][name].append(grade(tree, str(Path(f).resolve())))
    summary = {}
    no_gpu = False
    for f, by_tree in runs.items():
        row = {}
        for name, results in by_tree.items():
            fractions = [r["fraction"] for r in results if r["fraction"] is not None]
            row[name] = {"verdicts": sorted({r["verdict"] for r in results}),
                         "stages": sorted({str(r["stage"]) for r in results}),
                         "fractions": fractions, "median": statistics.median(fractions) if fractions else None}
            no_gpu |= any(r["verdict"] == "no-gpu" for r in results)
        b, a = row["before"]["median"], row["after"]["median"]
        row["relative_difference"] = (a - b) / b if a and b else None
        row["same_verdicts"] = row["before"]["verdicts"] == row["after"]["verdicts"] and \
            row["before"]["stages"] == row["after"]["stages"]
        summary[f] = row
        diff = f"{100 * row['relative_difference']:+.2f}%" if row["relative_difference"] is not None else "-"
        print(f"{Path(f).name:28s} before {','.join(row['before']['verdicts']):14s} "
              f"{b if b is None else round(b, 4)!s:8s}"
              f" after {','.join(row['after']['verdicts']):14s} {a if a is None else round(a, 4)!s:8s} {diff:>8s}"
              f" {'same' if row['same_verdicts'] else 'DIFFERENT'}")
    args.out.write_text(json.dumps({"summary": summary, "runs": runs}, indent=2))
    return 3 if no_gpu else 0 if all(r["same_verdicts"] for r in summary.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
