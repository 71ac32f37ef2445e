"""grade FILE's watchdog (grader.pipeline.watchdog): a stage past its run limit and a Ctrl-C while the main thread is
stuck (as inside a CUDA driver wait for a kernel that never ends) both end the process at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import ROOT
from grader.pipeline import watchdog

STUCK = """
import signal, sys, threading
from grader.pipeline.watchdog import Watchdog
def expired(stage, seconds):
    print(f"expired {stage} after {seconds}", file=sys.stderr, flush=True)
dog = Watchdog({"verify": LIMIT}, expired).start()
dog.stage("verify")
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # like a thread waiting in the driver
print("stuck", flush=True)
threading.Event().wait(30)
print("woke up", flush=True)
"""


def _run_stuck(limit: float) -> subprocess.Popen:
    code = STUCK.replace("LIMIT", repr(limit))
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                                               os.environ.get("PYTHONPATH")]))})


# The stuck thread waits 30 s and then prints "woke up": its absence shows the process was ended, not that it
# finished; communicate's timeout is a guard against a hang, far above both.
def test_a_stage_past_its_limit_ends_the_process():
    p = _run_stuck(0.5)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 1 and "expired verify after 0.5" in err and "woke up" not in out


def test_ctrl_c_stops_a_stuck_main_thread():
    p = _run_stuck(600)
    assert p.stdout.readline().strip() == "stuck"
    time.sleep(1.0)  # let the main thread reach its wait (before it, Python itself would stop it)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == watchdog.EXIT_INTERRUPTED
    assert "interrupted (Ctrl-C)" in err and "woke up" not in out


def test_stage_limits_cover_the_timing_waits():
    limits = watchdog.stage_limits(60)
    assert limits["verify"] == limits["compile"] == 60
    assert limits["time"] > 60 + watchdog.contention.LOCK_WAIT_S
    assert "read" not in limits


def test_run_limit_option_is_validated(capsys):
    from grader import cli

    for bad in ("0", "-3", "x", "inf"):
        with pytest.raises(SystemExit) as e:
            cli.main(["submissions/gold_float4.cu", "--run-limit", bad])
        assert e.value.code == 2
    assert "positive number of seconds" in capsys.readouterr().err


def test_a_compile_past_its_limit_is_not_blamed_on_a_kernel():
    bomb = ROOT / "tests" / "data" / "batch" / "deep_template.cu"
    p = subprocess.run([sys.executable, "-m", "grader.cli", str(bomb), "--run-limit", "2"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and "the compile stage was still running after 2 s" in p.stderr
    assert "a template or constexpr that NVRTC cannot finish?" in p.stderr and "never ends" not in p.stderr
