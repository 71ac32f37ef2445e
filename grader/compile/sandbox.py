"""Part of stage 2, compile: NVRTC runs in a Landlock sandbox, so a submission cannot make it read a file.

NVRTC opens whatever an `#include` names (an absolute path, or one built by a macro) and prints the file's
lines in its log; a stringizing macro can carry a whole file into an error message. grader.source.includes
refuses every include form it recognises, but no lexer can be proven to match NVRTC's. The guarantee comes
from the kernel instead: every NVRTC call of the grader (`grader.compile.nvrtc.compile_kernels`, used by
`grade FILE`, the batch workers and `grade selfcheck`) runs in a fresh thread that Landlock
(https://docs.kernel.org/userspace-api/landlock.html, Linux 5.13+) restricts before NVRTC starts:

- file system: every access right the running kernel's ABI knows is handled, and the only one granted is
  reading NVRTC's builtins library (`libnvrtc-builtins.so.*` next to the loaded `libnvrtc`, which NVRTC
  opens on its first compile). No other file or folder can be opened, listed, written, created, removed,
  executed or truncated: not /etc, /home, /proc, /tmp, the Python environment or the submission's folder.
- network (ABI 4+): no TCP bind or connect; scopes (ABI 6+): no signals to, or abstract sockets of, other
  processes.

Landlock restricts the calling thread and the threads it starts, never the rest of the process, and the
restriction ends with the thread: the grader's other threads keep their access. The thread runs only
NVRTC (through cuda.core and cuda.bindings, imported before the restriction, so Python reads no module
file inside it). Ruleset set-up costs a few milliseconds (benchmarks/sandbox_cost.py measures it).

Where Landlock is missing (not Linux, a kernel older than 5.13 or built without it, a seccomp filter that
refuses the calls), `state()` says why. `grade FILE` then warns in one line and relies on the lexer;
`grade batch` refuses to start unless `--unsandboxed` is given (grader.batch.command), and its workers call
`require()` so that no submission is compiled unconfined by accident.

The sandbox is ours; the Landlock calls are the `landlockpy` package's (0BSD, ABI-aware up to ABI 11).

What a submission can and cannot do, for the reader who runs the grader: docs/security.md.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from grader.core.errors import SandboxError

T = TypeVar("T")

_required = False


@dataclass(frozen=True)
class SandboxState:
    """Whether NVRTC can be confined here: `abi` is the kernel's Landlock ABI version (0: none); `reason`
    says why not when `available` is False. `allowed` lists the files NVRTC may read."""

    available: bool
    abi: int
    reason: str = ""
    allowed: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line for reports: "landlock ABI 7: NVRTC may read only libnvrtc-builtins.so.13.5" or
        "off: <reason>"."""
        if not self.available:
            return f"off: {self.reason}"
        names = ", ".join(sorted({Path(p).name for p in self.allowed})) or "nothing"
        return f"landlock ABI {self.abi}: NVRTC may read only {names}"


def require() -> None:
    """Make `confined` refuse to run anything unconfined from now on in this process (grade batch's
    workers). Raises SandboxError at once if the sandbox is not available here."""
    global _required
    st = state()
    if not st.available and not st.reason.startswith(_NO_NVRTC):  # no NVRTC: nothing will be compiled
        raise SandboxError(f"the NVRTC sandbox is not available: {st.reason}")
    _required = True


_known: SandboxState | None = None


def state() -> SandboxState:
    """Probe Landlock once per process, by applying the real ruleset in a throw-away thread and checking
    that a file outside it can no longer be opened. Never raises. Where NVRTC itself cannot be loaded (an
    install without its CUDA extra) the answer is not kept: that is the install's problem, reported by
    grader.compile.toolkit, and the sandbox is judged again once NVRTC loads."""
    global _known
    if _known is None:
        found = _probe()
        if found.available or not found.reason.startswith(_NO_NVRTC):
            _known = found
        return found
    return _known


_NO_NVRTC = "NVRTC could not be loaded"


