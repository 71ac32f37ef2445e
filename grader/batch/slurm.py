"""`grade slurm-script`: print the Slurm job script that grades a class (grader/batch/grade-class.sh, shipped in
the package), its settings filled from the options.

The script is one file that submits itself (`bash grade-class.sh`): a job array 1..SHARDS of `grade batch --shard
K/SHARDS` tasks, one GPU each, and `grade merge --expect CLASS --shards SHARDS` as a job that runs once every
task has succeeded (`--dependency=afterok`, `--kill-on-invalid-dep=yes`). The count of shards is written once
(SHARDS); a task outside 1..SHARDS (an array submitted 0-3 by hand) exits 2 saying so, and the merge then names
the shard it lacks. Every job runs with `--export=NONE` and activates GRADER_ENV, so nothing of the login
shell's environment is needed. What each line does, and the single multi-GPU node route beside it:
docs/batch.md ("Several machines: Slurm, shards and `grade merge`"); tests/slurm_check.py runs the script on a real
one-node Slurm (CI).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from importlib import resources

from grader.core.errors import EXIT_INPUT, EXIT_PASS, exit_codes_help
from grader.core.options import HelpFormatter

TEMPLATE = "grade-class.sh"
"""The script's file in this package (its settings are @NAME@ placeholders)."""
DEFAULTS = {"class": "/shared/class", "out": "/shared/results", "shards": 4}
"""The settings printed without options: the docs' example paths and four shards."""


def default_env() -> str:
    """The Python environment this grader runs in (sys.prefix: a venv's or conda's folder), which the jobs
    activate."""
    return sys.prefix


def parser() -> argparse.ArgumentParser:
    """The argument parser of `grade slurm-script`."""
    p = argparse.ArgumentParser(
        prog="grade slurm-script", formatter_class=HelpFormatter,
        description="Print the Slurm job script that grades a class: an array of `grade batch --shard K/N` "
                    "tasks, one GPU each, and a merge that waits for them (afterok) and fails when a submission "
                    "has no row. Save it and run it on the login node: grade slurm-script --class DIR --out DIR "
                    "> grade-class.sh && bash grade-class.sh",
        epilog=exit_codes_help((EXIT_PASS, "printed"), (EXIT_INPUT, "usage error: bad option")))
    p.add_argument("--class", dest="class_dir", default=DEFAULTS["class"], metavar="DIR",
                   help=f"the class folder, seen by every node (default {DEFAULTS['class']})")
    p.add_argument("--out", default=DEFAULTS["out"], metavar="DIR",
                   help=f"the results, reports, logs and merged gradebook, seen by every node "
                        f"(default {DEFAULTS['out']})")
    p.add_argument("--shards", type=_whole, default=DEFAULTS["shards"], metavar="N",
                   help=f"array tasks 1..N, one GPU each (default {DEFAULTS['shards']})")
    p.add_argument("--max-running", type=_whole, metavar="M",
                   help="at most M tasks at once (sbatch --array=1-N%%M); default no limit")
    p.add_argument("--env", default=None, metavar="DIR",
                   help="the Python environment where the grader is installed, activated in every job "
                        "(default: this one, sys.prefix)")
    p.add_argument("--no-gpu-ok", action="store_true",
                   help="a task that finds no GPU (rows no-gpu: static checks only) succeeds, so the merge runs "
                        "(a test cluster without GPUs, as CI's)")
    return p


def _whole(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number >= 1")
    return int(text)


def _path(value: str, default: str) -> str:
    """A path setting: absolute (the jobs run elsewhere), unless it is the docs' example left as is."""
    return value if value == default else os.path.abspath(value)


def script(class_dir: str = DEFAULTS["class"], out: str = DEFAULTS["out"], shards: int = DEFAULTS["shards"],
           max_running: int | None = None, env: str | None = None, no_gpu_ok: bool = False) -> str:
    """The job script's text with its settings filled: `class_dir` and `out` (made absolute unless they are the
    example defaults), `shards` (N >= 1), `max_running` (None: no throttle), `env` (None: default_env()),
    `no_gpu_ok`. Each value is shell-quoted (shlex.quote). Raises ValueError for shards or max_running < 1."""
    if shards < 1 or (max_running is not None and max_running < 1):
        raise ValueError("shards and max_running are whole numbers >= 1")
    values = {"CLASS": _path(class_dir, DEFAULTS["class"]), "OUT": _path(out, DEFAULTS["out"]),
              "SHARDS": str(shards), "MAX_RUNNING": "" if max_running is None else str(max_running),
              "GRADER_ENV": env or default_env(), "NO_GPU_OK": "1" if no_gpu_ok else "0"}
    text = resources.files(__package__).joinpath(TEMPLATE).read_text(encoding="utf-8")
    for name, value in values.items():
        text = text.replace(f"@{name}@", shlex.quote(value) if value else "")
    return text


def run(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> int:
    """`grade slurm-script` on arguments parsed by parser(): print the script; returns EXIT_PASS."""
    sys.stdout.write(script(args.class_dir, args.out, args.shards, args.max_running, args.env, args.no_gpu_ok))
    return EXIT_PASS
