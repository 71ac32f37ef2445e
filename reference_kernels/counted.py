"""`grade selfcheck --counters`: every reference kernel's DRAM bytes per element measured by Nsight Compute
beside its byte model, and the page's two cache assumptions settled.

The page's byte model leaves out two reads because it assumes they hit in cache: the bias row of the chain
kernels ("an assumption about the cache, not an arithmetic fact, and Nsight Compute counters are what settle
it") and RoPE's cos/sin tables ("after the first few blocks those reads are L2 hits"). The child process
(`python -m reference_kernels.counted --plan PATH`) builds the self-check's timed tables at the benchmark sizes
and launches every version once (grader.timing.timer's TableTimer with one round), plus RoPE at a sequence long
enough that its tables are LONG_TABLE_L2_MULTIPLE x the L2 size; grader.feedback.counters runs it under ncu (caches
flushed before each launch) and the launches are matched to versions in order.

Findings (each held or refuted, like the page's predictions):
1. the bias row is not DRAM traffic: every row-grid chain kernel at width 4 moves at most its model (which
   leaves the bias out) plus BIAS_SLACK; counted per element, the bias would add 4 bytes to 8 or 12;
2. the RoPE tables are L2 hits at the page's sequence (2048): ropeInterleaved and ropeHalfSplit move at most
   their model plus BIAS_SLACK; at the long sequence the report gives what the tables cost (bytes per element
   over the model).

The measured numbers on the H200: docs/reference-kernels.md.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path

from pydantic import BaseModel
from tabulate import tabulate

from grader.feedback.counters import CountersUnavailable, kernel_base, kernel_counters, run_ncu

BIAS_SLACK = 0.05
"""A cache-resident read must not add more than this share to a kernel's modeled bytes."""
LONG_TABLE_L2_MULTIPLE = 4
"""The long-sequence RoPE case: cos and sin together are this many times the L2 size."""
LONG_HEADS, HEAD_DIM = 4, 128
SKIPPED = ("fillUniform", "toBf16")
"""Kernels the child launches that are not measured (inputs)."""


class VersionBytes(BaseModel):
    """One version's measured DRAM bytes: its table, label, modeled and measured bytes per element (the sum over
    its kernels), L2 bytes per element, and the kernels ncu saw."""

    table: str
    label: str
    modeled: float
    measured: float | None
    l2: float | None = None
    kernels: list[str] = []


class Finding(BaseModel):
    """One settled assumption: what was assumed, what was measured, held or refuted."""

    assumption: str
    measured: str
    held: bool


class SuiteCounters(BaseModel):
    """The counters of the self-check: tool, one VersionBytes per measured version, the findings, or the
    reason none could be measured."""

    tool: str = ""
    versions: list[VersionBytes] = []
    findings: list[Finding] = []
    unavailable: str = ""

    def get(self, table: str, label: str) -> VersionBytes | None:
        """The version labelled `label` in `table`, or None."""
        return next((v for v in self.versions if v.table == table and v.label == label), None)


def suite_counters(arch: str | None = None, device: int = 0) -> SuiteCounters:
    """Run the child under ncu and match its launches to versions (module docstring). Never raises: when the
    counters cannot be read, `unavailable` says why."""
    with tempfile.TemporaryDirectory(prefix="grade-counted-") as tmp:
        plan_path = Path(tmp) / "plan.json"
        child = [sys.executable, "-m", "reference_kernels.counted", "--device", str(device), "--plan", str(plan_path)]
        try:
            tool, rows = run_ncu(child, timeout_s=600)
            plan = json.loads(plan_path.read_text())
        except CountersUnavailable as err:
            return SuiteCounters(unavailable=str(err))
        except (OSError, ValueError) as err:
            return SuiteCounters(unavailable=f"the profiled run wrote no launch plan ({err})")
    return suite_counters_from(tool, rows, plan)


def suite_counters_from(tool: str, rows: list[dict[str, str]], plan: list[dict]) -> SuiteCounters:
    """Match ncu's rows (launch order) to the child's plan: a list of {"table", "label", "kernels" (count),
    "elements", "modeled"} in launch order; kernels named in SKIPPED are passed over."""
    measured = [r for r in rows if kernel_base(r.get("Kernel Name", "")) not in SKIPPED]
    out = SuiteCounters(tool=tool)
    at = 0
    for step in plan:
        mine = measured[at: at + step["kernels"]]
        at += step["kernels"]
        if len(mine) < step["kernels"]:
            break
        ks = [kernel_counters(step["label"], r, step["elements"]) for r in mine]
        total = _sum([k.dram_per_elem for k in ks])
        l2 = _sum([k.per_elem(k.l2_bytes) for k in ks])
        out.versions.append(VersionBytes(table=step["table"], label=step["label"], modeled=step["modeled"],
                                         measured=total, l2=l2, kernels=[k.kernel for k in ks]))
    out.findings = settle(out)
    return out


