"""Batch throughput: grade N copies of the example submissions with `grade batch` and report submissions per
minute per GPU, and where the time goes.

    python benchmarks/batch_throughput.py [--copies 3] [--examples gold_float4,page_scalar,...] [--gpus 0,1]
                                          [--json results/batch_throughput.json]

Each copy is its own student (id `<example>_<k>`), graded in its own worker process as in a real batch.
Figures (written to --json, and printed):
  wall_s                 the batch command's wall time (GPU probe, workers, outputs)
  per_minute, per_minute_per_gpu   submissions graded per minute of wall time (per GPU used)
  phases_mean_s          mean seconds per submission in each phase, measured by the worker with
                         time.perf_counter: start (process start and imports; a standby worker pays it while
                         the previous submission runs), read, context (CUDA context and device facts),
                         compile (NVRTC), verify (ragged shapes), time (copy floor and submission, with the
                         per-round checks), other (the rest of grade_file), total (the worker's job, from
                         reading it to sending the result), wall (the batch's view: job sent to result
                         received, including any wait for a worker still importing)
  slot_idle_s            GPU-slot seconds outside any job (GPU probe, writing rows and outputs, reaping):
                         wall_s x GPUs - sum of the jobs' wall
  by_example             mean total seconds and verdicts per example
The issue's goal on the H200 is at least 30 submissions per minute per GPU.

Needs a CUDA GPU: without one it exits 3 with the reason and prints no figure (a batch of static checks says
nothing about grading throughput). Exit 1 if the batch fails.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from tabulate import tabulate

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.batch.command import probe_gpus  # noqa: E402
from grader.core.errors import EXIT_NO_GPU  # noqa: E402

PHASES = ("start", "read", "context", "compile", "verify", "time", "other", "total", "wall")
GOAL_PER_MINUTE_PER_GPU = 30


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--copies", type=int, default=3, help="copies of each example (default 3)")
    p.add_argument("--examples", default="", help="comma-separated example names in submissions/ (default: all)")
    p.add_argument("--gpus", help="passed to grade batch --gpus")
    p.add_argument("--json", default=str(ROOT / "results" / "batch_throughput.json"), help="where to write the figures")
    p.add_argument("--run-limit", default="120", help="passed to grade batch --run-limit")
    args = p.parse_args(argv)
    count, _, reason = probe_gpus()
    if count == 0:
        print(f"batch_throughput: no GPU ({reason}); nothing measured (static checks alone say nothing about "
              "grading throughput)", file=sys.stderr)
        return EXIT_NO_GPU
    names = [n.strip() for n in args.examples.split(",") if n.strip()] or sorted(
        f.stem for f in (ROOT / "submissions").glob("*.cu"))
    with tempfile.TemporaryDirectory(prefix="batch-throughput-") as tmp:
        cls, out = Path(tmp) / "class", Path(tmp) / "out"
        cls.mkdir()
        for name in names:
            text = (ROOT / "submissions" / f"{name}.cu").read_bytes()
            for k in range(args.copies):
                (cls / f"{name}_{k:03d}.cu").write_bytes(text)
        cmd = [sys.executable, "-m", "grader.cli", "batch", str(cls), "--out", str(out), "--quiet",
               "--run-limit", args.run_limit] + (["--gpus", args.gpus] if args.gpus else [])
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode == EXIT_NO_GPU:
            print("batch_throughput: grade batch found no GPU; nothing measured", file=sys.stderr)
            return EXIT_NO_GPU
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            print(f"grade batch exited {proc.returncode}", file=sys.stderr)
            return 1
        rows = json.loads((out / "gradebook.json").read_text())["rows"]
    figures = summarise(rows, wall, names, args.copies)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    print_figures(figures)
    print(f"figures: {args.json}")
    return 0


def summarise(rows: list[dict], wall: float, names: list[str], copies: int) -> dict:
    """The benchmark's figures (module docstring) from the gradebook's rows and the batch's wall time."""
    devices = sorted({r["device"] for r in rows if r.get("device") is not None})
    gpus = max(1, len(devices))
    phases = {ph: [r["phases"].get(ph, 0.0) for r in rows if r.get("phases")] for ph in PHASES}
    by_example: dict[str, dict] = {}
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        groups[r["id"].rsplit("_", 1)[0]].append(r)
    for name, group in sorted(groups.items()):
        totals = [g["phases"].get("total", 0.0) for g in group if g.get("phases")]
        fractions = [g["fraction"] for g in group if g.get("fraction") is not None]
        by_example[name] = {
            "count": len(group),
            "verdicts": dict(Counter(g["verdict"] for g in group)),
            "mean_total_s": statistics.mean(totals) if totals else None,
            "fractions": fractions,
        }
    per_minute = len(rows) / (wall / 60)
    return {
        "submissions": len(rows),
        "examples": names,
        "copies": copies,
        "cards": sorted({r["gpu"] for r in rows if r.get("gpu")}),
        "gpus": gpus if devices else 0,
        "wall_s": wall,
        "per_minute": per_minute,
        "per_minute_per_gpu": per_minute / gpus,
        "goal_per_minute_per_gpu": GOAL_PER_MINUTE_PER_GPU,
        "phases_mean_s": {ph: statistics.mean(v) if v else 0.0 for ph, v in phases.items()},
        "phases_sum_s": {ph: sum(v) for ph, v in phases.items()},
        "slot_idle_s": wall * gpus - sum(phases["wall"]),
        "by_example": by_example,
    }


def print_figures(f: dict) -> None:
    where = f"{f['gpus']} GPU(s): {', '.join(f['cards'])}" if f["gpus"] else "no GPU (static checks only)"
    print(f"{f['submissions']} submissions in {f['wall_s']:.1f} s on {where}: {f['per_minute']:.1f} per minute, "
          f"{f['per_minute_per_gpu']:.1f} per minute per GPU (goal {f['goal_per_minute_per_gpu']})")
    total = f["phases_sum_s"]["total"] or 1.0
    table = [["start (process start, imports)", f"{f['phases_mean_s']['start']:.3f}", "overlapped*"]]
    table += [[ph, f"{f['phases_mean_s'][ph]:.3f}", f"{100 * f['phases_sum_s'][ph] / total:.1f}%"]
              for ph in PHASES if ph not in ("start", "total", "wall")]
    table.append(["total (in the worker)", f"{f['phases_mean_s']['total']:.3f}", "100.0%"])
    table.append(["wall (job sent to result received)", f"{f['phases_mean_s']['wall']:.3f}", ""])
    print(tabulate(table, headers=["phase", "mean s", "share of total"], tablefmt="simple"))
    print("* a standby worker starts while the previous submission runs; only a worker not ready in time "
          "delays its job (wall minus total)")
    print(f"slot idle: {f['slot_idle_s']:.1f} GPU-slot seconds outside any job")
    rows = [[name, e["count"], ", ".join(f"{k} {v}" for k, v in e["verdicts"].items()),
             "" if e["mean_total_s"] is None else f"{e['mean_total_s']:.2f}"] for name, e in f["by_example"].items()]
    print(tabulate(rows, headers=["example", "n", "verdicts", "mean s"], tablefmt="simple"))


if __name__ == "__main__":
    sys.exit(main())
