"""The GPU check of issues 23 and 29: does the first hint name the cause, with and without counters?

    python3 benchmarks/hint_check.py [--out DIR] [--only STEM,...] [--no-counters] [--hints]

Grades each kernel of the cause set (tests/data/causes/*.cu: each file's first comment names its expected first
hint without counters and, after "; with counters:", with them; with --hints also issue 23's, EXPECTED) with
`grade FILE --json`, then again with `--counters` (not for a wrong output: nothing to profile), and prints one
line per grading as it goes, then a table: the kernel, its fraction of the copy floor, the expected and the
actual first hint without and with counters, what each first hint is estimated to be worth, and a count of the
right first hints ("plain: 14/16 right; with counters: 10/12 right"). `none` is a kernel with no hint.

Writes into DIR ($OUT, or results/): hint_check.txt (the lines and the table), hint_check.tgz (every report, JSON
and text) and hint_check_gradings.json (each plain grading trimmed to what tests/test_causes.py reads: commit it as
tests/data/ncu/h200_cause_gradings.json). Exit status 0 when every first hint is the expected one, 1 when one is
not, 3 without a GPU (one line on stderr, no figure).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from tabulate import tabulate

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from grader.core.errors import EXIT_NO_GPU, NoGpuError  # noqa: E402
from grader.gpu.device import visible_gpus  # noqa: E402

CAUSES = ROOT / "tests" / "data" / "causes"
EXPECTED = {
    "tests/data/hints/col_major.cu": ("scattered", "scattered"),
    "tests/data/hints/double.cu": ("double", "double"),
    "tests/data/hints/normcdf_scalar.cu": ("width", "width"),
    "tests/data/hints/scalar.cu": ("width", "width"),
    "tests/data/hints/mod_cols.cu": ("width", "width"),
    "tests/data/silver/stride_float4.cu": ("grid", "grid"),
    "submissions/gold_float4.cu": ("none", "none"),
}
"""Issue 23's kernels: the first hint's kind without and with counters on the H200 ('none': no hint), as
tests/test_worth.py ranks them on their recorded counters."""
_EXPECT = re.compile(r"^// Expected first hint: (\w+)(?:[^;\n]*; with counters: (\w+))?")
KEEP = ("verdict", "stage", "reason", "bench_rows", "bench_cols", "table", "floor_version", "floor_gbs", "fraction",
        "fraction_low", "fraction_high", "fraction_of_scalar_copy", "gpu", "clocks")
"""What hint_check_gradings.json keeps of each plain grading (tests/test_causes.py ranks on it)."""


def expectations(hints: bool = False) -> dict[str, tuple[str, str]]:
    """{path relative to the repository: (first hint kind without counters, with counters)}: the cause set's, and
    with `hints` issue 23's."""
    found = {}
    for p in sorted(CAUSES.glob("*.cu")):
        m = _EXPECT.match(p.read_text())
        if m:
            found[str(p.relative_to(ROOT))] = (m.group(1), m.group(2) or m.group(1))
    return found | (EXPECTED if hints else {})


def grade(path: str, counters: bool, exercise: str = "", plain: str = "", render: bool = True
          ) -> tuple[dict, str, float]:
    """(the JSON report, the text report ("" unless `render`), seconds) of one grading; `exercise`: its --exercise
    (default: the default exercise); `plain`: an extra option for a grading without --counters ("--no-counters")."""
    cmd = [sys.executable, "-m", "grader.cli", path, "--json"] + (["--counters"] if counters else
                                                                    [plain] if plain else [])
    cmd += ["--exercise", exercise] if exercise else []
    start = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=280, cwd=ROOT)
    seconds = time.monotonic() - start
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        report = {"verdict": "?", "reason": done.stderr[-500:], "hints": []}
    program = ("import json, sys; from grader.output.report import GradeReport, render_text; "
               "print(render_text(GradeReport.model_validate(json.load(sys.stdin))))")
    text = subprocess.run([sys.executable, "-c", program], input=done.stdout, capture_output=True, text=True,
                          cwd=ROOT).stdout if report.get("file") and render else ""
    return report, text, seconds


def first(report: dict) -> tuple[str, str]:
    """(the first hint's kind, 'none' without one; what it is estimated to be worth, '-' without an estimate)."""
    hints = [h for h in report.get("hints", []) if isinstance(h, dict)]
    if not hints:
        return "none", "-"
    h = hints[0]
    worth = f"{h['fraction_after'] - h['fraction_now']:+.3f}" if h.get("saved_ms") is not None else "-"
    return h.get("kind", "") or "?", worth + (" (tie: " + h["tie"] + ")" if h.get("tie") else "")


def line(path: str, counters: bool, report: dict, seconds: float, want: str) -> str:
    """One line for a grading, as it finishes."""
    kind, worth = first(report)
    kinds = ", ".join(h.get("kind", "") for h in report.get("hints", []) if isinstance(h, dict))
    fraction = report.get("fraction")
    why = (report.get("counters") or {}).get("unavailable", "")
    return (f"{'OK ' if kind == want else 'BAD'} {Path(path).name:24s} {'--counters' if counters else 'plain     '} "
            f"{report.get('verdict', '?'):7s} {f'{fraction:.3f}' if fraction is not None else '-':6s} first={kind} "
            f"({worth}) expected={want} [{kinds}] {seconds:.0f} s" + (f" (counters: {why})" if why else ""))


