"""The CUDA pieces the grader runs on, as installed: is the install complete, and which GPU architectures the
installed NVRTC can compile for. Both are the grader's questions, asked before a submission is compiled, so
that neither problem is ever reported as the student's compile error.

`pip install .` without a CUDA extra installs cuda-core and cuda-bindings but not the nvidia wheels that hold
libnvrtc (and older installs lack cuda-bindings too): nothing can be compiled. `require_cuda()` says so in
one line with the pip command to run (InstallError, exit 4).

Each NVRTC compiles for a fixed list of architectures (`nvrtcGetSupportedArchs`): NVRTC 13 starts at sm_75,
so a V100 (sm_70) or P100 (sm_60) needs the cu12 extra. `check_arch()` refuses a target outside the list
with the list and that hint (InputError, exit 2).
"""

from __future__ import annotations

import argparse
import importlib.util
import re

from grader.core.errors import InputError, InstallError

INSTALL_HINT = ('install the grader with the CUDA extra that matches the NVIDIA driver: pip install ".[cu13]" for '
                'a driver of CUDA 13.x, pip install ".[cu12]" for CUDA 12.x (`nvidia-smi` shows the driver\'s '
                '"CUDA Version"; on a machine without a GPU use cu13)')
"""What to do about an incomplete install (README, "Quick start")."""

_ARCH = re.compile(r"sm_(\d+)([a-z]?)")


def install_problem() -> str | None:
    """Why the CUDA Python packages cannot compile or run anything (cuda-bindings not importable, cuda-core
    missing, or the NVRTC library not found), as one line with the pip command; None when the install is
    complete. Loads libnvrtc (the first compile would anyway) but touches no GPU; about 0.1 s the first time."""
    try:
        from cuda.bindings import driver, nvrtc  # noqa: F401
    except ImportError as err:
        return f"the grader's install is incomplete: cuda-bindings cannot be imported ({err}); {INSTALL_HINT}"
    if importlib.util.find_spec("cuda.core") is None:  # found, not imported: importing it takes 0.3 s
        return f"the grader's install is incomplete: cuda-core is not installed; {INSTALL_HINT}"
    try:
        nvrtc.nvrtcVersion()
    except Exception as err:  # noqa: BLE001 - cuda.pathfinder's DynamicLibNotFoundError: no nvidia wheel holds it
        names = re.search(r'"([^"]+)"', str(err))
        lib = names.group(1) if names else "libnvrtc"
        return f"the grader's install is incomplete: the NVRTC library ({lib}) was not found; {INSTALL_HINT}"
    return None


def require_cuda() -> None:
    """Raise InstallError (exit 4) with install_problem()'s line when the install cannot compile anything."""
    problem = install_problem()
    if problem:
        raise InstallError(problem)


def nvrtc_version() -> str:
    """The installed NVRTC's version, like '13.0'."""
    from cuda.bindings import nvrtc

    _, major, minor = nvrtc.nvrtcVersion()
    return f"{major}.{minor}"


def supported_archs() -> list[int]:
    """The compute capabilities the installed NVRTC compiles for, as numbers (75 for sm_75), ascending."""
    from cuda.bindings import nvrtc

    _, archs = nvrtc.nvrtcGetSupportedArchs()
    return sorted(int(a) for a in archs)


def check_arch(arch: str, gpu: str | None = None) -> None:
    """Refuse a compile target the installed NVRTC cannot compile for, before any submission is compiled.

    arch: 'sm_90', 'sm_90a', ...; gpu: the GPU's name when `arch` is the GPU's own (else it came from --arch).
    Raises InputError (exit 2) naming the supported architectures and what to install: the cu12 extra for a
    GPU older than NVRTC 13 supports, a newer NVRTC for one newer than the list. An arch-specific variant
    (`sm_90a`) is tried on an empty kernel, since the list holds numbers only.
    """
    m = _ARCH.fullmatch(arch)
    if not m:
        raise InputError(f"{arch!r} is not a GPU architecture; write it like sm_90, sm_90a or sm_120")
    number, variant = int(m.group(1)), m.group(2)
    supported = supported_archs()
    version = nvrtc_version()
    listing = ", ".join(f"sm_{n}" for n in supported)
    what = f"this GPU ({gpu}, {arch})" if gpu else arch
    if number in supported:
        if variant:
            _try_variant(arch, what, version)
        return
    older = bool(supported) and number < supported[0]
    if older:
        hint = ('install the grader with the cu12 extra: pip install ".[cu12]" (NVRTC 12 compiles for sm_50 and '
                "newer, and its cubins load on CUDA 12 and 13 drivers)" if int(version.split(".")[0]) >= 13
                else "no NVRTC this grader can use compiles for it (NVRTC 12 starts at sm_50)")
    elif supported and number > supported[-1]:
        hint = 'a newer NVRTC may: pip install --upgrade ".[cu13]"'
    else:
        hint = "give one of those"
    verb = "is older than the GPUs" if gpu and older else "is not among the targets"
    raise InputError(f"{what} {verb} the installed NVRTC {version} compiles for ({listing}); {hint}")

def _try_variant(arch: str, what: str, version: str) -> None:
    """Compile an empty kernel for an arch-specific target such as sm_90a; InputError if NVRTC refuses it."""
    from cuda.core import Program, ProgramOptions

    try:
        Program("__global__ void k() {}", "c++", ProgramOptions(arch=arch)).compile("cubin")
    except Exception as err:  # noqa: BLE001 - NVRTCError; its log names the option
        lines = [ln.strip() for ln in str(err).replace("\x00", "").splitlines()
                 if "error" in ln.lower() and "NVRTC_ERROR" not in ln]
        why = lines[0] if lines else "refused"
        raise InputError(f"{what}: the installed NVRTC {version} cannot compile for {arch} ({why}); use the "
                         f"plain sm_{_ARCH.fullmatch(arch).group(1)}") from None


ARCH_PATTERN = re.compile(r"^sm_\d{2,3}[a-z]?$")

def arch_type(value: str) -> str:
    """argparse type of --arch: a compile target such as sm_90, sm_90a or sm_100a."""
    if not ARCH_PATTERN.fullmatch(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a GPU architecture; write it like sm_90, sm_90a or sm_120")
    if install_problem() is None:  # else grading stops on the install first, with the pip command
        try:
            check_arch(value)
        except InputError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
    return value
