"""A kernel launch as data: parameters with their widths, the grid kind, the block, the work per thread and
the byte model. The grid and the arguments of every launch the grader makes (the submission's, the copy
floor's, the on-GPU check's, the reference kernels') come from a `LaunchSpec` here, so the row-grid formula
and the packing of arguments exist once.

Grids, for a rows x cols problem (n = rows * cols elements), B threads per block and E elements per thread:
  row      (ceil(cols / (B * E)), rows): blockIdx.y is the row (rows <= 65535, the gridDim.y limit)
  flat     (ceil(n / (B * E)), 1): one index over all elements
  stride   (BLOCKS, 1): a fixed grid-stride grid; BLOCKS defaults to the number that fills the GPU once
           (multiprocessors x max threads per multiprocessor / B), and is capped by what n needs when `cap`
           is set

Arguments are numpy scalars of the parameter's width (cuda.core passes a plain Python int as a
pointer-sized value): pointers and 64-bit integers as np.uint64, 32-bit integers as np.int32 (a value that
does not fit is refused), floats as np.float32 or np.float64. Pure Python and numpy: needs no GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from grader.core import exercise
from grader.core.errors import Stage, SubmissionError

GridKind = Literal["row", "flat", "stride"]

KINDS = {"ptr": 8, "u64": 8, "i32": 4, "f32": 4, "f64": 8}
"""Parameter kinds and their sizes in bytes (what PTX declares: u64, u64, s32/u32, f32, f64)."""

_SCALAR = {"i32": np.int32, "f32": np.float32, "f64": np.float64}


@dataclass(frozen=True)
class DevicePtr:
    """A device address inside an allocation (a guarded array's data past its guard region)."""

    ptr: int


def address(x) -> int:
    """The device address of an int, a DevicePtr or a cuda.core Buffer (its handle)."""
    if isinstance(x, int):
        return x
    if isinstance(x, DevicePtr):
        return x.ptr
    return int(x.handle)


@dataclass(frozen=True)
class Param:
    """One kernel parameter: its name and kind (a key of KINDS)."""

    name: str
    kind: str

    @property
    def size(self) -> int:
        """Bytes the parameter takes (8 for a pointer)."""
        return KINDS[self.kind]


def integer_param(name: str, width: int) -> Param:
    """An integer parameter of `width` bytes (4: int, 8: size_t or another 64-bit integer)."""
    return Param(name, "i32" if width == 4 else "u64")


@dataclass(frozen=True)
class LaunchSpec:
    """How to launch one kernel: `params` in order, `grid` kind, `block` threads per block, `elems_per_thread`
    elements of the problem each thread handles, `stride_blocks` (stride grids only; None: fill the GPU once)
    and `cap` (stride grids only: no more blocks than n needs). Its byte model: `values_per_elem` values of
    `value_bytes` bytes read or written per element of the output."""

    params: tuple[Param, ...]
    grid: GridKind = "flat"
    block: int = exercise.BLOCK
    elems_per_thread: int = 1
    stride_blocks: int | None = None
    cap: bool = False
    values_per_elem: int = exercise.COPY_FLOATS_PER_ELEMENT
    value_bytes: int = exercise.BYTES_PER_FLOAT

    @property
    def bytes_per_elem(self) -> int:
        """Bytes read plus written per element of the output: values_per_elem * value_bytes."""
        return self.values_per_elem * self.value_bytes

    @property
    def names(self) -> tuple[str, ...]:
        """The parameter names, in order."""
        return tuple(p.name for p in self.params)

    def grid_for(self, rows: int, cols: int, resident_threads: int = 0) -> tuple[int, int, int]:
        """The grid for a rows x cols problem (a flat one of n elements: rows = 1, cols = n). resident_threads:
        multiprocessors x max threads per multiprocessor, for a stride grid without a declared block count.

        Raises SubmissionError(Stage.CONTRACT) when a row grid would need more than 65535 rows.
        """
        per_block = self.block * self.elems_per_thread
        if self.grid == "row":
            if rows > exercise.MAX_GRID_Y:
                raise SubmissionError(Stage.CONTRACT, f"a row grid launches one block row per row; {rows} > "
                                                      f"{exercise.MAX_GRID_Y} (the gridDim.y limit)")
            return (math.ceil(cols / per_block), rows, 1)
        if self.grid == "flat":
            return (math.ceil(rows * cols / per_block), 1, 1)
        blocks = self.stride_blocks or max(1, resident_threads // self.block)
        if self.cap:
            blocks = max(1, min(blocks, math.ceil(rows * cols / per_block)))
        return (blocks, 1, 1)

    def block_dims(self) -> tuple[int, int, int]:
        """The block as CUDA takes it: (block, 1, 1)."""
        return (self.block, 1, 1)

    def args(self, values: dict[str, object]) -> tuple:
        """The arguments in parameter order. values: every parameter by name; a pointer as an int address, a
        DevicePtr or a cuda.core Buffer (see address). Raises KeyError for a missing value,
        TypeError for one the kernel has no parameter for, SubmissionError(Stage.CONTRACT) for a value
        that does not fit a 32-bit parameter."""
        extra = set(values) - set(self.names)
        if extra:
            raise TypeError(f"no parameter(s) {sorted(extra)}; the kernel takes {', '.join(self.names)}")
        out = []
        for p in self.params:
            v = values[p.name]
            if p.kind == "ptr":
                out.append(np.uint64(address(v)))
            elif p.kind == "u64":
                out.append(np.uint64(v))
            elif p.kind == "i32":
                if not -(2**31) <= int(v) < 2**31:
                    raise SubmissionError(Stage.CONTRACT, f"{p.name} = {v} does not fit the kernel's 32-bit "
                                                          "parameter: declare it size_t")
                out.append(np.int32(v))
            else:
                out.append(_SCALAR[p.kind](v))
        return tuple(out)


def bind(gpu, kernel, spec: LaunchSpec, rows: int, cols: int, values: dict[str, object]):
    """A function that enqueues one launch of `kernel` per `spec` for a rows x cols problem on gpu's stream
    (grader.gpu.device.Gpu.launch); the grid and the arguments are worked out once, here, so a timed loop pays
    only the launch. Raises what LaunchSpec.grid_for and LaunchSpec.args raise."""
    grid = spec.grid_for(rows, cols, gpu.info.multiprocessors * gpu.info.threads_per_multiprocessor)
    block, args = spec.block_dims(), spec.args(values)

    def launch() -> None:
        gpu.launch(kernel, grid, block, *args)

    return launch
