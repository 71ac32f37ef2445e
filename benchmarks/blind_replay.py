"""The blind set (tests/data/blind/, issue 39): kernels written by someone who had not read the hint code, each
saying in its first line whether it is slow and for which one cause, or fast; and how the hints score on them.

    python3 benchmarks/blind_replay.py [RECORDING] [--only STEM,...] [--show]

Without a GPU: replays RECORDING (default tests/data/blind/h200_gradings.json, written on the H200 by
`benchmarks/hint_check.py --blind`): each kernel's two recorded gradings (`grade FILE --json --no-counters` and
`grade FILE --json --counters`) keep their measurements (the times, the counters), and the hints are made again
from them by this tree's code (grader.pipeline.grade.hints_for on the kernel compiled here), so a change of the hint
code is scored on the set without a GPU. The machine code is this machine's NVRTC's (the H200's image has an older
one: a replay is close to, not the same as, a grading there; hint_check.py --blind grades there).

A first line reads `// Blind: slow; cause: CAUSE; ...` or `// Blind: fast; form: ...`. The figures (score):
- recall: of the slow kernels whose output is right and whose fraction of the copy floor is under GOLD, the share
  whose first hint is of a kind that names their cause (CAUSE_KINDS), without and with counters;
- false hints: of the kernels whose output is right and whose fraction is at or above GOLD (slow-labelled ones
  that measured gold among them), the share that get any hint at all, without and with counters. A hint there is
  a premise to check by hand: each is listed.
Kernels whose output is wrong are listed apart: they measure the writer, not the hints.
Exit status 0; 2 when RECORDING cannot be read.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BLIND = ROOT / "tests" / "data" / "blind"
RECORDING = BLIND / "h200_gradings.json"
GOLD = 0.90
"""grader.core.exercise.GOLD, written here so that reading the headers needs no grader import."""

CAUSE_KINDS = {
    "rewrite": {"bytes", "stores", "passes"},
    "reread": {"bytes", "passes"},
    "uncoalesced": {"scattered"},
    "width": {"width"},
    "division": {"division"},
    "registers": {"registers", "occupancy"},
    "shared": {"shared", "occupancy"},
    "grid": {"grid", "occupancy"},
    "blocks": {"blocks", "occupancy"},
    "work": {"work"},
    "math": {"work", "math"},
    "double": {"double", "work"},
    "local": {"local"},
    "fence": {"fence"},
    "atomic": {"atomic"},
    "idle": {"idle"},
}
"""The hint kinds (grader.feedback.hint.HintKind values) whose text names each cause of the blind set's headers:
bytes over the byte model (the counters' DRAM bytes), an element stored twice or a buffer swept twice (the machine
code) name a rewrite; too few warps in flight (the counters) names registers, shared memory, a small grid or small
blocks; extra work per element (the counters' instructions and pipes) names a costly math function and double math.
Fixed before any kernel of the set was graded; "unexplained" and "slow" name no cause."""

_HEADER = re.compile(r"^// Blind: (slow|fast);\s*(?:cause|form):\s*([^;\n]+)")


@dataclass(frozen=True)
class Kernel:
    """One kernel of the set: its path (relative to the repository), exercise, class ("slow", "fast") and cause
    (a CAUSE_KINDS key; "" for a fast one)."""

    path: str
    exercise: str
    klass: str
    cause: str

    @property
    def stem(self) -> str:
        return Path(self.path).stem


def kernels(root: Path = BLIND) -> list[Kernel]:
    """The set's kernels: every .cu under `root`/<exercise>/ with a blind header. Raises ValueError naming a file
    whose first line is not one, or whose cause is not in CAUSE_KINDS."""
    out = []
    for p in sorted(root.glob("*/*.cu")):
        m = _HEADER.match(p.read_text(errors="replace"))
        if not m:
            raise ValueError(f"{p}: its first line must be `// Blind: slow; cause: CAUSE; ...` or "
                             "`// Blind: fast; form: ...`")
        klass, what = m.group(1), m.group(2).strip()
        if klass == "slow" and what not in CAUSE_KINDS:
            raise ValueError(f"{p}: cause {what!r} is not one of {', '.join(CAUSE_KINDS)}")
        out.append(Kernel(str(p.relative_to(ROOT)), p.parent.name, klass, what if klass == "slow" else ""))
    return out


@dataclass
class Scored:
    """A kernel's outcome in one mode: its verdict, fraction and hints' kinds (first first), and texts."""

    verdict: str
    fraction: float | None
    kinds: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)

    @property
    def correct(self) -> bool:
        return self.verdict in ("gold", "silver", "fail") and self.fraction is not None


def scored(report: dict) -> Scored:
    """Scored of a report's JSON (a GradeReport's model_dump)."""
    hints = [h for h in report.get("hints", []) if isinstance(h, dict)]
    return Scored(report.get("verdict", "?"), report.get("fraction"), [h.get("kind", "") for h in hints],
                  [h.get("text", "") for h in hints])


def names_cause(k: Kernel, s: Scored) -> bool:
    """Whether the first hint of `s` is of a kind that names `k`'s cause."""
    return bool(s.kinds) and s.kinds[0] in CAUSE_KINDS.get(k.cause, set())


