"""Stage 3, device: the one place that talks to the GPU (cuda.core; cuda.bindings where cuda.core has no call).

`open_gpu()` gives a `Gpu`: the current device, the grader's own stream, and the device facts the grader
sizes its work by (compute capability, L2 size, free memory). Every allocation, copy, fill, module load and
kernel launch of the grader goes through its methods, so there is one copy of launch code. Errors a kernel
causes (illegal address, misaligned access, trap) surface at `sync()` as SubmissionError(Stage.RUN):
after one of those the CUDA context is unusable and the process must end (grader.batch.command isolates each
submission in a spawned process for that reason).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel

from grader.compile.nvrtc import Compiled
from grader.core import exercise
from grader.core.errors import GraderError, GraderFault, NoGpuError, Stage, SubmissionError
from grader.core.launch import DevicePtr, address
from grader.gpu.clocks import ClockLimits, ClockSample, reason_names

KERNEL_FAULTS = frozenset({
    "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_INVALID_ADDRESS_SPACE",
    "CUDA_ERROR_INVALID_PC", "CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_HARDWARE_STACK_ERROR",
    "CUDA_ERROR_ASSERT", "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_LAUNCH_TIMEOUT",
})
"""Sticky errors a kernel leaves in its context (a fault, a trap, an assert): any later call, the grader's own
included, returns one of these. Every other error of a grader's call is the grader's (GraderFault)."""


class GpuInfo(BaseModel):
    """Facts about the device: name, compute capability ('9.0'), arch ('sm_90'), multiprocessors, L2 and
    memory sizes in bytes, the driver's CUDA version ('13.0'), and the peak DRAM bandwidth in GB/s
    (memory clock x 2 transfers per clock x bus width / 8; None where the driver does not say)."""

    name: str
    compute_capability: str
    arch: str
    multiprocessors: int
    threads_per_multiprocessor: int
    l2_bytes: int
    total_bytes: int
    free_bytes: int
    driver_cuda: str
    peak_gbs: float | None = None


@dataclass(frozen=True)
class GpuLoad:
    """What NVML says of a GPU's other users: `processes` ("pid 123 (python3, 2.0 GiB)"), not counting this
    process, and `utilization`, the percent of NVML's last sample period in which a kernel ran (any process,
    this one included)."""

    processes: list[str] = field(default_factory=list)
    utilization: int | None = None


def visible_gpus() -> list[str]:
    """Names of the CUDA devices this process sees (CUDA_VISIBLE_DEVICES applies), after cuInit(0). Creates
    no context (grader.batch.command's probe uses it in a short-lived child).

    Raises NoGpuError with a one-line reason: cuda-python not importable, no NVIDIA driver (libcuda.so.1
    could not be loaded), CUDA did not initialise, or the driver sees no CUDA device.
    """
    try:
        from cuda.bindings import driver
    except ImportError as err:  # pragma: no cover - a broken install
        raise NoGpuError(f"cuda-python is not importable ({err}); install the grader with its CUDA extra") from None
    try:
        (status,) = driver.cuInit(0)
    except RuntimeError:  # libcuda.so is missing: no NVIDIA driver on this machine
        raise NoGpuError("no NVIDIA driver on this machine (libcuda.so.1 could not be loaded)") from None
    if status != driver.CUresult.CUDA_SUCCESS:
        raise NoGpuError(f"CUDA did not initialise: {status.name}")
    status, count = driver.cuDeviceGetCount()
    if status != driver.CUresult.CUDA_SUCCESS or count == 0:
        raise NoGpuError("the NVIDIA driver sees no CUDA device")
    names = []
    for i in range(count):
        _, dev = driver.cuDeviceGet(i)
        _, raw = driver.cuDeviceGetName(64, dev)
        names.append(raw.split(b"\0", 1)[0].decode(errors="replace"))
    return names


def open_gpu(device_id: int = 0) -> Gpu:
    """Make device `device_id` current and return a Gpu with its own stream.

    Raises NoGpuError (exit 3) with a one-line reason when there is no driver, no device, or CUDA fails
    to initialise (see visible_gpus).
    """
    count = len(visible_gpus())
    if device_id >= count:
        raise NoGpuError(f"device {device_id} requested, but only {count} CUDA device(s) are visible")
    from cuda.core import Device

    try:
        dev = Device(device_id)
        dev.set_current()
        return Gpu(dev)
    except GraderError:
        raise
    except Exception as err:  # noqa: BLE001 - a context the driver would not create (memory, exclusive mode)
        raise grader_call_failed(f"opening CUDA device {device_id}", err) from None


def visible_arches() -> list[str]:
    """The architecture ('sm_90') of each CUDA device this process sees, in visible_gpus()'s order; call it
    after visible_gpus() (which initialises CUDA). Creates no context."""
    from cuda.bindings import driver

    attr = driver.CUdevice_attribute
    out = []
    for i in range(driver.cuDeviceGetCount()[1]):
        _, dev = driver.cuDeviceGet(i)
        _, major = driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
        _, minor = driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
        out.append(f"sm_{major}{minor}")
    return out


def grader_call_failed(what: str, err: BaseException | str) -> GraderError:
    """The error for a failed CUDA call of the grader's own (`what`, e.g. "cuMemGetInfo"): the submission's
    SubmissionError(Stage.RUN) when the error is a fault its kernel left behind (KERNEL_FAULTS), else a
    GraderFault (exit 4) saying it is not the submission's doing."""
    name = err if isinstance(err, str) else cuda_error_name(err)
    if name in KERNEL_FAULTS:
        return SubmissionError(Stage.RUN, f"the kernel faulted on the GPU: {name}", fault=name)
    detail = name or (str(err).splitlines() or [type(err).__name__])[0][:200]
    return GraderFault(f"the grader's own CUDA call ({what}) failed: {detail}; this is not the submission's "
                       "doing: run again, and report it if it happens again")


class Gpu:
    """The current device and the grader's own stream. Create with `open_gpu()`."""

    def __init__(self, device) -> None:
        from cuda.bindings import driver
        from cuda.core import EventOptions

        self._driver = driver
        self._nvml = None
        self.device = device
        self.stream = device.create_stream()
        self._timing = EventOptions(timing_enabled=True)
        props = device.properties
        cc = device.compute_capability
        free, total = self._call(driver.cuMemGetInfo(), "cuMemGetInfo")
        version = self._call(driver.cuDriverGetVersion(), "cuDriverGetVersion")
        self.info = GpuInfo(
            name=device.name,
            compute_capability=f"{cc.major}.{cc.minor}",
            arch=f"sm_{cc.major}{cc.minor}",
            multiprocessors=props.multiprocessor_count,
            threads_per_multiprocessor=props.max_threads_per_multiprocessor,
            l2_bytes=props.l2_cache_size,
            total_bytes=int(total),
            free_bytes=int(free),
            driver_cuda=f"{version // 1000}.{version % 1000 // 10}",
            peak_gbs=_peak_gbs(props),
        )

    # --- modules and launches ------------------------------------------------------------------
    def load(self, compiled: Compiled) -> dict[str, object]:
        """Load a compiled module's cubin; return {kernel name: cuda.core Kernel}.

        Raises SubmissionError(Stage.LAUNCH) if the driver refuses the cubin.
        """
        from cuda.core import ObjectCode

        try:
            obj = ObjectCode.from_cubin(compiled.cubin)
            return {name: obj.get_kernel(info.mangled) for name, info in compiled.kernels.items()}
        except Exception as err:
            raise SubmissionError(Stage.LAUNCH, f"the driver could not load the compiled kernel: {err}") from None

    @staticmethod
    def kernel_limits(kernel) -> dict[str, int]:
        """What the driver says of a loaded kernel (cuda.core Kernel.attributes): max_threads_per_block (its
        `__launch_bounds__`, or what its registers allow), num_regs (per thread), shared_size_bytes (static
        shared memory per block) and local_size_bytes (local memory per thread: stack and spills). Keys the
        driver does not answer are left out; never raises."""
        out = {}
        for key in ("max_threads_per_block", "num_regs", "shared_size_bytes", "local_size_bytes"):
            try:
                out[key] = int(getattr(kernel.attributes, key))
            except Exception:  # noqa: BLE001 - an older driver: that fact is simply not reported
                pass
        return out

    @staticmethod
    def param_sizes(kernel) -> list[int]:
        """Size in bytes of each parameter of a loaded kernel, from the driver (cuKernelGetParamInfo)."""
        return [int(p.size) for p in kernel.arguments_info]

    def launch(self, kernel, grid: tuple[int, ...], block: tuple[int, ...], *args) -> None:
        """Launch `kernel` on the grader's stream. Pass buffers as Buffer or DevicePtr and integers as numpy
        scalars of the parameter's width (a plain Python int would be passed as a pointer-sized value).

        Raises SubmissionError(Stage.LAUNCH) if the launch is refused (bad grid, too many resources).
        """
        from cuda.core import LaunchConfig, launch

        try:
            launch(self.stream, LaunchConfig(grid=tuple(grid), block=tuple(block)), kernel, *args)
        except Exception as err:
            raise SubmissionError(Stage.LAUNCH,
                                  f"launch with grid {tuple(grid)} block {tuple(block)} failed: {err}") from None

    def sync(self) -> None:
        """Wait for the stream. Raises SubmissionError(Stage.RUN) for a fault a kernel caused."""
        try:
            self.stream.sync()
        except Exception as err:
            raise SubmissionError(Stage.RUN, f"the kernel faulted on the GPU: {_cuda_error_name(err)}",
                                  fault=cuda_error_name(err)) from None

    # --- memory --------------------------------------------------------------------------------
    def alloc(self, nbytes: int):
        """A device allocation of `nbytes` (a cuda.core Buffer, 256-byte aligned or better). Raises
        GraderFault when the driver refuses it (out of memory), SubmissionError after a kernel fault."""
        try:
            return self.device.allocate(nbytes, stream=self.stream)
        except Exception as err:  # noqa: BLE001 - cuda.core's CUDAError
            raise grader_call_failed(f"allocating {nbytes} bytes", err) from None

    def upload(self, dst: int | object, host: np.ndarray) -> None:
        """Copy a contiguous host array to device address `dst` (an int or anything with `.ptr`), synchronously."""
        host = np.ascontiguousarray(host)
        self._call(self._driver.cuMemcpyHtoDAsync(address(dst), host.ctypes.data, host.nbytes, self.stream.handle),
                   "cuMemcpyHtoDAsync")
        self.sync()

    def download(self, src: int | object, count: int, dtype) -> np.ndarray:
        """Copy `count` elements of `dtype` from device address `src` to a new host array, synchronously."""
        host = np.empty(count, dtype=dtype)
        self._call(self._driver.cuMemcpyDtoHAsync(host.ctypes.data, address(src), host.nbytes, self.stream.handle),
                   "cuMemcpyDtoHAsync")
        self.sync()
        return host

    def fill_words(self, dst: int | object, word: int, count: int) -> None:
        """Set `count` 32-bit words at `dst` to `word` (asynchronous, on the grader's stream)."""
        self._call(self._driver.cuMemsetD32Async(address(dst), word, count, self.stream.handle), "cuMemsetD32Async")

    def copy(self, dst: int | object, src: int | object, nbytes: int) -> None:
        """Device-to-device copy of `nbytes` on the grader's stream (cuMemcpyDtoDAsync), asynchronous."""
        self._call(self._driver.cuMemcpyDtoDAsync(address(dst), address(src), nbytes, self.stream.handle),
                   "cuMemcpyDtoDAsync")

    def free_bytes(self) -> int:
        """Free device memory now, in bytes."""
        free, _ = self._call(self._driver.cuMemGetInfo(), "cuMemGetInfo")
        return int(free)

    def fence(self, nbytes: int) -> Fence | None:
        """A Fence of at least `nbytes` (made once and kept; a larger one replaces it), or None where the driver
        has no virtual memory management (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED is 0: then no read
        outside a buffer can be made to fault). Raises GraderFault when the driver refuses the mapping."""
        fence = getattr(self, "_fence", None)
        if fence is not None and fence.size >= nbytes:
            return fence
        attr = self._driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
        if not self._call(self._driver.cuDeviceGetAttribute(attr, self.device.device_id), "cuDeviceGetAttribute"):
            return None
        if fence is not None:
            self.sync()
            fence.close()
        self._fence = Fence(self, nbytes)
        return self._fence

    # --- the GPU's other users (NVML, through cuda.core.system) ---------------------------------
    def uuid(self) -> str:
        """The device's UUID as CUDA reports it (the same whatever CUDA_VISIBLE_DEVICES maps it to)."""
        return str(self.device.uuid)

    def load_now(self) -> GpuLoad | None:
        """Other processes with a CUDA context on this GPU and its utilization over NVML's last sample
        period; None when NVML cannot answer (no NVML library, no permission, a MIG slice, a container that
        hides it). Never raises."""
        try:
            from cuda.core import system

            uid = self.uuid()
            try:
                nv = system.Device(uuid=uid)
            except Exception:  # noqa: BLE001 - NVML wants the "GPU-" prefix CUDA may leave out
                nv = system.Device(uuid=uid if uid.startswith("GPU-") else "GPU-" + uid)
            me = os.getpid()
            others = []
            for p in nv.compute_running_processes:
                if p.pid == me:
                    continue
                try:
                    name = system.get_process_name(p.pid)
                except Exception:  # noqa: BLE001 - a process in another namespace
                    name = "?"
                others.append(f"pid {p.pid} ({os.path.basename(str(name))[:40]}, "
                              f"{(p.used_gpu_memory or 0) / 2**30:.1f} GiB)")
            return GpuLoad(processes=others, utilization=int(nv.utilization.gpu))
        except Exception:  # noqa: BLE001 - NVML is advice; the timing data decides
            return None

    # --- clocks (NVML, through cuda.bindings.nvml) ------------------------------------------------
    def _nvml_handle(self):
        """This GPU's NVML handle (found by UUID, so CUDA_VISIBLE_DEVICES cannot mismatch it), or None where
        NVML does not answer; asked once."""
        if self._nvml is None:
            self._nvml = False
            try:
                from cuda.bindings import nvml

                nvml.init_v2()
                uid = self.uuid()
                self._nvml = (nvml, nvml.device_get_handle_by_uuid(uid if uid.startswith("GPU-") else "GPU-" + uid))
            except Exception:  # noqa: BLE001 - no NVML library, no permission, a MIG slice: clocks not known
                self._nvml = False
        return self._nvml or None

    def clock_limits(self) -> ClockLimits | None:
        """The card's clock limits in MHz (grader.gpu.clocks.ClockLimits: maxima, application clocks as set and by
        default; a value NVML will not give is None), or None without NVML. Never raises."""
        found = self._nvml_handle()
        if found is None:
            return None
        nvml, h = found

        def ask(fn, *args) -> int | None:
            try:
                return int(fn(h, *args))
            except Exception:  # noqa: BLE001 - a query this card does not answer
                return None

        return ClockLimits(sm_max_mhz=ask(nvml.device_get_max_clock_info, _NVML_SM),
                           mem_max_mhz=ask(nvml.device_get_max_clock_info, _NVML_MEM),
                           sm_app_mhz=ask(nvml.device_get_clock, _NVML_SM, _NVML_APP_TARGET),
                           sm_app_default_mhz=ask(nvml.device_get_clock, _NVML_SM, _NVML_APP_DEFAULT),
                           mem_app_mhz=ask(nvml.device_get_clock, _NVML_MEM, _NVML_APP_TARGET),
                           mem_app_default_mhz=ask(nvml.device_get_clock, _NVML_MEM, _NVML_APP_DEFAULT))

    def clock_sample(self, when: str) -> ClockSample | None:
        """NVML's current SM and memory clocks (MHz) and clock event reasons, labelled `when` ('before',
        'during', 'after'), or None without NVML or when a reading fails. Never raises; costs three NVML calls
        (tens of microseconds)."""
        found = self._nvml_handle()
        if found is None:
            return None
        nvml, h = found
        try:
            return ClockSample(when=when, sm_mhz=int(nvml.device_get_clock(h, _NVML_SM, _NVML_CURRENT)),
                               mem_mhz=int(nvml.device_get_clock(h, _NVML_MEM, _NVML_CURRENT)),
                               reasons=reason_names(int(nvml.device_get_current_clocks_event_reasons(h))))
        except Exception:  # noqa: BLE001 - advice; a timing without clocks says so
            return None

    # --- timing --------------------------------------------------------------------------------
    def record(self):
        """Record a timing event on the grader's stream; `later - earlier` of two such events is in ms."""
        try:
            return self.stream.record(options=self._timing)
        except Exception as err:  # noqa: BLE001 - cuda.core's CUDAError
            raise grader_call_failed("recording a timing event", err) from None

    def _call(self, result, what: str = "a driver call"):
        """The value(s) of a cuda.bindings driver call's result tuple; a failed status raises
        grader_call_failed's error (the submission's only for a fault its kernel left behind)."""
        status, *rest = result
        if status != self._driver.CUresult.CUDA_SUCCESS:
            raise grader_call_failed(what, status.name)
        return rest[0] if len(rest) == 1 else tuple(rest)


class GuardedArray:
    """A float32 device array of `count` elements with a guard region before and after it.

    The guards (exercise.GUARD_BYTES each) are filled with exercise.GUARD_WORD; `guard_damage()` says which
    side a kernel wrote into. The array itself starts 256-byte aligned.
    """

    def __init__(self, gpu: Gpu, count: int) -> None:
        self.gpu = gpu
        self.count = count
        self.guard_words = exercise.GUARD_BYTES // 4
        self.buffer = gpu.alloc(exercise.GUARD_BYTES * 2 + count * 4)
        self.base = int(self.buffer.handle)
        self.data = DevicePtr(self.base + exercise.GUARD_BYTES)
        gpu.fill_words(self.base, exercise.GUARD_WORD, self.guard_words * 2 + count)

    def write(self, host: np.ndarray) -> None:
        """Copy a float32 array of `count` elements into the array (guards untouched)."""
        assert host.dtype == np.float32 and host.size == self.count
        self.gpu.upload(self.data.ptr, host)

    def poison(self, word: int) -> None:
        """Fill the array (not the guards) with a 32-bit pattern, e.g. a NaN."""
        self.gpu.fill_words(self.data.ptr, word, self.count)

    def read(self) -> np.ndarray:
        """The array's contents as float32."""
        return self.gpu.download(self.data.ptr, self.count, np.float32)

    def guard_damage(self) -> list[str]:
        """'before' and/or 'after' for each guard region that no longer holds the guard pattern."""
        words = self.gpu.download(self.base, self.guard_words * 2 + self.count, np.uint32)
        out = []
        if np.any(words[: self.guard_words] != exercise.GUARD_WORD):
            out.append("before")
        if np.any(words[self.guard_words + self.count :] != exercise.GUARD_WORD):
            out.append("after")
        return out

    def close(self) -> None:
        self.buffer.close()


FENCE_ALIGN = 256
"""Where a Fence places a buffer that must end at unmapped memory: its start rounded down to this, the alignment
cudaMalloc guarantees (CUDA C++ Programming Guide, "Device Memory Accesses"), so a kernel that relies on it still
runs. A read past the end faults once it goes past the rounding's slack (under FENCE_ALIGN bytes)."""


class Fence:
    """Device memory with unmapped address space on both sides, so that an access just outside it faults
    (CUDA_ERROR_ILLEGAL_ADDRESS) instead of reading a neighbour: the driver's virtual memory management reserves
    one allocation granule before and after a mapped region of `size` bytes (cuMemAddressReserve, cuMemCreate,
    cuMemMap, cuMemSetAccess; CUDA Driver API, "Virtual Memory Management"). `place` puts a buffer at the region's
    start or at its end. Made by Gpu.fence; a self-test writes and reads the whole region before use, so a fault
    in it is never the grader's mapping.

    Raises GraderFault when the driver refuses a step or the self-test fails.
    """

    def __init__(self, gpu: Gpu, nbytes: int) -> None:
        d = gpu._driver
        self._gpu, self._d = gpu, d
        prop = d.CUmemAllocationProp()
        prop.type = d.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        prop.location.type = d.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        prop.location.id = gpu.device.device_id
        gran = int(gpu._call(d.cuMemGetAllocationGranularity(
            prop, d.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            "cuMemGetAllocationGranularity"))
        self.gran = gran
        self.size = max(1, -(-nbytes // gran)) * gran
        self._reserved = int(gpu._call(d.cuMemAddressReserve(self.size + 2 * gran, gran, 0, 0), "cuMemAddressReserve"))
        self.base = self._reserved + gran
        self._handle = self._mapped = None
        try:
            self._handle = gpu._call(d.cuMemCreate(self.size, prop, 0), "cuMemCreate")
            gpu._call(d.cuMemMap(self.base, self.size, 0, self._handle, 0), "cuMemMap")
            self._mapped = True
            access = d.CUmemAccessDesc()
            access.location = prop.location
            access.flags = d.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
            gpu._call(d.cuMemSetAccess(self.base, self.size, [access], 1), "cuMemSetAccess")
            self._self_test()
        except BaseException:
            self.close()
            raise

    def _self_test(self) -> None:
        """Write the whole mapped region and read it back (driver calls: a failure is the grader's, not sticky)."""
        words = self.size // 4
        self._gpu.fill_words(self.base, GUARD_TEST_WORD, words)
        back = self._gpu.download(self.base, words, np.uint32)
        if not np.all(back == GUARD_TEST_WORD):
            raise GraderFault("the grader's fenced buffer did not read back what was written; this is not the "
                              "submission's doing: report it with the GPU and driver")

    def place(self, nbytes: int, side: str) -> DevicePtr:
        """The address of an `nbytes` buffer at the region's 'start' (an access before it faults) or 'end' (its
        start rounded down to FENCE_ALIGN, so an access more than the slack past its end faults)."""
        if nbytes > self.size:
            raise ValueError(f"{nbytes} bytes do not fit a fence of {self.size}")
        if side == "start":
            return DevicePtr(self.base)
        return DevicePtr((self.base + self.size - nbytes) // FENCE_ALIGN * FENCE_ALIGN)

    def close(self) -> None:
        """Unmap, release and free the address range (each step only if it was made; never raises)."""
        d = self._d
        if self._mapped:
            d.cuMemUnmap(self.base, self.size)
            self._mapped = None
        if self._handle is not None:
            d.cuMemRelease(self._handle)
            self._handle = None
        if self._reserved:
            d.cuMemAddressFree(self._reserved, self.size + 2 * self.gran)
            self._reserved = 0


GUARD_TEST_WORD = 0x5EEDF00D
"""What Fence's self-test writes and reads back."""


_NVML_SM, _NVML_MEM = 1, 2
_NVML_CURRENT, _NVML_APP_TARGET, _NVML_APP_DEFAULT = 0, 1, 2
"""nvml.h's nvmlClockType_t and nvmlClockId_t values (cuda.bindings.nvml names their enum members differently
from release to release: ClockType.SM in 13.5, ClockType.CLOCK_SM in 13.3.1; the values are the C API's)."""


def _peak_gbs(props) -> float | None:
    """Peak DRAM bandwidth in GB/s: memory clock (kHz) x 2 (double data rate) x bus width (bits) / 8, the
    usual formula (NVIDIA technical blog, "How to Implement Performance Metrics in CUDA C/C++")."""
    try:
        khz, bits = int(props.memory_clock_rate), int(props.global_memory_bus_width)
    except Exception:  # noqa: BLE001 - not every driver reports them
        return None
    return khz * 1e3 * 2 * bits / 8 / 1e9 if khz > 0 and bits > 0 else None


def cuda_error_name(err: BaseException) -> str | None:
    """The first CUDA_ERROR_* name in `err` or in the exceptions it was raised during (a cleanup after a
    sticky fault raises again), or None."""
    seen: BaseException | None = err
    while seen is not None:
        for word in str(seen).replace(":", " ").replace(",", " ").split():
            if word.startswith("CUDA_ERROR_"):
                return word
        seen = seen.__context__
    return None


def _cuda_error_name(err: Exception) -> str:
    text = str(err)
    word = cuda_error_name(err)
    if word:
        return f"{word} ({text})" if len(text) < 200 else word
    return text[:300]