def _sum(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else sum(values)


def settle(c: SuiteCounters) -> list[Finding]:
    """The page's two cache assumptions, held or refuted by the measured bytes (module docstring)."""
    found = []
    chain = [v for v in c.versions if v.table == "chain" and v.label.endswith("<4>") and v.measured is not None
             and v.label.split("<")[0] in ("addBiasRow", "biasGeluFused", "biasGeluResidualFused")]
    if chain:
        worst = max(chain, key=lambda v: v.measured / v.modeled)
        found.append(Finding(
            assumption="the bias row is not DRAM traffic (chain row-grid kernels, width 4)",
            measured=", ".join(f"{v.label} {v.measured:.2f} of {v.modeled:g}" for v in chain) +
            f" bytes per element; counted per element the bias would add 4 (worst {worst.measured / worst.modeled:.3f}"
            " of the model)",
            held=all(v.measured <= v.modeled * (1 + BIAS_SLACK) for v in chain)))
    page = [v for v in c.versions if v.table == "RoPE" and v.label.split("<")[0] in ("ropeInterleaved", "ropeHalfSplit")
            and v.measured is not None]
    long = [v for v in c.versions if v.table == "RoPE long" and v.measured is not None]
    if page:
        text = ", ".join(f"{v.label} {v.measured:.2f} of {v.modeled:g}" for v in page) + " bytes per element"
        if long:
            cost = max(v.measured - v.modeled for v in long)
            text += (f"; at the long sequence (tables {LONG_TABLE_L2_MULTIPLE}x the L2) the tables cost up to "
                     f"{cost:.2f} bytes per element ({cost / long[0].modeled:.1%} over the model)")
        found.append(Finding(assumption="RoPE's cos/sin tables are L2 hits at the page's sequence length (2048)",
                             measured=text, held=all(v.measured <= v.modeled * (1 + BIAS_SLACK) for v in page)))
    return found


def counters_text(c: SuiteCounters) -> str:
    """The self-check's counters section: measured beside modeled bytes per element, then the findings."""
    if c.unavailable:
        return f"Counters: not measured: {c.unavailable}"
    rows = [[v.table, v.label, f"{v.modeled:g}", "-" if v.measured is None else f"{v.measured:.2f}",
             "-" if v.measured is None else f"{v.measured / v.modeled:.3f}", "-" if v.l2 is None else f"{v.l2:.2f}"]
            for v in c.versions]
    lines = [f"Measured bytes per element ({c.tool}, one launch each, caches flushed)",
             tabulate(rows, headers=["table", "version", "modeled", "DRAM measured", "measured/modeled", "L2"]),
             "", "The page's cache assumptions"]
    lines += [f"  {'held' if f.held else 'refuted'}: {f.assumption}: {f.measured}" for f in c.findings]
    return "\n".join(lines)


def long_sequence(l2_bytes: int) -> int:
    """The sequence length at which cos and sin (each seq x HEAD_DIM / 2 floats) are LONG_TABLE_L2_MULTIPLE x
    the L2 size."""
    return math.ceil(LONG_TABLE_L2_MULTIPLE * l2_bytes / (2 * HEAD_DIM // 2 * 4))


def child(device: int = 0) -> list[dict]:
    """In the profiled process: every timed version once (one round of each table), in a known order; returns
    the plan (launch order) that suite_counters_from matches ncu's rows with."""
    from grader.gpu.device import open_gpu
    from grader.timing.timer import CopyFloor, TimerSettings
    from reference_kernels.suite import compile_suite, load_suite
    from reference_kernels.timed import bf16_table, chain_table, rope_table

    once = TimerSettings(warmup_ms=0.0, min_reps=1, target_rse=math.inf, cap_s=0.0)
    gpu = open_gpu(device)
    loaded = load_suite(gpu, compile_suite(gpu.info.arch))
    floor = CopyFloor(gpu)
    tables = [rope_table(gpu, loaded, floor, once),
              rope_table(gpu, loaded, floor, once, shd=(long_sequence(gpu.info.l2_bytes), LONG_HEADS, HEAD_DIM),
                         name="RoPE long"),
              chain_table(gpu, loaded, floor, once), bf16_table(gpu, loaded, floor, once)]
    gpu.sync()
    plan = []
    for t in tables:
        for r in t.rows:
            if r.version.startswith("cuMemcpy"):
                continue  # a copy engine transfer, not a kernel
            plan.append({"table": t.name, "label": r.version, "kernels": r.kernels,
                         "elements": t.copy_elements if r.is_floor else t.elements,
                         "modeled": r.values_per_elem * r.value_bytes})
    return plan


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(prog="python -m reference_kernels.counted")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--plan", help="write the launch plan (JSON) here")
    a = ap.parse_args()
    result = child(a.device)
    if a.plan:
        with open(a.plan, "w", encoding="utf-8") as f:
            json.dump(result, f)
    sys.exit(0)
