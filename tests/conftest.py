"""Shared fixtures. GPU tests are marked `gpu` and take the `gpu` fixture, which skips them with the
reason (no driver, no device) on machines without a CUDA GPU, such as CI."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = ROOT / "submissions"


def alive(pid: int) -> bool:
    """Whether process `pid` runs (Linux: /proc; a zombie, ended but not yet reaped, is not alive)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="session")
def gpu():
    """A grader.device.Gpu on device 0, or a skip with the reason there is none."""
    from grader.device import open_gpu
    from grader.errors import NoGpuError

    try:
        return open_gpu()
    except NoGpuError as err:
        pytest.skip(f"no CUDA GPU: {err}")
