"""The GPUs of a batch: which cards this machine has, asked of a short-lived `python -m grader.batch.worker --probe`
(the batch's own process never initialises CUDA: a forked or later-spawned CUDA user must start clean), and one
worker slot per GPU chosen (--gpus), or CPU slots without one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from grader.batch import worker
from grader.batch.pool import child_env
from grader.core.errors import EXIT_INCOMPLETE

PROBE_TIMEOUT = 120.0
PROBE_COMMAND = [sys.executable, "-m", worker.__name__, "--probe"]


@dataclass
class GpuPlan:
    """The CUDA_VISIBLE_DEVICES entry of each worker slot (None: no GPU), the card names, why there is no GPU
    when there is none, and `problem`: why nothing can be graded here at all (an incomplete install, a GPU the
    installed NVRTC cannot compile for), with the exit code `problem_exit` the batch stops with."""

    entries: list[str | None]
    names: list[str]
    reason: str = ""
    problem: str = ""
    problem_exit: int = 0


def run_probe() -> dict:
    """The answer of a short-lived `python -m grader.batch.worker --probe` child (grader.batch.worker.probe): count,
    names and reason, plus problem and exit when nothing can be graded (this process never initialises CUDA: a
    forked or later-spawned CUDA user must start clean). A probe that fails means no GPU, with the reason."""
    try:
        out = subprocess.run(PROBE_COMMAND, capture_output=True,
                             timeout=PROBE_TIMEOUT, env=child_env(None), cwd=tempfile.gettempdir(), text=True)
        info = json.loads(out.stdout.strip().splitlines()[-1])
        return {**info, "count": int(info["count"]), "names": list(info["names"])}
    except (subprocess.TimeoutExpired, OSError, ValueError, IndexError, KeyError) as err:
        return {"count": 0, "names": [], "reason": f"the GPU probe failed ({type(err).__name__})"}


def probe_gpus() -> tuple[int, list[str], str]:
    """(count, names, reason) of the GPUs visible to this process's environment (run_probe)."""
    info = run_probe()
    return info["count"], info["names"], str(info.get("reason", ""))[:120]


def plan_gpus(gpus: list[int] | None, workers: int) -> GpuPlan:
    """One slot per visible GPU (or per entry of `gpus`, positions among the visible ones: [0, 2] for --gpus 0,2);
    `workers` slots without a GPU when none is visible. Raises ValueError when `gpus` names a GPU that is not
    visible, or any GPU when none is (a --gpus that names no GPU must not grade without one in silence)."""
    info = run_probe()
    count, names, reason = info["count"], info["names"], str(info.get("reason", ""))[:120]
    if info.get("problem"):
        return GpuPlan(entries=[], names=names, reason=reason, problem=str(info["problem"]),
                       problem_exit=int(info.get("exit", EXIT_INCOMPLETE)))
    if count == 0 and gpus:
        raise ValueError(f"--gpus {','.join(map(str, gpus))}: no GPU is visible here ({reason or 'none found'}); "
                         "leave --gpus out to run the static checks without one")
    if count == 0:
        return GpuPlan(entries=[None] * max(1, workers), names=[], reason=reason)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [e.strip() for e in visible.split(",")][:count] if visible else [str(i) for i in range(count)]
    chosen = list(range(count))
    if gpus:
        chosen = list(gpus)
        if any(not 0 <= g < count for g in chosen) or len(set(chosen)) != len(chosen):
            raise ValueError(f"--gpus {','.join(map(str, gpus))}: {count} GPU(s) visible, give distinct positions "
                             f"0..{count - 1}")
    return GpuPlan(entries=[ids[g] for g in chosen], names=[names[g] for g in chosen])
