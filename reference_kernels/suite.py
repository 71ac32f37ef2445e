"""The reference kernels as data: each kernel's source, parameters, launch shape and byte model.

The byte counts the report prints and the GB/s it computes come from each kernel's grader.launch.LaunchSpec
(`values_per_elem`, `value_bytes`), the same object its launches are built from (grid, arguments), so the model
the run is judged against cannot drift from the program (the course page's first property).

Widths: every RoPE and chain kernel is a template on its work per thread. Width 1 (`PAGE`) is the page's kernel
as printed, one pair or one float per thread; `WIDE` gives a thread 4 pairs (RoPE: 32-bit index arithmetic,
and ropeHalfSplit as one float4 quad from each half of a head) or 4 floats in one float4 (chain), which is what
a card as fast as the H200 needs to reach its copy floor. The grid and the byte model are the same at every
width: 2 * width floats of the tensor per thread, tensor bytes only.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files

from grader import kernel_cache
from grader.compile import Compiled
from grader.launch import LaunchSpec, Param, bind

PAGE = 1
WIDE = 4
WIDTHS = (PAGE, WIDE)

SOURCES = ("rope.cu", "chain.cu", "gelu_bf16.cu")


def _params(*pairs: str) -> tuple[Param, ...]:
    """Parameters from 'name:kind' strings (kinds as grader.launch.KINDS: ptr, u64 for size_t, i32 for int)."""
    return tuple(Param(*p.split(":")) for p in pairs)


_ROPE_PARAMS = _params("in:ptr", "cos:ptr", "sin:ptr", "out:ptr", "pairs:u64", "halfDim:i32", "heads:i32", "seq:i32")


@dataclass(frozen=True)
class KernelDef:
    """One kernel: `name` in `source`, its template argument `per_thread` (0 when it is not a template), its
    launch (grader.launch.LaunchSpec: parameters, grid kind, elements per thread, the byte model) and
    `counted`, which says what the byte model counts."""

    name: str
    source: str
    per_thread: int
    spec: LaunchSpec
    counted: str

    @property
    def expr(self) -> str:
        """The NVRTC name expression: `name<per_thread>` for a template, else `name`."""
        return f"{self.name}<{self.per_thread}>" if self.per_thread else self.name

    @property
    def values_per_elem(self) -> int:
        """Values read plus written per element of the output tensor (the byte model)."""
        return self.spec.values_per_elem

    @property
    def value_bytes(self) -> int:
        """Bytes per value: 4 (float32) or 2 (bf16)."""
        return self.spec.value_bytes

    @property
    def bytes_per_elem(self) -> int:
        """Bytes read plus written per element of the output tensor: values_per_elem * value_bytes."""
        return self.spec.bytes_per_elem

    @property
    def work_per_thread(self) -> int:
        """Pairs (RoPE) or elements per thread: the template argument, else elements per thread."""
        return self.per_thread or self.spec.elems_per_thread


def _kernel(name: str, source: str, per_thread: int, params: tuple[Param, ...], grid: str, elems: int,
            values: int, counted: str, value_bytes: int = 4) -> KernelDef:
    spec = LaunchSpec(params, grid=grid, elems_per_thread=elems, values_per_elem=values, value_bytes=value_bytes)
    return KernelDef(name, source, per_thread, spec, counted)


def _rope(name: str, width: int) -> KernelDef:
    return _kernel(name, "rope.cu", width, _ROPE_PARAMS, "flat", 2 * width, 2,
                   "x read, out written (cos, sin tables: L2-resident, not counted)")


def _rope_qk(width: int) -> KernelDef:
    params = _params("q:ptr", "k:ptr", "cos:ptr", "sin:ptr", "qOut:ptr", "kOut:ptr", "pairs:u64", "halfDim:i32",
                     "heads:i32", "seq:i32")
    return _kernel("ropeFusedQK", "rope.cu", width, params, "flat", 2 * width, 4,
                   "q, k read, q, k written, per element of q (tables read once)")


def _row(name: str, width: int, params, values: int, counted: str) -> KernelDef:
    return _kernel(name, "chain.cu", width, params, "row", width, values, counted)


def _flat(name: str, width: int, params, values: int, counted: str) -> KernelDef:
    return _kernel(name, "chain.cu", width, params, "flat", width, values, counted)


_XBO = _params("x:ptr", "bias:ptr", "out:ptr", "cols:u64")
_ION = _params("in:ptr", "out:ptr", "n:u64")
_BIAS_NOTE = "x read, out written (bias: a cache-resident row, not counted)"


def rope_kernels(width: int) -> dict[str, KernelDef]:
    """The four RoPE kernels at `width` pairs per thread, by name."""
    return {k.name: k for k in (_rope("ropeInterleaved", width), _rope("ropeInterleavedVec2", width),
                                _rope("ropeHalfSplit", width), _rope_qk(width))}


def chain_kernels(width: int) -> dict[str, KernelDef]:
    """The chain kernels at `width` floats per thread, by name."""
    return {k.name: k for k in (
        _row("addBiasRow", width, _XBO, 2, _BIAS_NOTE),
        _flat("applyGeluErf", width, _ION, 2, "in read, out written"),
        _flat("applyGeluTanh", width, _ION, 2, "in read, out written"),
        _flat("addResidual", width, _params("in:ptr", "r:ptr", "out:ptr", "n:u64"), 3, "in and r read, out written"),
        _row("biasGeluFused", width, _XBO, 2, _BIAS_NOTE),
        _row("biasGeluResidualFused", width, _params("x:ptr", "bias:ptr", "r:ptr", "out:ptr", "cols:u64"), 3,
             "x and r read, out written (bias not counted)"),
    )}


GELU_BF16 = _kernel("geluTanhBf16", "gelu_bf16.cu", 0, _ION, "flat", 8, 2, "in read, out written, bf16 (2 bytes each)",
                    value_bytes=2)
GELU_BF16_SIGMOID = _kernel("geluTanhBf16Sigmoid", "gelu_bf16.cu", 0, _ION, "flat", 8, 2,
                            "in read, out written, bf16 (2 bytes each)", value_bytes=2)
TO_BF16 = _kernel("toBf16", "gelu_bf16.cu", 0, _ION, "flat", 1, 0, "input preparation; not timed")
GELU_FORMS = _kernel("geluForms", "chain.cu", 0, _params("x:ptr", "erfOut:ptr", "tanhOut:ptr", "n:u64"), "flat", 1, 3,
                     "x read, both forms written")


Wiring = tuple[tuple[str, str], ...]
"""(kernel parameter, buffer name) pairs: which buffer each pointer parameter of a launch gets."""


@dataclass(frozen=True)
class Version:
    """A row of a timed table: one or more kernels launched in order, each with its wiring. Its bytes per
    element are the sum of its kernels' (the staged chain: 2 + 2 + 3 = 7 floats)."""

    label: str
    steps: tuple[tuple[KernelDef, Wiring], ...]

    @property
    def kernels(self) -> tuple[KernelDef, ...]:
        """The kernels launched, in order."""
        return tuple(k for k, _ in self.steps)

    @property
    def values_per_elem(self) -> int:
        """Values read plus written per element of the output tensor, summed over the kernels."""
        return sum(k.values_per_elem for k in self.kernels)

    @property
    def bytes_per_elem(self) -> int:
        """Bytes read plus written per element of the output tensor, summed over the kernels."""
        return sum(k.bytes_per_elem for k in self.kernels)

    @property
    def per_thread(self) -> int:
        """Work per thread of the first kernel (pairs, floats or bf16s)."""
        return self.kernels[0].work_per_thread


