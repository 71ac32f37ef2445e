"""Measurement record: grade each example submission several times on this GPU and write, per submission,
the fraction of the copy floor (median, min, max, spread) and whether the verdict ever changed.

    python benchmarks/stability.py [--repeats 5] [--out results/stability.json] [FILES...]

Not a test: it writes figures. Needs a CUDA GPU (exit 3 without one).
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

from grader.core.errors import EXIT_NO_GPU, NoGpuError  # noqa: E402
from grader.gpu.device import open_gpu  # noqa: E402
from grader.pipeline.grade import grade_file  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="*", help="submissions (default: submissions/*.cu)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", default="results/stability.json")
    args = p.parse_args(argv)
    try:
        gpu = open_gpu()
    except NoGpuError as err:
        print(f"stability: no GPU: {err}", file=sys.stderr)
        return EXIT_NO_GPU
    files = args.files or sorted(str(f) for f in (ROOT / "submissions").glob("*.cu"))
    record = {"gpu": gpu.info.model_dump(), "repeats": args.repeats, "submissions": {}}
    rows = []
    for f in files:
        reports = [grade_file(f) for _ in range(args.repeats)]
        fr = [r.fraction for r in reports if r.fraction is not None]
        verdicts = [r.verdict for r in reports]
        entry = {
            "verdicts": verdicts,
            "verdict_changed": len(set(verdicts)) > 1,
            "fractions": fr,
            "median": statistics.median(fr) if fr else None,
            "min": min(fr) if fr else None,
            "max": max(fr) if fr else None,
            "spread": (max(fr) - min(fr)) / statistics.median(fr) if fr else None,
            "floor_gbs": [r.floor_gbs for r in reports],
            "borderline": [r.borderline for r in reports],
        }
        record["submissions"][Path(f).name] = entry
        rows.append([Path(f).name, ",".join(sorted(set(verdicts))), entry["median"], entry["min"], entry["max"],
                     f"{100 * entry['spread']:.2f}%" if fr else "-", entry["verdict_changed"]])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2))
    print(tabulate(rows, headers=["submission", "verdicts", "median", "min", "max", "spread", "changed"],
                   floatfmt=".4f"))
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
