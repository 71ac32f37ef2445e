"""RoPE only: the RoPE gates, then the RoPE table (both widths, against grader.timing.timer.CopyFloor in the same
AlternatingTimer) in each layout, and each kernel's fraction of the floor with the issue's goals to a JSON
file. A short loop for work on rope.cu; benchmarks/reference_perf.py is the whole record.

    python benchmarks/rope_perf.py [--out results/rope_perf.json] [--layout bshd|bhsd|both] [--quick]

Not a test: it writes figures. Exit 3 without a GPU, 1 if a gate fails (nothing is timed then), else 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.core.errors import EXIT_FAIL, EXIT_NO_GPU, EXIT_PASS, NoGpuError  # noqa: E402
from grader.gpu.device import open_gpu  # noqa: E402
from grader.timing.timer import (
    CopyFloor,  # noqa: E402
    TimerSettings,  # noqa: E402
)
from reference_kernels import expected as ref  # noqa: E402
from reference_kernels.gates import rope_gates  # noqa: E402
from reference_kernels.selfcheck import DEFAULT_SEED  # noqa: E402
from reference_kernels.selfcheck_report import goals, table_text  # noqa: E402
from reference_kernels.suite import compile_suite, load_suite  # noqa: E402
from reference_kernels.timed import QUICK, rope_table  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="results/rope_perf.json", help="JSON file to write")
    p.add_argument("--layout", choices=(*ref.LAYOUTS, "both"), default="both", help="layout(s) timed")
    p.add_argument("--quick", action="store_true", help="smoke run: small tensors, a few rounds")
    args = p.parse_args(argv)
    try:
        gpu = open_gpu()
    except NoGpuError as err:
        print(f"rope_perf: no GPU: {err}", file=sys.stderr)
        return EXIT_NO_GPU
    compiled = compile_suite(gpu.info.arch)
    for name, info in compiled["rope.cu"].kernels.items():
        print(f"{name}: {info.registers} registers, {info.spill_stores} bytes spilled")
    loaded = load_suite(gpu, compiled)
    gates = rope_gates(gpu, loaded, np.random.default_rng(DEFAULT_SEED))
    failed = [g for g in gates if not g.passed]
    print(f"\nRoPE gates: {len(gates) - len(failed)} of {len(gates)} passed")
    for g in failed:
        print(f"  [FAIL] {g.name}: {g.detail}")
    if failed:
        return EXIT_FAIL
    settings, elements = (QUICK, 1 << 16) if args.quick else (TimerSettings(), None)
    floor = CopyFloor(gpu)
    record = {"gpu": gpu.info.model_dump(), "quick": args.quick, "gates": len(gates), "layouts": {}}
    for layout in ref.LAYOUTS if args.layout == "both" else (args.layout,):
        table = rope_table(gpu, loaded, floor, settings, layout, elements=elements)
        print("\n" + table_text(table), flush=True)
        record["layouts"][layout] = {"fractions": {r.version: r.x_copy for r in table.rows},
                                     "floor_gbs": table.floor_gbs, "goals": goals([table]),
                                     "table": table.model_dump()}
        for g in record["layouts"][layout]["goals"]:
            print(f"  {g['version']}: {g['fraction']:.3f} of the floor (goal {g['goal']:.2f}) "
                  f"{'met' if g['met'] else 'NOT MET'}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2))
    print(f"\nwrote {out}")
    return EXIT_PASS


if __name__ == "__main__":
    sys.exit(main())