def _probe() -> SandboxState:
    if not sys.platform.startswith("linux"):
        return SandboxState(False, 0, f"Landlock is Linux-only (this is {sys.platform})")
    try:
        import landlockpy
    except ImportError:  # pragma: no cover - a declared dependency on Linux
        return SandboxState(False, 0, "the landlockpy package is not installed (pip install landlockpy)")
    try:
        abi = landlockpy.abi_version()
    except Exception as err:  # noqa: BLE001 - a seccomp filter or an odd kernel: no sandbox, with the reason
        return SandboxState(False, 0, f"Landlock could not be queried ({err})")
    if abi < 1:
        return SandboxState(False, 0, "this Linux kernel has no Landlock (5.13 or newer with Landlock enabled "
                                      "in its LSM list is needed)")
    try:
        allowed = _nvrtc_builtins()
    except Exception as err:  # noqa: BLE001 - NVRTC missing: compile reports that on its own
        return SandboxState(False, abi, f"{_NO_NVRTC} ({str(err)[:200]})")
    try:
        denied = _run_in_thread(_probe_denial, allowed)
    except Exception as err:  # noqa: BLE001 - refused by a seccomp filter, an old landlockpy, ...
        return SandboxState(False, abi, f"Landlock ABI {abi} is present but could not be applied ({err})")
    if not denied:
        return SandboxState(False, abi, f"Landlock ABI {abi} was applied but a file outside its rules stayed "
                                        "readable")
    return SandboxState(True, abi, "", allowed)


def confined(fn: Callable[..., T], *args, **kwargs) -> T:
    """Run `fn(*args, **kwargs)` in a new thread restricted by the Landlock ruleset of this module's
    docstring and return its result (its exception is re-raised here).

    Where Landlock is unavailable, `fn` runs unconfined in the same way, unless `require()` was called:
    then SandboxError (a fault of the grading machine, not of the submission) is raised and `fn` never runs.
    """
    st = state()
    if not st.available and _required:
        raise SandboxError(f"the NVRTC sandbox is not available: {st.reason}")
    return _run_in_thread(fn, st.allowed if st.available else None, *args, **kwargs)


def _run_in_thread(fn: Callable[..., T], allowed: tuple[str, ...] | None, *args, **kwargs) -> T:
    """fn's result or exception, computed in a fresh daemon thread confined to `allowed` (None: unconfined)."""
    box: dict[str, object] = {}

    def body() -> None:
        try:
            if allowed is not None:
                _restrict_this_thread(allowed)
            box["result"] = fn(*args, **kwargs)
        except BaseException as err:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = err

    thread = threading.Thread(target=body, name="nvrtc-sandbox", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["result"]  # type: ignore[return-value]


def _restrict_this_thread(allowed: tuple[str, ...]) -> None:
    """Apply the ruleset to the calling thread (irreversible for it). Raises landlockpy's errors."""
    from landlockpy import AccessFS, Ruleset, Scope

    with Ruleset(scoped=Scope.ABSTRACT_UNIX_SOCKET | Scope.SIGNAL) as rules:  # every fs and net right handled
        for path in allowed:
            rules.allow_path(path, AccessFS.READ_FILE)
        rules.restrict()


def _probe_denial() -> bool:
    """Inside a confined thread: True when a readable file outside the ruleset cannot be opened."""
    try:
        with open(sys.executable, "rb"):
            return False
    except PermissionError:
        return True


def _nvrtc_builtins() -> tuple[str, ...]:
    """Paths of `libnvrtc-builtins*.so*` beside the libnvrtc this process loaded (loading it first, through
    cuda.bindings, with cuda.core's Program imported so nothing is imported inside the sandbox)."""
    import cuda.core  # noqa: F401 - imported here, not inside the confined thread
    from cuda.bindings import nvrtc

    nvrtc.nvrtcVersion()
    folders = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.rsplit(None, 1)[-1] if "/" in line else ""
            if os.path.basename(path).startswith("libnvrtc") and os.path.isfile(path):
                folders.add(os.path.dirname(path))
    found = sorted(str(p) for folder in folders for p in Path(folder).glob("libnvrtc-builtins*.so*") if p.is_file())
    if not found:
        raise FileNotFoundError(f"no libnvrtc-builtins beside libnvrtc in {sorted(folders) or 'no folder'}")
    return tuple(found)
