"""The reference kernels as data: each kernel's source, parameters, launch shape and byte model.

The chain kernels (chain.cu) are the grader's own, in grader.exercises.bias_gelu.page_kernels (the grader times and
profiles them);
this module adds the RoPE kernels (rope.cu, the rope exercise's: grader/exercises/rope/rope.cu), the bf16 GELUs
(gelu_bf16.cu) and chain.cu's geluForms, and
compiles and loads the whole suite for the self-check. It builds on grader.exercises.bias_gelu.page_kernels' KernelDef
and
Version, whose byte counts come from each kernel's grader.core.launch.LaunchSpec (`values_per_elem`,
`value_bytes`), the same object its launches are built from (grid, arguments), so the model the run is judged
against cannot drift from the program (the course page's first property).

Widths: every RoPE and chain kernel is a template on its work per thread. Width 1 (`PAGE`) is the page's kernel
as printed, one pair or one float per thread; `WIDE` gives a thread 4 pairs (RoPE: 32-bit index arithmetic,
and ropeHalfSplit as one float4 quad from each half of a head) or 4 floats in one float4 (chain), which is what
a card as fast as the H200 needs to reach its copy floor. The grid and the byte model are the same at every
width: 2 * width floats of the tensor per thread, tensor bytes only.
"""

from __future__ import annotations

from importlib.resources import files

from grader.compile import kernel_cache
from grader.compile.nvrtc import Compiled
from grader.exercises.bias_gelu import page_kernels
from grader.exercises.bias_gelu.page_kernels import (
    ION,
    WIDTHS,
    KernelDef,
    Version,
    Wiring,
    chain_kernels,
    kernel_def,
    params,
)
from grader.exercises.rope import answers as rope_answers

SOURCES = (rope_answers.SOURCE, page_kernels.SOURCE, "gelu_bf16.cu")

_ROPE_PARAMS = rope_answers.PARAMS


def _rope(name: str, width: int) -> KernelDef:
    return kernel_def(name, rope_answers.SOURCE, width, _ROPE_PARAMS, "flat", 2 * width, 2,
                      "x read, out written (cos, sin tables: L2-resident, not counted)")


def _rope_qk(width: int) -> KernelDef:
    qk = params("q:ptr", "k:ptr", "cos:ptr", "sin:ptr", "qOut:ptr", "kOut:ptr", "pairs:u64", "halfDim:i32",
                "heads:i32", "seq:i32")
    return kernel_def("ropeFusedQK", rope_answers.SOURCE, width, qk, "flat", 2 * width, 4,
                      "q, k read, q, k written, per element of q (tables read once)")


def rope_kernels(width: int) -> dict[str, KernelDef]:
    """The four RoPE kernels at `width` pairs per thread, by name."""
    return {k.name: k for k in (_rope("ropeInterleaved", width), _rope("ropeInterleavedVec2", width),
                                _rope("ropeHalfSplit", width), _rope_qk(width))}


GELU_BF16 = kernel_def("geluTanhBf16", "gelu_bf16.cu", 0, ION, "flat", 8, 2,
                       "in read, out written, bf16 (2 bytes each)", value_bytes=2)
GELU_BF16_SIGMOID = kernel_def("geluTanhBf16Sigmoid", "gelu_bf16.cu", 0, ION, "flat", 8, 2,
                               "in read, out written, bf16 (2 bytes each)", value_bytes=2)
TO_BF16 = kernel_def("toBf16", "gelu_bf16.cu", 0, ION, "flat", 1, 0, "input preparation; not timed")
GELU_FORMS = kernel_def("geluForms", page_kernels.SOURCE, 0, params("x:ptr", "erfOut:ptr", "tanhOut:ptr", "n:u64"),
                        "flat", 1, 3, "x read, both forms written")

_ROPE_WIRING: Wiring = (("in", "q"), ("cos", "cos"), ("sin", "sin"), ("out", "qOut"))
_QK_WIRING: Wiring = (("q", "q"), ("k", "k"), ("cos", "cos"), ("sin", "sin"), ("qOut", "qOut"), ("kOut", "kOut"))


def rope_versions(width: int) -> dict[str, Version]:
    """The RoPE table's rows at `width` by kernel name. Buffers: q, k (inputs), cos, sin (tables), qOut, kOut."""
    return {name: Version(kd.expr, ((kd, _QK_WIRING if name == "ropeFusedQK" else _ROPE_WIRING),))
            for name, kd in rope_kernels(width).items()}


BF16_VERSION = Version(GELU_BF16.name, ((GELU_BF16, (("in", "in"), ("out", "out"))),))
BF16_SIGMOID_VERSION = Version(GELU_BF16_SIGMOID.name, ((GELU_BF16_SIGMOID, (("in", "in"), ("out", "out"))),))
BF16_VERSIONS = (BF16_VERSION, BF16_SIGMOID_VERSION)
"""The bf16 GELU's rows: llm.c's tanhf form, and the same function as x * sigmoid(2u) (gelu_bf16.cu)."""


def all_kernels() -> list[KernelDef]:
    """Every kernel of the suite, each once."""
    out = [GELU_BF16, GELU_BF16_SIGMOID, TO_BF16, GELU_FORMS]
    for w in WIDTHS:
        out += list(rope_kernels(w).values()) + list(chain_kernels(w).values())
    return out


def source_text(source: str) -> str:
    """The text of one of SOURCES (chain.cu and rope.cu from their exercises' folders, gelu_bf16.cu from
    reference_kernels/)."""
    if source == page_kernels.SOURCE:
        return page_kernels.source_text()
    if source == rope_answers.SOURCE:
        return rope_answers.source_text()
    return files("reference_kernels").joinpath(source).read_text()


def compile_suite(arch: str) -> dict[str, Compiled]:
    """Compile every source for `arch` ('sm_90'); returns {source file: Compiled}.

    Raises grader.core.errors.SubmissionError(Stage.COMPILE) with NVRTC's diagnostics if a source fails.
    """
    out = {}
    for source in SOURCES:
        exprs = tuple(k.expr for k in all_kernels() if k.source == source)
        out[source] = kernel_cache.compiled(source_text(source), source, exprs, arch)
    return out


def load_suite(gpu, compiled: dict[str, Compiled]) -> dict[str, object]:
    """Load every compiled module on `gpu`; returns {name expression: cuda.core Kernel}."""
    kernels = {}
    for c in compiled.values():
        kernels.update(gpu.load(c))
    return kernels
