"""Record, on a GPU with Nsight Compute, ncu's CSV log of the profiled child for each hint kernel, as
`grade FILE --counters` profiles it: the kernel, the model answer, the page's answer and the two copies, at the
card's benchmark shape. The logs are tests/data/ncu's h200_*.csv (tests/test_worth.py ranks hints on them).

    python3 benchmarks/ncu_record.py [--out DIR]

Writes h200_<stem>.csv per kernel (trimmed: `trimmed`) into DIR/ncu_record.tgz (DIR: $OUT, or results/; packed
again after each kernel, as the device tool brings back 8 files at most) and prints one line per kernel: the
rows' kernel names in launch order. It profiles through grader.feedback.counters (run_ncu, profiled_child, METRICS), so
the files hold what `grade --counters` reads. Exit status 0, 1 when a kernel could not be profiled, 3 without a
GPU (one line on stderr).
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.feedback.counters import (METRICS, PROFILED_KERNELS, CountersUnavailable, parse_csv, profiled_child,
                                      run_ncu)  # noqa: E402
from grader.gpu.device import visible_gpus  # noqa: E402
from grader.errors import EXIT_NO_GPU, NoGpuError  # noqa: E402

FILES = ("tests/data/hints/col_major.cu", "tests/data/hints/double.cu", "tests/data/hints/normcdf_scalar.cu",
         "tests/data/hints/normcdf.cu", "tests/data/hints/scalar.cu", "tests/data/hints/mod_cols.cu",
         "tests/data/silver/stride_float4.cu", "submissions/gold_float4.cu")
"""The kernels recorded: benchmarks/hint_check.py's, and normcdf.cu (the 16-byte normcdff kernel)."""


IDENTITY = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
            "Grid Size", "Device", "CC")


def trimmed(text: str) -> str:
    """ncu's CSV log cut to the identity columns and those grader.feedback.counters.METRICS reads (the raw page also
    holds some 400 device attributes), the header, units row and values as ncu wrote them; other lines dropped.
    Raises ValueError naming a metric the log lacks."""
    rows = list(csv.reader(io.StringIO("\n".join(line for line in text.splitlines() if line.startswith('"')))))
    header = rows[0]
    missing = [m for m in METRICS if m not in header]
    if missing:
        raise ValueError(f"ncu's log lacks {', '.join(missing)}")
    keep = [header.index(c) for c in (*IDENTITY, *METRICS)]
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows([[r[i] for i in keep] for r in rows])
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT", "results"), help="folder of ncu_record.tgz")
    args = p.parse_args(argv)
    try:
        visible_gpus()
    except NoGpuError as err:
        print(f"ncu_record: no GPU: {err}", file=sys.stderr)
        return EXIT_NO_GPU
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    status = 0
    with tempfile.TemporaryDirectory(prefix="ncu-record-") as tmp:
        for path in FILES:
            log = Path(tmp) / f"h200_{Path(path).stem}.csv"
            try:
                run_ncu(profiled_child(str(ROOT / path)), kernels=PROFILED_KERNELS, metrics=METRICS, keep_log=log)
                log.write_text(trimmed(log.read_text()))
            except (CountersUnavailable, ValueError) as err:
                print(f"{path}: {err}", flush=True)
                status = 1
                continue
            names = [row.get("Kernel Name", "?") for row in parse_csv(log.read_text())]
            print(f"{path}: {len(names)} rows: {' | '.join(names)}", flush=True)
            with tarfile.open(out / "ncu_record.tgz", "w:gz") as tar:
                for f in sorted(Path(tmp).glob("*.csv")):
                    tar.add(f, arcname=f.name)
    return status


if __name__ == "__main__":
    sys.exit(main())