STAGED = "staged chain"
FUSED = "fused chain"
MODEL_ANSWER = "biasGeluFused + addResidual"

_SINGLE_WIRING: dict[str, Wiring] = {
    "addBiasRow": (("x", "x"), ("bias", "bias"), ("out", "out")),
    "applyGeluErf": (("in", "x"), ("out", "out")),
    "applyGeluTanh": (("in", "x"), ("out", "out")),
    "addResidual": (("in", "x"), ("r", "r"), ("out", "out")),
    "biasGeluFused": (("x", "x"), ("bias", "bias"), ("out", "out")),
    "biasGeluResidualFused": (("x", "x"), ("bias", "bias"), ("r", "r"), ("out", "out")),
}
"""Chain buffers: x [rows, cols], bias [cols], r [rows, cols], temporaries t1 and t2, out [rows, cols]."""


def chain_versions(width: int) -> dict[str, Version]:
    """The chain table's rows at `width` by base label, in the page's order, plus the exercise's model answer
    (labels carry `<width>`)."""
    k = chain_kernels(width)
    out = {name: Version(f"{name}<{width}>", ((k[name], _SINGLE_WIRING[name]),))
           for name in ("addBiasRow", "applyGeluErf", "applyGeluTanh", "addResidual", "biasGeluFused")}
    out[STAGED] = Version(f"{STAGED}<{width}>", (
        (k["addBiasRow"], (("x", "x"), ("bias", "bias"), ("out", "t1"))),
        (k["applyGeluErf"], (("in", "t1"), ("out", "t2"))),
        (k["addResidual"], (("in", "t2"), ("r", "r"), ("out", "out"))),
    ))
    out[MODEL_ANSWER] = Version(f"{MODEL_ANSWER}<{width}>", (
        (k["biasGeluFused"], (("x", "x"), ("bias", "bias"), ("out", "t1"))),
        (k["addResidual"], (("in", "t1"), ("r", "r"), ("out", "out"))),
    ))
    out[FUSED] = Version(f"{FUSED}<{width}>", ((k["biasGeluResidualFused"], _SINGLE_WIRING["biasGeluResidualFused"]),))
    return out


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


