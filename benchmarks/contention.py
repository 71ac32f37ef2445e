"""Verdicts on a shared GPU: each file graded on a quiet GPU, then beside a process streaming copies, beside
one running long kernels, and as several `grade` runs at once. A verdict must equal the quiet one or be
withheld ("busy", exit 5); a fraction given under load must be within 2% of the quiet one.

    python benchmarks/contention.py [FILE ...] [--out results/contention.json] [--quiet-wait S]

Default files: submissions/gold_float4.cu, submissions/page_scalar.cu, tests/data/silver/stride_float4.cu.
Writes a JSON of every grading and prints a table. Exits 0 when every check holds, 1 when one fails,
3 without a GPU. `--load copy|long` runs only the load (until killed): the script starts it itself.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FILES = ["submissions/gold_float4.cu", "submissions/page_scalar.cu", "tests/data/silver/stride_float4.cu"]
TOLERANCE = 0.02
SPIN = ('extern "C" __global__ void spin(long long cycles) { long long t = clock64(); '
        'while (clock64() - t < cycles) {} }')


def run_load(mode: str) -> None:
    """Keep the GPU busy until killed: `copy` streams 16-byte copies of 2 GiB; `long` runs kernels of about
    100 ms that occupy every SM."""
    import numpy as np

    from grader.compile.nvrtc import compile_kernels
    from grader.gpu.device import open_gpu
    from grader.timing.timer import FLOOR_VEC4, CopyFloor

    gpu = open_gpu(0)
    if mode == "copy":
        n = 512 * 2**20
        src, dst = gpu.alloc(4 * n), gpu.alloc(4 * n)
        launch = CopyFloor(gpu).launches(src, dst, n)[FLOOR_VEC4]
    else:
        spin = gpu.load(compile_kernels(SPIN, "spin.cu", ("spin",), gpu.info.arch))["spin"]
        grid = (gpu.info.multiprocessors * 8, 1, 1)
        launch = lambda: gpu.launch(spin, grid, (256, 1, 1), np.int64(200_000_000))  # noqa: E731
    while True:
        for _ in range(4):
            launch()
        gpu.sync()


def grade(path: str, env: dict[str, str]) -> dict:
    """`grade PATH --format json` in a fresh process: verdict, fraction, exit code, seconds, reason."""
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "grader.cli", path, "--format", "json"], capture_output=True,
                       text=True, cwd=ROOT, env=env, timeout=600)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        doc = {"verdict": "invalid output", "reason": (r.stdout + r.stderr)[-300:]}
    return {"file": Path(path).name, "verdict": doc.get("verdict"), "fraction": doc.get("fraction"),
            "exit": r.returncode, "seconds": round(time.monotonic() - t0, 1), "reason": doc.get("reason", "")[:400]}


def check(quiet: dict, loaded: dict) -> str:
    """'' when `loaded` agrees with `quiet` (same verdict, fraction within TOLERANCE) or is withheld."""
    if loaded["verdict"] == "busy":
        return ""
    if loaded["verdict"] != quiet["verdict"]:
        return f"verdict {loaded['verdict']} (quiet: {quiet['verdict']})"
    q, f = quiet.get("fraction"), loaded.get("fraction")
    if q and f and abs(f / q - 1) > TOLERANCE:
        return f"fraction {f:.3f} is {100 * (f / q - 1):+.1f}% from the quiet {q:.3f}"
    return ""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="*", default=FILES)
    p.add_argument("--out", default=str(ROOT / "results" / "contention.json"))
    p.add_argument("--quiet-wait", type=float, default=5.0, help="GRADER_QUIET_WAIT_S for the gradings")
    p.add_argument("--concurrent", type=int, default=3, help="gradings of the first file started at once")
    p.add_argument("--load", choices=("copy", "long"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.load:
        run_load(args.load)
        return 0
    from grader.core.errors import NoGpuError
    from grader.gpu.device import visible_gpus

    try:
        visible_gpus()
    except NoGpuError as err:
        print(f"contention: needs a GPU ({err})", file=sys.stderr)
        return 3
    from tabulate import tabulate

    env = {**os.environ, "GRADER_QUIET_WAIT_S": str(args.quiet_wait),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    runs = {"quiet": [grade(f, env) for f in args.files]}
    for mode in ("copy", "long"):
        load = subprocess.Popen([sys.executable, __file__, "--load", mode], cwd=ROOT, env=env)
        time.sleep(4)
        runs[mode] = [grade(f, env) for f in args.files]
        load.kill()
        load.wait()
    t0 = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-m", "grader.cli", args.files[0], "--format", "json"], cwd=ROOT,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(args.concurrent)]
    runs["concurrent"] = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        try:
            doc = json.loads(out)
        except ValueError:
            doc = {"verdict": "invalid output", "reason": (out + err)[-300:]}
        runs["concurrent"].append({"file": Path(args.files[0]).name, "verdict": doc["verdict"],
                                   "fraction": doc.get("fraction"), "exit": proc.returncode,
                                   "waited": "waiting for its turn" in err, "reason": doc.get("reason", "")[:400]})
    concurrent_s = time.monotonic() - t0
    problems = []
    rows = []
    for i, q in enumerate(runs["quiet"]):
        row = [q["file"], f"{q['verdict']} {q['fraction'] or math.nan:.3f}"]
        for mode in ("copy", "long"):
            r = runs[mode][i]
            row.append(f"{r['verdict']} {r['fraction'] or math.nan:.3f} ({r['seconds']} s)")
            if check(q, r):
                problems.append(f"{q['file']} beside {mode}: {check(q, r)}")
        rows.append(row)
    for r in runs["concurrent"]:
        if check(runs["quiet"][0], r):
            problems.append(f"{r['file']} concurrent: {check(runs['quiet'][0], r)}")
    print(tabulate(rows, headers=["file", "quiet", "beside copies", "beside long kernels"]))
    print(f"{args.concurrent} at once: " + ", ".join(f"{r['verdict']} {r['fraction'] or math.nan:.3f}"
                                                      for r in runs["concurrent"])
          + f" in {concurrent_s:.0f} s; {sum(r['waited'] for r in runs['concurrent'])} waited for a turn")
    for mode in ("copy", "long"):
        for r in runs[mode]:
            if r["verdict"] == "busy":
                print(f"  {mode}: {r['file']}: {r['reason'][:300]}")
    print("\n".join(problems) or "every verdict equals the quiet one or is withheld")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"runs": runs, "problems": problems, "tolerance": TOLERANCE}, indent=2))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
