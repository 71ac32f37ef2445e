"""The GPU check of issue 23: does the first hint name the measured cause?

    python3 benchmarks/hint_check.py [--out DIR]

Grades each hint kernel of EXPECTED with `grade FILE --counters --json`, and the column-major one also without
--counters (it is under half the one-float copy, so `grade FILE` measures its counters unasked), then prints one
line per grading: the fraction of the copy floor, the fraction of the one-float copy, the kinds of its hints in
rank order with what each is estimated to be worth, and OK where the first hint is the expected one. Writes the
reports (JSON and text) into DIR/hint_check.tgz and the summary into DIR/hint_check.txt (DIR: $OUT, or
results/). Exit status 0 when every first hint is the expected one, 1 when one is not, 3 without a GPU (one line
on stderr, no figure).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.gpu.device import visible_gpus  # noqa: E402
from grader.errors import EXIT_NO_GPU, NoGpuError  # noqa: E402

EXPECTED = {
    "tests/data/hints/col_major.cu": "scattered",
    "tests/data/hints/double.cu": "work",
    "tests/data/hints/normcdf_scalar.cu": "width",
    "tests/data/hints/scalar.cu": "width",
    "tests/data/hints/mod_cols.cu": "width",
    "tests/data/silver/stride_float4.cu": "occupancy",
    "submissions/gold_float4.cu": None,
}
"""The first hint's kind each kernel should get on the H200 (None: no hint), from its recorded counters
(tests/data/ncu; tests/test_worth.py checks the same ranking on them)."""
UNASKED = "tests/data/hints/col_major.cu"


def grade(path: str, counters: bool) -> tuple[dict, str, float]:
    """(the JSON report, the text report, seconds) of one grading."""
    cmd = [sys.executable, "-m", "grader.cli", path, "--json"] + (["--counters"] if counters else [])
    start = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=280)
    seconds = time.monotonic() - start
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        report = {"verdict": "?", "reason": done.stderr[-500:], "hints": []}
    text = subprocess.run([sys.executable, "-c", "import json, sys; from grader.output.report import GradeReport, "
                           "render_text; print(render_text(GradeReport.model_validate(json.load(sys.stdin))))"],
                          input=done.stdout, capture_output=True, text=True).stdout if report.get("file") else ""
    return report, text, seconds


def summary(path: str, counters: bool, report: dict, seconds: float) -> tuple[str, bool]:
    """One line for a grading, and whether its first hint is the expected one."""
    hints = report.get("hints", [])
    kinds = [h.get("kind", "") if isinstance(h, dict) else "" for h in hints]
    expected = EXPECTED[path]
    ok = (kinds[0] if kinds else None) == expected
    worth = ", ".join(f"{h.get('kind')} {h['fraction_after'] - h['fraction_now']:+.3f}" if h.get("saved_ms") is not None
                      else f"{h.get('kind')} -" for h in hints)
    fraction, x1f = report.get("fraction"), report.get("fraction_of_scalar_copy")
    nums = f"{fraction:.3f} x1f {x1f:.3f}" if fraction is not None and x1f is not None else report.get("verdict", "?")
    why = (report.get("counters") or {}).get("unavailable", "")
    return (f"{'OK ' if ok else 'BAD'} {Path(path).name:20s} {'--counters' if counters else 'plain     '} {nums}  "
            f"first={kinds[0] if kinds else None} expected={expected}  [{worth}] {seconds:.0f} s"
            + (f"  (counters: {why})" if why else "")), ok


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT", "results"), help="folder of the summary and the reports")
    args = p.parse_args(argv)
    try:
        visible_gpus()  # no context here: each grading opens its own, and would see this one as a neighbour
    except NoGpuError as err:
        print(f"hint_check: no GPU: {err}", file=sys.stderr)
        return EXIT_NO_GPU
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = [(path, True) for path in EXPECTED] + [(UNASKED, False)]
    lines, good, files = [], True, {}
    for path, counters in runs:
        report, text, seconds = grade(path, counters)
        line, ok = summary(path, counters, report, seconds)
        print(line, flush=True)
        lines.append(line)
        good &= ok
        stem = Path(path).stem + ("" if counters else "_plain")
        files[f"{stem}.json"], files[f"{stem}.txt"] = json.dumps(report, indent=1), text
        (out / "hint_check.txt").write_text("\n".join(lines) + "\n")
        with tarfile.open(out / "hint_check.tgz", "w:gz") as tar:
            for name, body in files.items():
                data = body.encode()
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
