"""A stand-in for grader.gpu.device.Gpu that runs the reference kernels as numpy code, for CPU tests only.

It exists so the self-check's device path (buffers, wiring, argument packing, grids, timing tables, report)
runs end to end without a GPU. It checks what a real launch would reject or corrupt silently: every argument
must be a numpy scalar of the width PTX declares for that parameter, every pointer must lie in a live
allocation with room for what the kernel touches, and a kernel only writes the elements its grid covers.
The numbers it computes are float32 emulations, never a claim about a GPU.
"""

from __future__ import annotations

import numpy as np

from grader.check import draws
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.gpu.device import GpuInfo, address
from reference_kernels import expected as ref

BASE = 1 << 32


class FakeBuffer:
    def __init__(self, gpu: FakeGpu, ptr: int, nbytes: int) -> None:
        self.gpu, self.ptr, self.nbytes = gpu, ptr, nbytes
        self.handle = ptr

    def close(self) -> None:
        self.gpu.allocs.pop(self.ptr, None)


class FakeFence:
    """The stand-in for grader.gpu.device.Fence: one allocation of exactly `size` bytes (the stand-in's allocations
    keep 256 bytes apart, and an access outside every live one fails), buffers placed at its start or end."""

    def __init__(self, gpu: FakeGpu, nbytes: int) -> None:
        self.size = -(-nbytes // 4096) * 4096
        self.buffer = gpu.alloc(self.size)
        self.base = self.buffer.ptr

    def place(self, nbytes: int, side: str):
        from grader.core.launch import DevicePtr
        from grader.gpu.device import FENCE_ALIGN

        if side == "start":
            return DevicePtr(self.base)
        return DevicePtr((self.base + self.size - nbytes) // FENCE_ALIGN * FENCE_ALIGN)


class FakeKernel:
    def __init__(self, expr: str, params) -> None:
        self.expr, self.params = expr, params
        self.name = expr.split("<")[0]
        self.width = int(expr.split("<")[1].rstrip(">")) if "<" in expr else 0


class FakeGpu:
    def __init__(self, l2_bytes: int = 1 << 16, free_bytes: int = 1 << 30) -> None:
        self.info = GpuInfo(name="fake", compute_capability="9.0", arch="sm_90", multiprocessors=4,
                            threads_per_multiprocessor=2048, l2_bytes=l2_bytes, total_bytes=free_bytes,
                            free_bytes=free_bytes, driver_cuda="13.0")
        self.allocs: dict[int, np.ndarray] = {}
        self.next = BASE
        self.clock = 0.0
        self.launch_ms = 0.01
        self.launches: list[str] = []
        self.limits = None
        """What clock_limits() answers (a grader.gpu.clocks.ClockLimits; None: no NVML)."""
        self.clock_plan = None
        """clock_plan(when, k) -> grader.gpu.clocks.ClockSample | None for the k-th clock_sample call (None: no
        NVML)."""
        self.clock_calls: list[str] = []
        self.fences = None
        self.fault: str | None = None
        """A fault a test's kernel left (a CUDA error name): sync() raises it, as a real sticky fault."""
        self.kernel_ms: dict[str, float] = {}
        """Launch time of a kernel by name, where it is not launch_ms."""
        """The Fence fence() gives (None: made on first use; False: the stand-in driver has no VMM)."""

    # --- memory ----------------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> FakeBuffer:
        ptr = self.next
        self.next += (nbytes + 511) // 256 * 256 + 256
        self.allocs[ptr] = np.zeros(max(nbytes, 1), dtype=np.uint8)
        return FakeBuffer(self, ptr, nbytes)

    def view(self, ptr: int, nbytes: int) -> np.ndarray:
        for base, mem in self.allocs.items():
            if base <= ptr and ptr + nbytes <= base + mem.size:
                return mem[ptr - base: ptr - base + nbytes]
        raise AssertionError(f"access of {nbytes} bytes at {ptr:#x} outside every live allocation")

    def arr(self, ptr, count: int, dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        return self.view(address(ptr), count * dtype.itemsize).view(dtype)

    def upload(self, dst, host: np.ndarray) -> None:
        host = np.ascontiguousarray(host)
        self.view(address(dst), host.nbytes)[:] = host.view(np.uint8).ravel()

    def download(self, src, count: int, dtype) -> np.ndarray:
        return self.arr(src, count, dtype).copy()

    def fill_words(self, dst, word: int, count: int) -> None:
        self.arr(dst, count, np.uint32)[:] = np.uint32(word)

    def copy(self, dst, src, nbytes: int) -> None:
        self.view(address(dst), nbytes)[:] = self.view(address(src), nbytes)
        self.clock += nbytes * 2e-9

    def fence(self, nbytes: int) -> FakeFence | None:
        if self.fences is False:
            return None
        if self.fences is None or self.fences.size < nbytes:
            self.fences = FakeFence(self, nbytes)
        return self.fences

    def free_bytes(self) -> int:
        return self.info.free_bytes - sum(m.size for m in self.allocs.values())

    # --- the GPU's other users and clocks (a stand-in NVML) ----------------------------------------
    def uuid(self) -> str:
        return "GPU-fake"

    def load_now(self):
        return None

    def clock_limits(self):
        return self.limits

    def clock_sample(self, when: str):
        self.clock_calls.append(when)
        return self.clock_plan(when, len(self.clock_calls) - 1) if self.clock_plan else None

    # --- kernels ---------------------------------------------------------------------------------
    def load(self, compiled) -> dict[str, FakeKernel]:
        return {name: FakeKernel(name, info.params) for name, info in compiled.kernels.items()}

    def sync(self) -> None:
        if self.fault:  # sticky, as a real fault is: every later sync raises it again
            from grader.core.errors import Stage, SubmissionError

            raise SubmissionError(Stage.RUN, f"the kernel faulted on the GPU: {self.fault}", fault=self.fault)

    def record(self) -> float:
        return self.clock

    def launch(self, kernel: FakeKernel, grid, block, *args) -> None:
        assert len(args) == len(kernel.params), f"{kernel.expr}: {len(args)} arguments for {len(kernel.params)}"
        for a, p in zip(args, kernel.params, strict=True):
            assert isinstance(a, np.generic) and a.dtype.itemsize == p.size, f"{kernel.expr}: {a!r} for {p}"
            assert (p.ptx_type in ("u64", "s64", "b64", "f64")) == (a.dtype.itemsize == 8), f"{kernel.expr}: {a!r}"
        grid, block = tuple(grid) + (1,) * (3 - len(grid)), tuple(block) + (1,) * (3 - len(block))
        assert 0 < grid[1] <= 65535 and block[0] * block[1] * block[2] <= 1024
        self.launches.append(kernel.expr)
        getattr(self, "_k_" + kernel.name)(kernel, grid, block, *[a.item() for a in args])
        self.clock += self.kernel_ms.get(kernel.name, self.launch_ms)

    def _threads(self, grid, block) -> int:
        return grid[0] * block[0]

    # flat kernels: the elements a 1-D grid covers, capped at n
    def _covered(self, grid, block, per_thread: int, n: int) -> int:
        return min(n, self._threads(grid, block) * per_thread)

    def _k_copyScalar(self, k, grid, block, src, dst, n):
        m = self._covered(grid, block, 1, n)
        self.arr(dst, m, np.float32)[:] = self.arr(src, m, np.float32)

    def _k_copyVec4(self, k, grid, block, src, dst, n4):
        m = self._covered(grid, block, 1, n4) * 4
        self.arr(dst, m, np.float32)[:] = self.arr(src, m, np.float32)

    def _k_checkBiasGelu(self, k, grid, block, x, bias, out, out2, rows, cols, xs, xsh, xshape, bs, bsh, bshape,
                         atol, rtol, counts):
        n = rows * cols
        xv = draws.draw(xs, n, draws.unpack(xsh, xshape))
        bv = draws.draw(bs, cols, draws.unpack(bsh, bshape))
        want = ref.gelu_erf(xv.astype(np.float64).reshape(rows, cols) + bv.astype(np.float64)).ravel()
        c = self.arr(counts, 8, np.uint64)

        def wrong_of(buf):
            got = self.arr(buf, n, np.float32).astype(np.float64)
            return ~np.where(np.isnan(want), np.isnan(got), np.abs(got - want) <= atol + rtol * np.abs(want))

        for slot, wrong in ((0, wrong_of(out)), (2, self.arr(x, n, np.uint32) != xv.view(np.uint32)),
                            (4, self.arr(bias, cols, np.uint32) != bv.view(np.uint32)),
                            (6, wrong_of(out2) if out2 else np.zeros(n, bool))):
            c[slot] += np.uint64(wrong.sum())
            if wrong.any():
                c[slot + 1] = min(int(c[slot + 1]), int(np.argmax(wrong)))

    def _k_fillUniform(self, k, grid, block, out, n, seed, lo, hi):
        rng = np.random.default_rng(seed)
        self.arr(out, n, np.float32)[:] = rng.uniform(lo, hi, n).astype(np.float32)

    def _k_fillDraw(self, k, grid, block, out, n, seed, shares, shape):
        self.arr(out, n, np.float32)[:] = draws.draw(seed, n, draws.unpack(shares, shape))

    # --- RoPE
    def _rope_index(self, pairs, half, heads, seq, m):
        p = np.arange(m, dtype=np.int64)
        return p, ((p // (half * heads)) % seq) * half + p % half

    @staticmethod
    def _rotate(x0, x1, c, s):
        out0 = (x0.astype(np.float64) * c - (x1 * s).astype(np.float32)).astype(np.float32)
        out1 = (x0.astype(np.float64) * s + (x1 * c).astype(np.float32)).astype(np.float32)
        return out0, out1

    def _rope(self, k, grid, block, src, cos, sin, dst, pairs, half, heads, seq, split: bool):
        m = self._covered(grid, block, k.width, pairs)
        x = self.arr(src, 2 * pairs, np.float32)
        out = self.arr(dst, 2 * pairs, np.float32)
        c, s = self.arr(cos, seq * half, np.float32), self.arr(sin, seq * half, np.float32)
        p, t = self._rope_index(pairs, half, heads, seq, m)
        if split:
            at = (p // half) * 2 * half + p % half
            i0, i1 = at, at + half
        else:
            i0, i1 = 2 * p, 2 * p + 1
        out[i0], out[i1] = self._rotate(x[i0], x[i1], c[t], s[t])

    def _k_ropeInterleaved(self, k, grid, block, *a):
        self._rope(k, grid, block, *a, split=False)

    _k_ropeInterleavedVec2 = _k_ropeInterleaved

    def _k_ropeHalfSplit(self, k, grid, block, *a):
        self._rope(k, grid, block, *a, split=True)

    def _k_ropeFusedQK(self, k, grid, block, q, kk, cos, sin, q_out, k_out, pairs, half, heads, seq):
        self._rope(k, grid, block, q, cos, sin, q_out, pairs, half, heads, seq, split=False)
        self._rope(k, grid, block, kk, cos, sin, k_out, pairs, half, heads, seq, split=False)

    # --- chain
    def _row(self, k, grid, block, cols, f, *ptrs):
        rows = grid[1]
        covered = min(cols, grid[0] * block[0] * k.width) if k.width else cols  # a student's kernel: every column
        a = [self.arr(p, rows * cols, np.float32).reshape(rows, cols)[:, :covered] for p in ptrs[:-1]]
        out = self.arr(ptrs[-1], rows * cols, np.float32).reshape(rows, cols)
        out[:, :covered] = f(*a).astype(np.float32)

    def _flat(self, k, grid, block, n, f, *ptrs):
        m = self._covered(grid, block, k.width, n)
        a = [self.arr(p, n, np.float32)[:m] for p in ptrs[:-1]]
        self.arr(ptrs[-1], n, np.float32)[:m] = f(*a).astype(np.float32)

    def _bias(self, bias, cols):
        return self.arr(bias, cols, np.float32).astype(np.float64)

    def _k_addBiasRow(self, k, grid, block, x, bias, out, cols):
        b = self._bias(bias, cols)
        self._row(k, grid, block, cols, lambda v: v + b[: v.shape[1]], x, out)

    def _k_biasGeluFused(self, k, grid, block, x, bias, out, cols):
        b = self._bias(bias, cols)
        self._row(k, grid, block, cols, lambda v: ref.gelu_erf((v + b[: v.shape[1]]).astype(np.float32)), x, out)

    def _k_biasGeluResidualFused(self, k, grid, block, x, bias, r, out, cols):
        b = self._bias(bias, cols)
        self._row(k, grid, block, cols,
                  lambda v, w: ref.gelu_erf((v + b[: v.shape[1]]).astype(np.float32)).astype(np.float32) + w, x, r, out)

    def _k_applyGeluErf(self, k, grid, block, src, out, n):
        self._flat(k, grid, block, n, ref.gelu_erf, src, out)

    def _k_applyGeluTanh(self, k, grid, block, src, out, n):
        self._flat(k, grid, block, n, ref.gelu_tanh, src, out)

    def _k_addResidual(self, k, grid, block, src, r, out, n):
        self._flat(k, grid, block, n, lambda a, b: a.astype(np.float64) + b, src, r, out)

    def _k_geluForms(self, k, grid, block, x, e, t, n):
        m = self._covered(grid, block, 1, n)
        v = self.arr(x, n, np.float32)[:m]
        self.arr(e, n, np.float32)[:m] = ref.gelu_erf(v).astype(np.float32)
        self.arr(t, n, np.float32)[:m] = ref.gelu_tanh(v).astype(np.float32)

    # --- bf16
    def _k_toBf16(self, k, grid, block, src, out, n):
        m = self._covered(grid, block, 1, n)
        self.arr(out, n, np.uint16)[:m] = ref.f32_to_bf16(self.arr(src, n, np.float32)[:m])

    def _k_geluTanhBf16Sigmoid(self, k, grid, block, src, out, n):
        self._k_geluTanhBf16(k, grid, block, src, out, n)

    def _k_geluTanhBf16(self, k, grid, block, src, out, n):
        assert address(src) % 16 == 0 and address(out) % 16 == 0
        m = self._covered(grid, block, 8, n)
        v = ref.bf16_to_f32(self.arr(src, n, np.uint16)[:m])
        self.arr(out, n, np.uint16)[:m] = ref.f32_to_bf16(ref.gelu_tanh(v).astype(np.float32))


def with_example(path, l2_bytes: int = 1 << 14, launch_ms: float = 5.0):
    """A FakeGpu with the example at `path` compiled and loaded: (gpu, kernel, spec, contract). launch_ms: each
    launch's stand-in time (5 ms: 40 launches make the 200 ms warm-up)."""
    from grader.compile.nvrtc import compile_kernels
    from grader.exercises import bias_gelu as exercise
    from grader.source.read import read_submission

    sub = read_submission(path, BIAS_GELU)
    compiled = compile_kernels(sub.compile_text, sub.name, (exercise.KERNEL_NAME,), "sm_90")
    gpu = FakeGpu(l2_bytes=l2_bytes)
    gpu.launch_ms = launch_ms
    kernel = gpu.load(compiled)[exercise.KERNEL_NAME]
    spec = sub.contract.launch_spec(tuple(p.size for p in compiled.kernels[exercise.KERNEL_NAME].params))
    return gpu, kernel, spec, sub.contract
