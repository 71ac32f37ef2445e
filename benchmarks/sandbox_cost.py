"""What the NVRTC sandbox costs per compile: the same submission compiled confined and unconfined,
alternating, in one process. Needs no GPU (NVRTC compiles to a cubin for sm_90).

    python benchmarks/sandbox_cost.py [--reps 20] [--out results/sandbox_cost.json] [--cuda] [--bisect]

--cuda initialises the CUDA driver first, as grading does (a GPU is needed). --bisect also times the
compile confined with each top-level folder readable in turn, to find a file NVRTC misses when confined.

Writes the median seconds of each and their difference; exits 1 when the difference is over the goal
(0.1 s per compile, issue 8), 3 when Landlock is not available here.
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

from grader.compile import sandbox  # noqa: E402
from grader.compile.nvrtc import _compile  # noqa: E402
from grader.exercises import bias_gelu as exercise
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.source.read import read_submission  # noqa: E402

GOAL_S = 0.1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--file", default=str(ROOT / "submissions" / "gold_float4.cu"))
    p.add_argument("--out", default=str(ROOT / "results" / "sandbox_cost.json"))
    p.add_argument("--cuda", action="store_true", help="initialise the CUDA driver first, as grading does")
    p.add_argument("--bisect", action="store_true", help="time with each top-level folder readable in turn")
    args = p.parse_args()
    if args.cuda:
        from grader.gpu.device import open_gpu

        open_gpu(0)
    st = sandbox.state()
    if not st.available:
        print(f"sandbox_cost: no sandbox here: {st.reason}", file=sys.stderr)
        return 3
    sub = read_submission(args.file, BIAS_GELU)
    job = (sub.compile_text, sub.name, (exercise.KERNEL_NAME,), "sm_90")
    times: dict[str, list[float]] = {"confined": [], "unconfined": []}
    sandbox._run_in_thread(_compile, None, *job)  # NVRTC's first-compile set-up, outside both series
    for _ in range(args.reps):
        for kind, allowed in (("confined", st.allowed), ("unconfined", None)):
            t0 = time.perf_counter()
            sandbox._run_in_thread(_compile, allowed, *job)
            times[kind].append(time.perf_counter() - t0)
    if args.bisect:
        for top in ["/"] + sorted(str(p) for p in Path("/").iterdir() if p.is_dir() and not p.is_symlink()):
            times[f"confined + {top}"] = []
            for _ in range(max(3, args.reps // 4)):
                t0 = time.perf_counter()
                sandbox._run_in_thread(_with_folder, None, st.allowed, top, job)
                times[f"confined + {top}"].append(time.perf_counter() - t0)
        for label, scoped, net in (("no scopes", False, True), ("no network rules", True, False)):
            times[f"confined + {label}"] = []
            for _ in range(max(3, args.reps // 4)):
                t0 = time.perf_counter()
                sandbox._run_in_thread(_with_folder, None, st.allowed, None, job, scoped, net)
                times[f"confined + {label}"].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    result = {"file": Path(args.file).name, "reps": args.reps, "sandbox": st.describe(),
              "median_s": med, "cost_s": med["confined"] - med["unconfined"], "goal_s": GOAL_S}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(f"compile {result['file']}: confined {med['confined'] * 1e3:.1f} ms, unconfined "
          f"{med['unconfined'] * 1e3:.1f} ms, sandbox cost {result['cost_s'] * 1e3:+.1f} ms "
          f"(goal <= {GOAL_S * 1e3:.0f} ms; median of {args.reps}); {st.describe()}")
    for k, v in med.items():
        if k.startswith("confined + "):
            print(f"  {k}: {v * 1e3:.1f} ms")
    return 0 if result["cost_s"] <= GOAL_S else 1


def _with_folder(allowed: tuple[str, ...], top: str | None, job: tuple, scoped: bool = True,
                 net: bool = True) -> object:
    """In a fresh, unconfined thread: confine it to the sandbox's files plus everything under `top` (with
    or without the scopes and network rules), then compile `job` (a diagnostic variant of grader.compile.sandbox's
    ruleset, never used for grading)."""
    from landlockpy import AccessFS, AccessNet, Ruleset, Scope

    scope = Scope.ABSTRACT_UNIX_SOCKET | Scope.SIGNAL if scoped else Scope.NONE
    with Ruleset(scoped=scope, **({} if net else {"handled_net": AccessNet.NONE})) as rules:
        for path in allowed:
            rules.allow_path(path, AccessFS.READ_FILE)
        if top:
            rules.allow_path(top, AccessFS.READ_FILE | AccessFS.READ_DIR)
        rules.restrict()
    return _compile(*job)


if __name__ == "__main__":
    sys.exit(main())
