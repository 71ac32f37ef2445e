"""`grade batch` on a GPU: a folder of mixed submissions (gold, fail, compile error, hang, illegal address, trap,
misaligned float4 at 101 x 97, include attempt, wrong name, deep template) grades completely with the right
verdict and reason on every row, in two runs (the first stopped by --limit, the second resuming without
regrading), and Gradescope's results.json for a gold submission.

Skipped with the reason where no CUDA GPU is visible. The GPU is found by the batch's own probe (a child
process), so this test process never initialises CUDA.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.batch import command as batch

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "batch"
SUBS = ROOT / "submissions"

pytestmark = pytest.mark.gpu

# id: (source, verdict, stage, regular expression the reason must match, one the details must match or None)
MIXED = {
    "gold": (SUBS / "gold_float4.cu", "gold", "grade", r"of the copy floor", None),
    "tanh": (SUBS / "tanh_gelu.cu", "fail", "verify",
             r"first bad element \(row \d+, col \d+\): x \+ bias = \S+: got .*expected", None),
    "no_bounds": (SUBS / "no_bounds_check.cu", "fail", "verify", r"guard region", None),
    "compile_error": (SUBS / "compile_error.cu", "error", "compile", r"compile error", r"compile_error\.cu:\d+: error"),
    "hang": (DATA / "hang.cu", "error", "run", r"run time limit exceeded: the kernel did not finish within 60 s", None),
    "illegal_address": (DATA / "illegal_address.cu", "error", "run", r"CUDA_ERROR_ILLEGAL_ADDRESS", None),
    "trap": (DATA / "trap.cu", "error", "run", r"CUDA_ERROR_\w+", None),
    "misaligned_float4": (DATA / "misaligned_float4.cu", "error", "run", r"CUDA_ERROR_MISALIGNED_ADDRESS", r"101 x 97"),
    "include_passwd": (DATA / "include_passwd.cu", "error", "source", r"refused `#include`", None),
    "wrong_name": (DATA / "wrong_name.cu", "error", "compile", r"kernels found: biasGelu, addBias", None),
    "deep_template": (DATA / "deep_template.cu", "error", "compile", r"compile time limit exceeded", None),
}
LIMITS = ("--compile-limit", "10", "--run-limit", "60")


@pytest.fixture(scope="module")
def gpus():
    count, names, reason = batch.probe_gpus()
    if not count:
        pytest.skip(f"no CUDA GPU: {reason}")
    return names


def grade(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=900, cwd=ROOT)


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_mixed_folder_grades_every_row_right_and_resumes(tmp_path, gpus):
    cls = tmp_path / "class"
    cls.mkdir()
    for sid, (src, *_rest) in MIXED.items():
        shutil.copy(src, cls / f"{sid}.cu")
    out = tmp_path / "out"
    first = grade("batch", cls, "--out", out, "--limit", "5", *LIMITS)
    assert first.returncode == batch.EXIT_INCOMPLETE, first.stderr
    assert len(jsonl(out / "results.jsonl")) == 5
    second = grade("batch", cls, "--out", out, *LIMITS)
    assert second.returncode == 0, second.stderr
    lines = jsonl(out / "results.jsonl")
    assert sorted(r["id"] for r in lines) == sorted(MIXED), "a submission was graded twice or not at all"
    rows = {r["id"]: r for r in json.loads((out / "gradebook.json").read_text())["rows"]}
    problems = []
    for sid, (_src, verdict, stage, reason, details) in MIXED.items():
        r = rows[sid]
        ok = r["verdict"] == verdict and r["stage"] == stage and re.search(reason, r["reason"])
        ok = ok and (details is None or re.search(details, r["details"]))
        if not ok:
            problems.append(f"{sid}: {r['verdict']} / {r['stage']}: {r['reason']} | {r['details'][:300]}")
    assert not problems, "\n".join(problems)
    gold = rows["gold"]
    assert gold["fraction"] >= 0.9 and gold["floor_gbs"] > 0 and gold["gpu"] in gpus
    assert all(gold["phases"].get(p, 0) > 0 for p in ("start", "context", "compile", "verify", "time"))
    summary = (out / "summary.md").read_text()
    assert gold["gpu"] in summary and "Floor bandwidth: median" in summary
    third = grade("batch", cls, "--out", out, *LIMITS)
    assert third.returncode == 0 and len(jsonl(out / "results.jsonl")) == len(MIXED)


def test_gradescope_results_for_a_gold_submission(tmp_path, gpus):
    out = tmp_path / "results"
    r = grade("batch", SUBS / "gold_float4.cu", "--format", "gradescope", "--out", out, "--quiet")
    assert r.returncode == 0, r.stderr
    res = json.loads((out / "results.json").read_text())
    assert res["score"] == 10.0 and all(t["status"] == "passed" for t in res["tests"])
