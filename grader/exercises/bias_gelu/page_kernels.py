"""The course page's chain kernels as data (grader/exercises/bias_gelu/chain.cu): each kernel's parameters, launch shape
and byte model, the chain table's rows, and the launches built from them.

The grader launches them itself: the exercise's chain (grader.exercises.bias_gelu.chain) times the student's kernel
beside the
page's staged and fused chains, and `grade --counters` (grader.pipeline.profiled) profiles the model answer and the
page's answer. The reference kernels' self-check (reference_kernels.suite) builds its RoPE and bf16 kernels
from the same KernelDef and Version and times these rows too; it imports this module, never the reverse.

The byte counts the report prints and the GB/s it computes come from each kernel's grader.core.launch.LaunchSpec
(`values_per_elem`, `value_bytes`), the same object its launches are built from (grid, arguments), so the
model the run is judged against cannot drift from the program (the course page's first property).

Widths: every chain kernel is a template on its floats per thread. Width 1 (`PAGE`) is the page's kernel as
printed, one float per thread; `WIDE` gives a thread 4 floats in one float4, which is what a card as fast as
the H200 needs to reach its copy floor. The grid and the byte model are the same at every width.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files

from grader.compile import kernel_cache
from grader.core.launch import LaunchSpec, Param, bind

PAGE = 1
WIDE = 4
WIDTHS = (PAGE, WIDE)

SOURCE = "chain.cu"
"""The chain kernels' source, in this folder."""


def params(*pairs: str) -> tuple[Param, ...]:
    """Parameters from 'name:kind' strings (kinds as grader.core.launch.KINDS: ptr, u64 for size_t, i32 for int)."""
    return tuple(Param(*p.split(":")) for p in pairs)


@dataclass(frozen=True)
class KernelDef:
    """One kernel: `name` in `source`, its template argument `per_thread` (0 when it is not a template), its
    launch (grader.core.launch.LaunchSpec: parameters, grid kind, elements per thread, the byte model) and
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


def kernel_def(name: str, source: str, per_thread: int, param_list: tuple[Param, ...], grid: str, elems: int,
               values: int, counted: str, value_bytes: int = 4) -> KernelDef:
    """A KernelDef whose LaunchSpec has `grid`, `elems` elements per thread and the byte model `values` values
    of `value_bytes` bytes per element of the output."""
    spec = LaunchSpec(param_list, grid=grid, elems_per_thread=elems, values_per_elem=values,
                      value_bytes=value_bytes)
    return KernelDef(name, source, per_thread, spec, counted)


def _row(name: str, width: int, param_list, values: int, counted: str) -> KernelDef:
    return kernel_def(name, SOURCE, width, param_list, "row", width, values, counted)


def _flat(name: str, width: int, param_list, values: int, counted: str) -> KernelDef:
    return kernel_def(name, SOURCE, width, param_list, "flat", width, values, counted)


XBO = params("x:ptr", "bias:ptr", "out:ptr", "cols:u64")
"""A row kernel's parameters: x [rows, cols], bias [cols], out [rows, cols], cols."""
ION = params("in:ptr", "out:ptr", "n:u64")
"""A flat kernel's parameters: in [n], out [n], n."""
_BIAS_NOTE = "x read, out written (bias: a cache-resident row, not counted)"


def chain_kernels(width: int) -> dict[str, KernelDef]:
    """The chain kernels at `width` floats per thread, by name."""
    return {k.name: k for k in (
        _row("addBiasRow", width, XBO, 2, _BIAS_NOTE),
        _flat("applyGeluErf", width, ION, 2, "in read, out written"),
        _flat("applyGeluTanh", width, ION, 2, "in read, out written"),
        _flat("addResidual", width, params("in:ptr", "r:ptr", "out:ptr", "n:u64"), 3, "in and r read, out written"),
        _row("biasGeluFused", width, XBO, 2, _BIAS_NOTE),
        _row("biasGeluResidualFused", width, params("x:ptr", "bias:ptr", "r:ptr", "out:ptr", "cols:u64"), 3,
             "x and r read, out written (bias not counted)"),
    )}


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
    def specs(self) -> tuple[LaunchSpec, ...]:
        """The LaunchSpec of each kernel launched, in order (what grader.timing.timer.Timed reads the bytes from)."""
        return tuple(k.spec for k in self.kernels)

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


def make_launch(gpu, loaded: dict[str, object], version: Version, buffers: dict[str, object],
                scalars: dict[str, int], rows: int, cols: int):
    """A function that enqueues `version`'s launches on gpu's stream (grader.core.launch.bind, per kernel).

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
    grader.core.launch.LaunchSpec.args does."""
    bind(gpu, loaded[kd.expr], kd.spec, 1, elements, values)()


def source_text() -> str:
    """The text of grader/exercises/bias_gelu/chain.cu (SOURCE)."""
    return files(__package__).joinpath(SOURCE).read_text()


def load_chain(gpu, defs: list[KernelDef]) -> dict[str, object]:
    """Compile `defs` (kernels of SOURCE) for gpu's arch (once per NVRTC version and arch: grader.compile.kernel_cache)
    and load them on `gpu`: {name expression: cuda.core Kernel}. Raises SubmissionError(stage COMPILE) only if
    the grader's own source is broken."""
    compiled = kernel_cache.compiled(source_text(), SOURCE, tuple(d.expr for d in defs), gpu.info.arch)
    return gpu.load(compiled)