def pack(out: Path, files: dict[str, str]) -> None:
    with tarfile.open(out / "hint_check.tgz", "w:gz") as tar:
        for name, body in files.items():
            data = body.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def blind(out: Path, only: str, deadline: float) -> int:
    """Grade the blind set (blind_replay.kernels) without counters (--no-counters), every kernel first, then with
    them (the slow-looking ones first); write blind_gradings.json (the reports, the recording blind_replay.py
    replays: commit it as tests/data/blind/h200_gradings.json; the text reports are rendered from it, no GPU needed)
    and blind_check.txt (a line per grading, the table, the figures) into `out`; print the figures. Exit status 0."""
    import blind_replay as br

    start = time.monotonic()
    sets = [k for k in br.kernels() if not only or k.stem in only.split(",")]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip()
    rec: dict = {"commit": commit, "date": time.strftime("%Y-%m-%d"), "kernels": {}}
    lines = []

    def fraction(k) -> float:
        return (rec["kernels"].get(k.stem, {}).get("plain") or {}).get("fraction") or 0.0

    for counters in (False, True):
        for k in sorted(sets, key=fraction) if counters else sets:  # with counters: the slowest first
            if deadline and time.monotonic() - start > deadline:
                lines.append(f"deadline: {k.stem} {'--counters' if counters else 'plain'} and the rest not graded")
                break
            plain = (rec["kernels"].get(k.stem) or {}).get("plain") or {}
            if counters and plain.get("verdict") not in ("gold", "silver", "fail"):
                continue  # wrong, or not graded: nothing to profile
            report, _, seconds = grade(k.path, counters, k.exercise, "--no-counters", render=False)
            mode = "counters" if counters else "plain"
            rec["kernels"].setdefault(k.stem, {})[mode] = report
            s = br.scored(report)
            lines.append(f"{k.stem:32s} {mode:8s} {s.verdict:7s} "
                         f"{f'{s.fraction:.3f}' if s.fraction is not None else '-':6s} [{', '.join(s.kinds)}] "
                         f"({k.klass}{': ' + k.cause if k.cause else ''}) {seconds:.0f} s")
            print(lines[-1], flush=True)
            (out / "blind_gradings.json").write_text(json.dumps(rec, indent=1))
            (out / "blind_check.txt").write_text("\n".join(lines) + "\n")
    results = {stem: {m: br.scored(r) for m, r in e.items()} for stem, e in rec["kernels"].items()}
    result = br.score(results, sets)
    summary = br.table(results, sets) + "\n\n" + br.figures(result)
    print("\n" + summary)
    (out / "blind_check.txt").write_text("\n".join(lines) + "\n\n" + summary + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT", "results"), help="folder of the summary and the reports")
    p.add_argument("--only", default="", help="comma-separated file stems to grade (default: all)")
    p.add_argument("--no-counters", action="store_true", help="grade without --counters only")
    p.add_argument("--hints", action="store_true", help="also issue 23's hint kernels (EXPECTED)")
    p.add_argument("--blind", action="store_true",
                   help="grade the blind set (tests/data/blind/) instead, --no-counters and --counters, and print "
                        "its two figures (benchmarks/blind_replay.py)")
    p.add_argument("--deadline", type=float, default=0.0, metavar="S",
                   help="with --blind: start no grading after S seconds (0: no limit); what is done is kept")
    args = p.parse_args(argv)
    try:
        visible_gpus()  # no context here: each grading opens its own, and would see this one as a neighbour
    except NoGpuError as err:
        print(f"hint_check: no GPU: {err}", file=sys.stderr)
        return EXIT_NO_GPU
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.blind:
        return blind(out, args.only, args.deadline)
    wanted = {k: v for k, v in expectations(args.hints).items()
              if not args.only or Path(k).stem in args.only.split(",")}
    lines, rows, files, gradings = [], [], {}, {}
    right = {False: [0, 0], True: [0, 0]}
    for path, (plain_want, counters_want) in wanted.items():
        row = [Path(path).stem]
        for counters in (False, True):
            if counters and (args.no_counters or plain_want == "mistake"):
                row += ["", "", "", ""]
                continue
            report, text, seconds = grade(path, counters)
            # a plain grading of a slow kernel measures its counters unasked (grade.add_counters): judged as with them
            unasked = not counters and bool(report.get("counters")) and not report["counters"].get("unavailable")
            want = counters_want if counters or unasked else plain_want
            lines.append(line(path, counters, report, seconds, want))
            print(lines[-1], flush=True)
            (out / "hint_check.txt").write_text("\n".join(lines) + "\n")  # what a timeout leaves
            kind, worth = first(report)
            right[counters][0] += kind == want
            right[counters][1] += 1
            row += [want, kind, worth, "OK" if kind == want else "BAD"]
            if not counters:
                fraction = report.get("fraction")
                row.insert(1, f"{fraction:.3f}" if fraction is not None else report.get("verdict"))
                gradings[Path(path).stem] = {k: report[k] for k in KEEP if k in report}
            stem = Path(path).stem + ("_counters" if counters else "")
            files[f"{stem}.json"], files[f"{stem}.txt"] = json.dumps(report, indent=1), text
        rows.append(row)
        pack(out, files)
        (out / "hint_check_gradings.json").write_text(json.dumps(gradings, indent=1))
    table = tabulate(rows, headers=["kernel", "fraction", "expected", "first hint", "worth", "", "expected (counters)",
                                    "first (counters)", "worth", ""])
    counts = (f"plain: {right[False][0]}/{right[False][1]} right first hints; with counters: "
              f"{right[True][0]}/{right[True][1]}")
    print("\n" + table + "\n\n" + counts)
    (out / "hint_check.txt").write_text("\n".join(lines) + "\n\n" + table + "\n\n" + counts + "\n")
    return 0 if all(r[0] == r[1] for r in right.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
