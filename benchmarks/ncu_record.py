"""Record, on a GPU with Nsight Compute, ncu's CSV log of the profiled child for each kernel, as
`grade FILE --counters` profiles it: the kernel, the model answer, the page's answer and the two copies, at the
card's benchmark shape; and, for the cause set of issue 29 (tests/data/causes, but its wrong outputs), the
source-level pass of grader.feedback.source_counters: the source page per SASS instruction and the details page
with Nsight Compute's guided-analysis rules. The logs are tests/data/ncu's h200_*.csv (tests/test_worth.py ranks
hints on them; tests/test_source_counters.py reads h200_source_*.csv and h200_details_*.csv).

    python3 benchmarks/ncu_record.py [--out DIR] [--hints] [--only STEM,...]

By default the cause set only (issue 23's hint kernels, FILES, were recorded already; --hints records them too).
Writes h200_<stem>.csv (trimmed: `trimmed`), h200_source_<stem>.csv and h200_details_<stem>.csv per kernel into
DIR/ncu_record.tgz (DIR: $OUT, or results/; packed again after each kernel, as the device tool brings back few
files) and prints one line per kernel: the raw rows' kernel names in launch order, the source page's instruction
rows and rules, and the seconds each pass took. It profiles through grader.feedback.counters (run_ncu,
profiled_child, METRICS) and grader.feedback.source_counters (run_source), so the files hold what `grade --counters`
reads. Exit status 0, 1 when a kernel could not be profiled, 3 without a GPU (one line on stderr).
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import re
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.core.errors import EXIT_NO_GPU, NoGpuError  # noqa: E402
from grader.exercises import DEFAULT, get  # noqa: E402
from grader.feedback.counters import (  # noqa: E402
    METRICS,
    CountersUnavailable,
    parse_csv,
    profiled_child,
    profiled_kernels,
    run_ncu,
)
from grader.feedback.source_counters import parse_rules, parse_source, run_source  # noqa: E402
from grader.gpu.device import visible_gpus  # noqa: E402

EXERCISE = get(DEFAULT)
"""The exercise every recorded kernel answers (biasGeluFused)."""
FILES = ("tests/data/hints/col_major.cu", "tests/data/hints/double.cu", "tests/data/hints/normcdf_scalar.cu",
         "tests/data/hints/normcdf.cu", "tests/data/hints/scalar.cu", "tests/data/hints/mod_cols.cu",
         "tests/data/silver/stride_float4.cu", "submissions/gold_float4.cu")
"""Issue 23's kernels (--hints): benchmarks/hint_check.py's, and normcdf.cu (the 16-byte normcdff kernel)."""
CAUSES = ROOT / "tests" / "data" / "causes"


def causes() -> list[str]:
    """The cause set's kernels whose output is right (a wrong one's expected first hint is its mistake)."""
    return [str(p.relative_to(ROOT)) for p in sorted(CAUSES.glob("*.cu"))
            if not re.match(r"// Expected first hint: mistake", p.read_text())]


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
    p.add_argument("--hints", action="store_true", help="also issue 23's hint kernels (raw page only)")
    p.add_argument("--only", default="", help="comma-separated file stems (default: all)")
    args = p.parse_args(argv)
    try:
        visible_gpus()
    except NoGpuError as err:
        print(f"ncu_record: no GPU: {err}", file=sys.stderr)
        return EXIT_NO_GPU
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    status = 0
    todo = [(f, False) for f in (FILES if args.hints else ())] + [(f, True) for f in causes()]
    todo = [(f, s) for f, s in todo if not args.only or Path(f).stem in args.only.split(",")]
    with tempfile.TemporaryDirectory(prefix="ncu-record-") as tmp:
        for path, source_level in todo:
            status |= record(path, Path(tmp), source_level)
            with tarfile.open(out / "ncu_record.tgz", "w:gz") as tar:
                for f in sorted(Path(tmp).glob("*.csv")):
                    tar.add(f, arcname=f.name)
    return status


def record(path: str, tmp: Path, source_level: bool) -> int:
    """Record one kernel's raw page (and with `source_level` its source and details pages) into `tmp`; print
    what was recorded; 0, or 1 when a pass failed."""
    stem, start = Path(path).stem, time.monotonic()
    log = tmp / f"h200_{stem}.csv"
    try:
        run_ncu(profiled_child(str(ROOT / path), EXERCISE), kernels=profiled_kernels(EXERCISE), metrics=METRICS,
                keep_log=log)
        log.write_text(trimmed(log.read_text()))
    except (CountersUnavailable, ValueError) as err:
        print(f"{path}: {err}", flush=True)
        return 1
    names = [row.get("Kernel Name", "?") for row in parse_csv(log.read_text())]
    print(f"{path}: {len(names)} rows ({time.monotonic() - start:.0f} s): {' | '.join(names)}", flush=True)
    if not source_level:
        return 0
    start = time.monotonic()
    try:
        source, details = run_source(profiled_child(str(ROOT / path), EXERCISE), EXERCISE.kernel_name)
    except CountersUnavailable as err:
        print(f"{path}: source level: {err}", flush=True)
        return 1
    (tmp / f"h200_source_{stem}.csv").write_text(source)
    (tmp / f"h200_details_{stem}.csv").write_text(details)
    blocks, rules = parse_source(source), parse_rules(details)
    print(f"{path}: source page {len(blocks)} kernel(s), {len(blocks[0]) if blocks else 0} instruction rows, "
          f"{len(rules)} rules ({time.monotonic() - start:.0f} s): {'; '.join(r[0] for r in rules)}", flush=True)
    if not blocks:
        print(f"{path}: no instruction rows read; the source page begins: {source[:600]!r}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
