"""The reference kernels as data: each kernel's source, parameters, launch shape and byte model.

The byte counts the report prints and the GB/s it computes come from `KernelDef.values_per_elem` and
`KernelDef.value_bytes` here, the same objects the launches are built from, so the model the run is judged
against cannot drift from the program (the course page's first property).

Widths: every RoPE and chain kernel is a template on its work per thread. Width 1 (`PAGE`) is the page's kernel
as printed, one pair or one float per thread; `WIDE` gives a thread 4 pairs (RoPE: 32-bit index arithmetic,
and ropeHalfSplit as one float4 quad from each half of a head) or 4 floats in one float4 (chain), which is what
a card as fast as the H200 needs to reach its copy floor. The grid and the byte model are the same at every
width: 2 * width floats of the tensor per thread, tensor bytes only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib.resources import files

import numpy as np

from grader.compile import Compiled, compile_kernels
from grader.device import address

BLOCK = 256
"""Threads per block of every reference launch."""

PAGE = 1
WIDE = 4
WIDTHS = (PAGE, WIDE)

SOURCES = ("rope.cu", "chain.cu", "gelu_bf16.cu")

PARAM_BYTES = {"ptr": 8, "size_t": 8, "int": 4}
"""Kernel parameter kinds and their sizes in bytes (what PTX declares: u64, u64, u32)."""

_ROPE_PARAMS = (("in", "ptr"), ("cos", "ptr"), ("sin", "ptr"), ("out", "ptr"), ("pairs", "size_t"),
                ("halfDim", "int"), ("heads", "int"), ("seq", "int"))


@dataclass(frozen=True)
class KernelDef:
    """One kernel: `name` in `source`, its template argument `per_thread` (0 when it is not a template),
    its parameters (name, kind) in order, its grid ('row': (ceil(cols / (BLOCK * elems_per_thread)), rows);
    'flat': ceil(n / (BLOCK * elems_per_thread)) blocks), and its byte model: `values_per_elem` values of
    `value_bytes` bytes each read or written per element of the output tensor. `counted` says which."""

    name: str
    source: str
    per_thread: int
    params: tuple[tuple[str, str], ...]
    grid_kind: str
    elems_per_thread: int
    values_per_elem: int
    counted: str
    value_bytes: int = 4

    @property
    def expr(self) -> str:
        """The NVRTC name expression: `name<per_thread>` for a template, else `name`."""
        return f"{self.name}<{self.per_thread}>" if self.per_thread else self.name

    @property
    def bytes_per_elem(self) -> int:
        """Bytes read plus written per element of the output tensor: values_per_elem * value_bytes."""
        return self.values_per_elem * self.value_bytes

    @property
    def work_per_thread(self) -> int:
        """Pairs (RoPE) or elements per thread: the template argument, else elements per thread."""
        return self.per_thread or self.elems_per_thread

    def grid(self, n: int, rows: int = 1, cols: int = 0) -> tuple[int, int, int]:
        """Launch grid for n elements in all, or for rows x cols with a row grid."""
        per_block = BLOCK * self.elems_per_thread
        if self.grid_kind == "row":
            return (math.ceil(cols / per_block), rows, 1)
        return (math.ceil(n / per_block), 1, 1)

    def args(self, **values) -> tuple:
        """Kernel arguments in parameter order as numpy scalars of the parameter's width: buffers (int,
        DevicePtr or Buffer) as uint64 addresses, size_t as uint64, int as int32. Raises KeyError for a
        missing value and TypeError for an unexpected one."""
        extra = set(values) - {p for p, _ in self.params}
        if extra:
            raise TypeError(f"{self.expr} has no parameter(s) {sorted(extra)}")
        out = []
        for pname, kind in self.params:
            v = values[pname]
            if kind == "ptr":
                out.append(np.uint64(address(v)))
            elif kind == "size_t":
                out.append(np.uint64(v))
            else:
                out.append(np.int32(v))
        return tuple(out)


def _rope(name: str, width: int) -> KernelDef:
    return KernelDef(name, "rope.cu", width, _ROPE_PARAMS, "flat", 2 * width, 2,
                     "x read, out written (cos, sin tables: L2-resident, not counted)")


def _rope_qk(width: int) -> KernelDef:
    params = (("q", "ptr"), ("k", "ptr"), ("cos", "ptr"), ("sin", "ptr"), ("qOut", "ptr"), ("kOut", "ptr"),
              ("pairs", "size_t"), ("halfDim", "int"), ("heads", "int"), ("seq", "int"))
    return KernelDef("ropeFusedQK", "rope.cu", width, params, "flat", 2 * width, 4,
                     "q, k read, q, k written, per element of q (tables read once)")


def _row(name: str, width: int, params, values: int, counted: str) -> KernelDef:
    return KernelDef(name, "chain.cu", width, params, "row", width, values, counted)


def _flat(name: str, width: int, params, values: int, counted: str) -> KernelDef:
    return KernelDef(name, "chain.cu", width, params, "flat", width, values, counted)


_XBO = (("x", "ptr"), ("bias", "ptr"), ("out", "ptr"), ("cols", "size_t"))
_ION = (("in", "ptr"), ("out", "ptr"), ("n", "size_t"))
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
        _flat("addResidual", width, (("in", "ptr"), ("r", "ptr"), ("out", "ptr"), ("n", "size_t")), 3,
              "in and r read, out written"),
        _row("biasGeluFused", width, _XBO, 2, _BIAS_NOTE),
        _row("biasGeluResidualFused", width, (("x", "ptr"), ("bias", "ptr"), ("r", "ptr"), ("out", "ptr"),
                                               ("cols", "size_t")), 3,
             "x and r read, out written (bias not counted)"),
    )}


GELU_BF16 = KernelDef("geluTanhBf16", "gelu_bf16.cu", 0, _ION, "flat", 8, 2,
                      "in read, out written, bf16 (2 bytes each)", value_bytes=2)
TO_BF16 = KernelDef("toBf16", "gelu_bf16.cu", 0, _ION, "flat", 1, 0, "input preparation; not timed")
GELU_FORMS = KernelDef("geluForms", "chain.cu", 0, (("x", "ptr"), ("erfOut", "ptr"), ("tanhOut", "ptr"),
                                                   ("n", "size_t")), "flat", 1, 3, "x read, both forms written")


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


def make_launch(gpu, loaded: dict[str, object], version: Version, buffers: dict[str, object],
                scalars: dict[str, int], n: int, rows: int = 1, cols: int = 0):
    """A function that enqueues `version`'s launches on gpu's stream (through Gpu.launch).

    buffers: buffer name -> device buffer (Buffer, DevicePtr or int address); scalars: values of the size and
    shape parameters ('n', 'cols', 'pairs', 'halfDim', 'heads', 'seq'); n: elements of the output tensor;
    rows, cols: the row grid's shape. Raises KeyError for a buffer or scalar the wiring needs and lacks.
    """
    block = (BLOCK, 1, 1)
    planned = []
    for kd, wiring in version.steps:
        values = {p: buffers[b] for p, b in wiring}
        values.update({p: scalars[p] for p, kind in kd.params if kind != "ptr"})
        planned.append((loaded[kd.expr], kd.grid(n, rows, cols), kd.args(**values)))

    def launch() -> None:
        for kernel, grid, args in planned:
            gpu.launch(kernel, grid, block, *args)

    return launch


def launch_kernel(gpu, loaded: dict[str, object], kd: KernelDef, elements: int, /, **values) -> None:
    """Enqueue one launch of `kd` over `elements` elements (its flat grid, BLOCK threads per block) on gpu's
    stream. `values`: every parameter by name (buffers as Buffer, DevicePtr or int address). Raises KeyError
    or TypeError as KernelDef.args does."""
    gpu.launch(loaded[kd.expr], kd.grid(elements), (BLOCK, 1, 1), *kd.args(**values))


def all_kernels() -> list[KernelDef]:
    """Every kernel of the suite, each once."""
    out = [GELU_BF16, TO_BF16, GELU_FORMS]
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
        out[source] = compile_kernels(source_text(source), source, exprs, arch)
    return out


def load_suite(gpu, compiled: dict[str, Compiled]) -> dict[str, object]:
    """Load every compiled module on `gpu`; returns {name expression: cuda.core Kernel}."""
    kernels = {}
    for c in compiled.values():
        kernels.update(gpu.load(c))
    return kernels
