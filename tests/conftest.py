"""Shared fixtures. GPU tests are marked `gpu` and take the `gpu` fixture, which skips them with the
reason (no driver, no device) on machines without a CUDA GPU, such as CI."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = ROOT / "submissions"


def alive(pid: int) -> bool:
    """Whether process `pid` runs (Linux: /proc; a zombie, ended but not yet reaped, is not alive)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


HANG_GUARD_S = 60.0
"""How long wait_until waits (for a killed process to be gone, a batch to write its rows: milliseconds to a
few seconds): a guard so that a test fails instead of hanging, never a speed limit. Tests read no clock
themselves (tests/test_newcomer.py checks it): waits go through wait_until, linear time through
assert_linear."""


def wait_until(condition: Callable[[], bool]) -> bool:
    """Poll `condition` every 50 ms until it holds or HANG_GUARD_S has passed; whether it holds."""
    deadline = time.monotonic() + HANG_GUARD_S
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


def ended(*pids: int) -> bool:
    """Whether every process in `pids` is gone (wait_until: a killed process group is reaped asynchronously)."""
    return wait_until(lambda: not any(alive(p) for p in pids))


HINT_WORDS = {"look at your bias index first": "division", "is 4 bytes wide": "width",
              "is a different function": "tanh", "uses local memory": "local", "registers per thread": "registers"}
"""Words each hint from the machine code or the PTX (grader.feedback.hints) says, and its kind."""


def hint_texts(hints: list) -> list[str]:
    """The texts of `hints` (grader.feedback.hint.Hint objects, as code_hints gives them), each hint's kind checked
    against the words its text says (HINT_WORDS): the tests of the code hints match words in their texts."""
    for h in hints:
        assert {kind for words, kind in HINT_WORDS.items() if words in h.text} == {h.kind}, h
    return [h.text for h in hints]


GROWTH = 8
"""assert_linear's large input is GROWTH times its small one."""
MAX_RATIO = 20
"""A linear step takes about GROWTH = 8 times as long on the large input, a quadratic one 64 times: a ratio
of CPU times up to 20 passes (n log n, caches and noise fit; a quadratic step does not)."""
MIN_CPU_S = 0.02
"""Each size is run until it has used this much CPU time, so a fast call is timed as the mean of many."""


def cpu_seconds_per_call(run: Callable[[Any], Any], arg: Any) -> tuple[float, Any]:
    """The mean CPU time of this process (time.process_time, its threads included; not wall time, so another
    process on the machine does not count) of run(arg) over as many calls as make MIN_CPU_S, garbage
    collection off; and what the last call returned."""
    calls, total, out = 0, 0.0, None
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        while total < MIN_CPU_S:
            start = time.process_time()
            out = run(arg)
            total += time.process_time() - start
            calls += 1
    finally:
        if was_enabled:
            gc.enable()
    return total / calls, out


def assert_linear(run: Callable[[Any], Any], make: Callable[[int], Any], size: int) -> Any:
    """Assert that run(make(size)) takes at most MAX_RATIO times the CPU time of run(make(size // GROWTH)):
    linear time checked by the ratio of two input sizes, never against a clock limit (which fails on a
    loaded 2-core machine). `make(n)` builds an input of size n (characters, declarations, ...). Returns
    what run(make(size)) returned, for the caller's own checks. A first, uncounted call on the small input
    keeps one-time set-up (caches, compiled patterns) off the small side's time."""
    small, large = make(max(1, size // GROWTH)), make(size)
    run(small)
    small_s, _ = cpu_seconds_per_call(run, small)
    large_s, out = cpu_seconds_per_call(run, large)
    ratio = large_s / max(small_s, 1e-9)
    assert ratio <= MAX_RATIO, (f"{GROWTH}x the input took {ratio:.1f}x the CPU time ({small_s:.4f} s -> "
                                f"{large_s:.4f} s; linear: about {GROWTH}x, quadratic: {GROWTH ** 2}x)")
    return out


@pytest.fixture(scope="session", autouse=True)
def kernel_cache_folder(tmp_path_factory):
    """The grader's kernel cache (grader.compile.kernel_cache) in a folder of this test session, for the tests and
    the processes they start: a run never reads or fills the user's own cache."""
    import os

    from grader.compile import kernel_cache

    folder = tmp_path_factory.mktemp("kernel-cache")
    folder.chmod(0o700)
    old = os.environ.get(kernel_cache.ENV)
    os.environ[kernel_cache.ENV] = str(folder)
    yield folder
    if old is None:
        os.environ.pop(kernel_cache.ENV, None)
    else:
        os.environ[kernel_cache.ENV] = old


@pytest.fixture(scope="session")
def gpu():
    """A grader.gpu.device.Gpu on device 0, or a skip with the reason there is none."""
    from grader.core.errors import NoGpuError
    from grader.gpu.device import open_gpu

    try:
        return open_gpu()
    except NoGpuError as err:
        pytest.skip(f"no CUDA GPU: {err}")


def load_benchmark(name: str):
    """benchmarks/NAME.py imported as module NAME (and put in sys.modules: a benchmark's dataclasses look their
    module up there), for a test that uses it once."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def benchmark_module(name: str):
    """load_benchmark(NAME) for a fixture, taken out of sys.modules after it: `yield from
    benchmark_module("fuzz_lexer")`."""
    import sys

    try:
        yield load_benchmark(name)
    finally:
        sys.modules.pop(name, None)
