"""What the hints from the machine code cost per submission: grader.feedback.sass.sass_facts (write the cubin, run the
disassembler, parse its listing) on the examples and tests/data/hints/, with each disassembler found here.
Needs no GPU (NVRTC compiles to a cubin for sm_90); needs nvdisasm or cuobjdump (pip install ".[sass]").

    python benchmarks/sass_cost.py [--reps 3] [--out results/sass_cost.json]

Writes the median and largest seconds per tool; exits 1 when a median is over the goal (1 s per submission,
issue 12), 3 when there is no disassembler here.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.compile.nvrtc import compile_kernels  # noqa: E402
from grader.exercises import bias_gelu as exercise
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.feedback import sass  # noqa: E402
from grader.source.read import read_submission  # noqa: E402

GOAL_S = 1.0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--out", default=str(ROOT / "results" / "sass_cost.json"))
    args = p.parse_args()
    tools = [t for t in (sass.find_tool("nvdisasm"), sass.find_tool("cuobjdump")) if t]
    if not tools:
        print("sass_cost: no disassembler here (pip install \".[sass]\")", file=sys.stderr)
        return 3
    files = [f for f in sorted((ROOT / "submissions").glob("*.cu")) if f.name != "compile_error.cu"]
    files += sorted((ROOT / "tests" / "data" / "hints").glob("*.cu"))
    kernels = []
    for f in files:
        sub = read_submission(f, BIAS_GELU)
        c = compile_kernels(sub.compile_text, sub.name, (exercise.KERNEL_NAME,), args.arch)
        kernels.append((f.name, c.cubin, c.kernels[exercise.KERNEL_NAME].mangled))
    result: dict = {"arch": args.arch, "reps": args.reps, "tools": {}}
    worst = 0.0
    for tool in tools:
        times: dict[str, list[float]] = {}
        for _ in range(args.reps):
            for name, cubin, mangled in kernels:
                t0 = time.perf_counter()
                facts = sass.sass_facts(cubin, mangled, tool)
                times.setdefault(name, []).append(time.perf_counter() - t0)
                if facts is None:
                    print(f"sass_cost: {tool.tool} gave no facts for {name}", file=sys.stderr)
        flat = [t for ts in times.values() for t in ts]
        median = statistics.median(flat)
        worst = max(worst, median)
        result["tools"][tool.tool] = {"path": tool.path, "median_s": median, "max_s": max(flat),
                                      "per_file_median_s": {n: statistics.median(ts) for n, ts in times.items()}}
        print(f"{tool.tool}: median {median:.3f} s, max {max(flat):.3f} s over {len(flat)} runs "
              f"({len(kernels)} kernels x {args.reps}); slowest file "
              f"{max(times, key=lambda n: statistics.median(times[n]))}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    return 1 if worst > GOAL_S else 0


if __name__ == "__main__":
    sys.exit(main())