def make_launch(gpu, loaded: dict[str, object], version: Version, buffers: dict[str, object],
                scalars: dict[str, int], rows: int, cols: int):
    """A function that enqueues `version`'s launches on gpu's stream (grader.launch.bind, per kernel).

    buffers: buffer name -> device buffer (Buffer, DevicePtr or int address); scalars: values of the size and
    shape parameters ('n', 'cols', 'pairs', 'halfDim', 'heads', 'seq'); rows x cols: the output tensor's
    shape (a flat tensor of n elements: 1 x n). Raises KeyError for a buffer or scalar the wiring needs and
    lacks.
    """
    steps = []
    for kd, wiring in version.steps:
        values = {p: buffers[b] for p, b in wiring}
        values.update({p.name: scalars[p.name] for p in kd.spec.params if p.kind != "ptr"})
        steps.append(bind(gpu, loaded[kd.expr], kd.spec, rows, cols, values))

    def launch() -> None:
        for step in steps:
            step()

    return launch


def launch_kernel(gpu, loaded: dict[str, object], kd: KernelDef, elements: int, /, **values) -> None:
    """Enqueue one launch of `kd` over `elements` elements (a flat tensor) on gpu's stream. `values`: every
    parameter by name (buffers as Buffer, DevicePtr or int address). Raises KeyError or TypeError as
    grader.launch.LaunchSpec.args does."""
    bind(gpu, loaded[kd.expr], kd.spec, 1, elements, values)()


def all_kernels() -> list[KernelDef]:
    """Every kernel of the suite, each once."""
    out = [GELU_BF16, GELU_BF16_SIGMOID, TO_BF16, GELU_FORMS]
    for w in WIDTHS:
        out += list(rope_kernels(w).values()) + list(chain_kernels(w).values())
    return out


def source_text(source: str) -> str:
    """The text of one of SOURCES."""
    return files("reference_kernels").joinpath(source).read_text()


def compile_suite(arch: str) -> dict[str, Compiled]:
    """Compile every source for `arch` ('sm_90'); returns {source file: Compiled}.

    Raises grader.errors.SubmissionError(stage 'compile') with NVRTC's diagnostics if a source fails.
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
