"""Performance record of the reference kernels: run the self-check with timing (gates first, then the RoPE,
chain and bf16 tables against the copy floor, printed as `grade selfcheck` prints them) and write each
kernel's fraction of the floor, and the issue's goals, to a JSON file. Where PyTorch and a CUDA device are
present, also time F.gelu(x + b) eager and torch.compile on the chain's shape and print them beside ours.

    python benchmarks/reference_perf.py [--out results/reference_perf.json] [--layout bshd|bhsd] [--no-torch]
                                        [--quick]

Not a test: it writes figures. Exit 3 without a GPU, 1 if a gate fails (nothing is timed then), else 0
(goals that are not met are reported in the file and on stdout, not as an exit code).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from tabulate import tabulate

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.core.errors import EXIT_FAIL, EXIT_NO_GPU, EXIT_PASS, NoGpuError  # noqa: E402
from grader.exercises.bias_gelu.page_kernels import FUSED  # noqa: E402
from grader.gpu.device import open_gpu  # noqa: E402
from grader.timing.timer import gbs  # noqa: E402
from reference_kernels.selfcheck import run_selfcheck  # noqa: E402
from reference_kernels.selfcheck_report import byte_counts, goals  # noqa: E402
from reference_kernels.suite import compile_suite  # noqa: E402
from reference_kernels.timed import QUICK  # noqa: E402

TORCH_REPS = 20
QUICK_SIZES = {"rope": 1 << 16, "chain": (16, 4096), "bf16": 1 << 16}


def torch_gelu(rows: int, cols: int, floor_gbs: float) -> dict:
    """Median ms of F.gelu(x + b) eager, torch.compile'd, and of torch's own copy (out.copy_(x)) on float32
    [rows, cols] with a [cols] bias, CUDA events, TORCH_REPS launches after warm-up. Bytes are the page's
    model for the fused kernel: x read and out written (8 per element; the eager temporary x + b is not
    counted, which is what makes eager slow). Fractions are of our copy floor and of torch's copy.
    Returns {'skipped': reason} when PyTorch or its CUDA device is missing."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as err:
        return {"skipped": f"torch is not importable ({err})"}
    if not torch.cuda.is_available():
        return {"skipped": "torch sees no CUDA device"}
    x = torch.empty(rows, cols, device="cuda").uniform_(-4.0, 4.0)
    b = torch.empty(cols, device="cuda").uniform_(-0.5, 0.5)
    out = torch.empty_like(x)

    def eager():
        return F.gelu(x + b)

    fns = {"torch copy_": lambda: out.copy_(x), "F.gelu(x + b) eager": eager}
    try:
        fns["F.gelu(x + b) torch.compile"] = torch.compile(eager)
        fns["F.gelu(x + b) torch.compile"]()
    except Exception as err:  # noqa: BLE001 - reported, never fatal
        fns.pop("F.gelu(x + b) torch.compile", None)
        compile_error = f"{type(err).__name__}: {str(err)[:200]}"
    else:
        compile_error = None
    result = {"rows": rows, "cols": cols, "version": torch.__version__}
    for name, fn in fns.items():
        for _ in range(3):
            fn()
        times = []
        for _ in range(TORCH_REPS):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        result[name] = {"ms": statistics.median(times)}
    copy_ms = result["torch copy_"]["ms"]
    for name in fns:
        entry = result[name]
        entry["gbs"] = gbs(rows * cols * 8, entry["ms"])
        entry["x_our_floor"] = entry["gbs"] / floor_gbs
        entry["x_torch_copy"] = copy_ms / entry["ms"]
    if compile_error:
        result["torch.compile error"] = compile_error
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="results/reference_perf.json", help="JSON file to write")
    p.add_argument("--layout", choices=("bshd", "bhsd"), default="bshd", help="RoPE layout timed")
    p.add_argument("--no-torch", action="store_true", help="skip the PyTorch comparison")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: small buffers and a few rounds (checks the script; the numbers mean nothing)")
    args = p.parse_args(argv)
    try:
        gpu = open_gpu()
    except NoGpuError as err:
        print(f"reference_perf: no GPU: {err}", file=sys.stderr)
        return EXIT_NO_GPU
    print(byte_counts() + "\n")
    quick = {"settings": QUICK, "sizes": QUICK_SIZES} if args.quick else {}
    result = run_selfcheck(gpu, compile_suite(gpu.info.arch), layout=args.layout,
                           emit=lambda text: print(text + "\n", flush=True), **quick)
    if not result.passed:
        print("reference_perf: a gate failed; nothing was timed", file=sys.stderr)
        return EXIT_FAIL
    record = {
        "gpu": gpu.info.model_dump(),
        "quick": args.quick,
        "fractions": {t.name: {r.version: r.x_copy for r in t.rows} for t in result.tables},
        "floors_gbs": {t.name: t.floor_gbs for t in result.tables},
        "goals": goals(result.tables),
        "predictions": [p.model_dump() for p in result.predictions],
        "tables": [t.model_dump() for t in result.tables],
    }
    chain = result.table("chain")
    rows_, cols_ = chain.matrix
    if not args.no_torch:
        record["torch"] = torch_gelu(rows_, cols_, chain.floor_gbs)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2))

    print(tabulate([[g["version"], f"{g['goal']:.2f}", f"{g['fraction']:.3f}", "met" if g["met"] else "NOT MET"]
                    for g in record["goals"]], headers=["goal (wide kernels)", "goal", "x copy", ""],
                   disable_numparse=True))
    torch_rec = record.get("torch", {"skipped": "--no-torch"})
    if "skipped" in torch_rec:
        print(f"\nPyTorch comparison skipped: {torch_rec['skipped']}")
    else:
        ours = [[r.version, f"{r.ms:.4f}", f"{r.gbs:.1f}", f"{r.x_copy:.3f}"] for r in chain.rows
                if r.version.startswith(("biasGeluFused<", f"{FUSED}<"))]
        theirs = [[name, f"{v['ms']:.4f}", f"{v['gbs']:.1f}", f"{v['x_our_floor']:.3f} ({v['x_torch_copy']:.2f} of "
                   "torch copy_)"] for name, v in torch_rec.items() if isinstance(v, dict)]
        print(f"\nSame shape ({rows_} x {cols_}), ours beside PyTorch {torch_rec['version']} "
              "(bytes: x read, out written; the fused chain also reads r)")
        print(tabulate(ours + theirs, headers=["version", "ms", "GB/s", "x copy"], disable_numparse=True))
        if "torch.compile error" in torch_rec:
            print(f"torch.compile failed: {torch_rec['torch.compile error']}")
    print(f"\nwrote {out}")
    return EXIT_PASS


if __name__ == "__main__":
    sys.exit(main())