def score(results: dict[str, dict[str, Scored]], sets: list[Kernel]) -> dict:
    """The figures of the module docstring from `results` ({stem: {"plain": Scored, "counters": Scored}}):
    {"recall": {mode: (right, of)}, "false": {mode: (with a hint, of)}, "wrong": [stems], "gold": {mode: [(stem,
    kinds)]}, "missed": {mode: [(stem, cause, first kind)]}}."""
    out = {"recall": {}, "false": {}, "wrong": [], "gold": {}, "missed": {}}
    for mode in ("plain", "counters"):
        right = of = hinted = gold = 0
        out["gold"][mode], out["missed"][mode] = [], []
        for k in sets:
            s = results.get(k.stem, {}).get(mode)
            if s is None or not s.correct:
                continue
            if s.fraction >= GOLD:
                gold += 1
                if s.kinds:
                    hinted += 1
                    out["gold"][mode].append((k.stem, s.kinds))
            elif k.klass == "slow":
                of += 1
                if names_cause(k, s):
                    right += 1
                else:
                    out["missed"][mode].append((k.stem, k.cause, s.kinds[0] if s.kinds else "none"))
        out["recall"][mode], out["false"][mode] = (right, of), (hinted, gold)
    out["wrong"] = sorted({k.stem for k in sets for s in results.get(k.stem, {}).values() if not s.correct})
    return out


def figures(result: dict) -> str:
    """The two figures per mode, as hint_check.py and this script print them."""
    lines = []
    for mode, words in (("plain", "without counters"), ("counters", "with counters")):
        r, f = result["recall"][mode], result["false"][mode]
        share = f"{r[0] / r[1]:.0%}" if r[1] else "-"
        lines.append(f"{words}: first hint names the cause for {r[0]}/{r[1]} slow kernels ({share}); "
                     f"{f[0]}/{f[1]} kernels at or above {GOLD:.2f} of the floor get a hint")
    return "\n".join(lines)


def replay_one(k: Kernel, report: dict, counters: bool) -> Scored:
    """The hints this tree's code gives from `report` (a recorded grading's JSON): counters dropped unless
    `counters`."""
    from grader import exercises
    from grader.output.report import GradeReport
    from grader.pipeline.grade import compile_submission, hints_for
    from grader.source.read import read_submission

    r = GradeReport.model_validate(report)
    if not counters:
        r.counters = None
    ex = exercises.get(k.exercise)
    if r.compile is not None and r.verdict not in ("error", "no-gpu"):
        sub = read_submission(ROOT / k.path, ex)
        compiled = compile_submission(sub, ex, r.compile.arch)
        r.hints = hints_for(compiled, r, None, ex)
    return scored(r.model_dump(mode="json"))


def replay(recording: dict, sets: list[Kernel]) -> dict[str, dict[str, Scored]]:
    """{stem: {"plain": Scored, "counters": Scored}} of every kernel of `sets` the recording holds."""
    out = {}
    for k in sets:
        entry = recording.get("kernels", {}).get(k.stem)
        if not entry:
            continue
        out[k.stem] = {mode: replay_one(k, entry[mode], mode == "counters") for mode in ("plain", "counters")
                       if entry.get(mode)}
    return out


def table(results: dict[str, dict[str, Scored]], sets: list[Kernel]) -> str:
    """One line per kernel: class and cause, verdict and fraction, first hints without and with counters."""
    from tabulate import tabulate

    rows = []
    for k in sets:
        r = results.get(k.stem, {})
        p, c = r.get("plain"), r.get("counters")
        frac = p.fraction if p and p.fraction is not None else None
        rows.append([k.stem, k.exercise, k.klass + (f" ({k.cause})" if k.cause else ""),
                     p.verdict if p else "-", f"{frac:.3f}" if frac is not None else "-",
                     ", ".join(p.kinds[:3]) if p else "-", ", ".join(c.kinds[:3]) if c else "-"])
    return tabulate(rows, headers=["kernel", "exercise", "class", "verdict", "fraction", "hints", "with counters"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("recording", nargs="?", default=str(RECORDING), help="the recorded gradings (JSON)")
    p.add_argument("--only", default="", help="comma-separated stems to replay (default: all)")
    p.add_argument("--show", action="store_true", help="print every hint's text of the kernels listed")
    args = p.parse_args(argv)
    try:
        recording = json.loads(Path(args.recording).read_text())
    except (OSError, ValueError) as err:
        print(f"blind_replay: cannot read {args.recording}: {err}", file=sys.stderr)
        return 2
    sets = [k for k in kernels() if not args.only or k.stem in args.only.split(",")]
    results = replay(recording, sets)
    result = score(results, sets)
    print(table(results, sets) + "\n")
    if args.show:
        for k in sets:
            for mode, s in results.get(k.stem, {}).items():
                for t in s.texts:
                    print(f"{k.stem} [{mode}] {t}\n")
    for mode in ("plain", "counters"):
        for stem, cause, kind in result["missed"][mode]:
            print(f"missed ({mode}): {stem}: cause {cause}, first hint {kind}")
        for stem, kinds in result["gold"][mode]:
            print(f"gold with a hint ({mode}): {stem}: {', '.join(kinds)}")
    if result["wrong"]:
        print("wrong output (left out): " + ", ".join(result["wrong"]))
    print(figures(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
