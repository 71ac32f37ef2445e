"""Record Nsight Compute's raw CSV of the hint kernels (issue 23) on a GPU, for the CPU tests' recorded counters
(tests/data/ncu/), with each kernel's graded fractions beside it. (tests/data/ncu/README.md says how the files
there were recorded: by an equivalent command line, before the profiled child launched the references itself.)

    python3 benchmarks/ncu_record.py [--out DIR] [--budget S] [FILE ...]

For each FILE (default: KERNELS) it runs `ncu --csv --page raw` over the grader's profiled child
(grader.profiled: the submission, the model answer, the page's answer and the two copies, once each) with
CANDIDATES, less the names this ncu does not list (`ncu --query-metrics-mode suffix`), and with
`--clock-control none` (the card's clocks are left alone). Then it grades each FILE in this one process
(grader.grade.grade_file, the chain table left out to save time) and writes its fractions, table and hints.
Everything goes into DIR/record.tar.gz (DIR: default $OUT or results/; the device tool brings back 8 files at
most), packed again after every step. Stops starting new steps after --budget seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.device import visible_gpus  # noqa: E402
from grader.errors import EXIT_NO_GPU, NoGpuError  # noqa: E402

KERNELS = ("tests/data/hints/col_major.cu", "tests/data/hints/double.cu", "tests/data/hints/normcdf_scalar.cu",
           "tests/data/hints/scalar.cu", "tests/data/hints/mod_cols.cu", "submissions/gold_float4.cu",
           "tests/data/hints/normcdf.cu", "tests/data/silver/stride_float4.cu")
PIPES = ("alu", "fma", "fmaheavy", "fmalite", "fp64", "xu", "lsu", "adu", "cbu", "uniform", "fp16", "tensor")
CANDIDATES = (
    "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum", "gpu__time_duration.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct",
    "smsp__inst_executed.sum", "smsp__cycles_elapsed.sum", "smsp__cycles_active.sum", "sm__cycles_elapsed.avg",
    "smsp__issue_active.avg.pct_of_peak_sustained_active", "smsp__issue_active.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active", "launch__registers_per_thread",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed", "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__throughput.avg.pct_of_peak_sustained_elapsed", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    *(f"sm__inst_executed_pipe_{p}.sum" for p in PIPES),
    *(f"sm__inst_executed_pipe_{p}.avg.pct_of_peak_sustained_elapsed" for p in PIPES),
    *(f"sm__pipe_{p}_cycles_active.avg.pct_of_peak_sustained_elapsed" for p in PIPES + ("shared",)),
)
FILTER = "regex:biasGeluFused|copyVec4|copyScalar"


def run(cmd: list[str], log: Path, timeout: float) -> int:
    """Run `cmd` with stdout and stderr into `log`; its exit status (124 on a timeout)."""
    with open(log, "wb") as f:
        try:
            return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            return 124


def valid_metrics(out: Path) -> list[str]:
    """CANDIDATES this ncu lists (suffix mode over their base names); all of them when the listing is unreadable."""
    bases = sorted({re.sub(r"\.(sum|avg|max|min|pct|ratio).*$", "", m) for m in CANDIDATES})
    log = out / "query_suffix.txt"
    run(["ncu", "--query-metrics-mode", "suffix", "--metrics", ",".join(bases)], log, 60)
    listed = set(re.findall(r"^\s*([a-z0-9_]+__[a-z0-9_.]+)", log.read_text(errors="replace"), re.M))
    good = [m for m in CANDIDATES if m in listed]
    (out / "metrics_used.txt").write_text("\n".join(good) + "\n\nleft out:\n" +
                                           "\n".join(m for m in CANDIDATES if m not in listed) + "\n")
    return good if len(good) >= len(CANDIDATES) // 2 else list(CANDIDATES)


def profile(path: str, metrics: list[str], out: Path) -> None:
    """ncu's raw CSV of the profiled child on `path` into out/ncu_NAME.csv; a metric ncu refuses is dropped
    and the run repeated (six times at most)."""
    name = Path(path).stem
    for _ in range(6):
        csv, log = out / f"ncu_{name}.csv", out / f"ncu_{name}.log"
        cmd = ["ncu", "--csv", "--page", "raw", "--print-units", "base", "--cache-control", "all",
               "--clock-control", "none", "--metrics", ",".join(metrics), "--kernel-name", FILTER,
               "--log-file", str(csv), sys.executable, "-m", "grader.profiled", path]
        rc = run(cmd, log, 90)
        text = log.read_text(errors="replace") + (csv.read_text(errors="replace") if csv.exists() else "")
        bad = re.findall(r"[Ff]ailed to find metric '?([\w.]+)", text)
        print(f"{name}: ncu exit {rc}{', refused ' + ', '.join(bad) if bad else ''}", flush=True)
        if not bad:
            return
        metrics = [m for m in metrics if m not in bad]


def pack(out: Path, into: Path) -> None:
    """out/ as into/record.tar.gz (again after every step: what a timeout leaves still comes back)."""
    with tarfile.open(into / "record.tar.gz", "w:gz") as tar:
        tar.add(out, arcname="record")


def grade_all(paths: list[str], out: Path, after) -> None:
    """Grade each path in this process (the chain table skipped), writing out/gradings.json and calling
    after() after each."""
    import grader.grade as g

    g.chain_table = lambda *a, **k: None
    results = {}
    for path in paths:
        r = g.grade_file(path)
        results[path] = {"verdict": r.verdict, "reason": r.reason, "fraction": r.fraction,
                         "fraction_of_scalar_copy": r.fraction_of_scalar_copy, "hints": [str(h) for h in r.hints],
                         "table": [t.model_dump() for t in r.table], "bench": [r.bench_rows, r.bench_cols]}
        print(f"{path}: {r.verdict} {r.fraction} (x scalar copy {r.fraction_of_scalar_copy})", flush=True)
        (out / "gradings.json").write_text(json.dumps(results, indent=1))
        after()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="*", default=list(KERNELS))
    p.add_argument("--out", default=os.environ.get("OUT", "results"), help="folder of record.tar.gz")
    p.add_argument("--budget", type=float, default=230.0, help="seconds after which no new step starts")
    args = p.parse_args(argv)
    try:
        visible_gpus()
    except NoGpuError as err:
        print(f"ncu_record: no GPU: {err}", file=sys.stderr)
        return EXIT_NO_GPU
    if shutil.which("ncu") is None:
        print("ncu_record: no Nsight Compute (`ncu` not on PATH)", file=sys.stderr)
        return EXIT_NO_GPU
    out = Path(tempfile.mkdtemp(prefix="ncu-record-")) / "record"
    out.mkdir()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    run(["ncu", "--version"], out / "ncu_version.txt", 30)
    run(["ncu", "--query-metrics"], out / "query_metrics.txt", 60)
    metrics = valid_metrics(out)
    for path in args.files:
        if time.monotonic() - start < args.budget * 0.6:
            profile(path, metrics, out)
            pack(out, Path(args.out))
    if time.monotonic() - start < args.budget:
        grade_all(args.files, out, lambda: pack(out, Path(args.out)))
    print(f"done in {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
