"""Why the bf16 tanh GELU is slow on an H200, and what makes it fast: variants of the kernel timed side by side
against the copy floor on the same buffers (issue 12). Writes their fractions as JSON.

    python benchmarks/bf16_variants.py [--out bf16_variants.json]

Variants (all read 8 or 16 bf16 per thread with 16-byte loads and write them with 16-byte stores):
  tanhf        llm.c's form, software bf16 rounding          (reference_kernels/gelu_bf16.cu geluTanhBf16)
  sigmoid      x / (1 + exp(-2u)), approximate exp and rcp, software rounding
  sigmoid+cvt  the same with the hardware's cvt.rn.bf16x2.f32 (one instruction rounds two floats): the
               reference suite's geluTanhBf16Sigmoid
  sigmoid+cvt x16   the same, 16 values per thread (two 16-byte loads in flight before any math)
Exit 3 without a GPU.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader.compile.nvrtc import compile_kernels  # noqa: E402
from grader.core.errors import NoGpuError  # noqa: E402
from grader.core.launch import LaunchSpec, Param, bind  # noqa: E402
from grader.gpu.device import open_gpu  # noqa: E402
from grader.timing.timer import CopyFloor, InputFiller, TableTimer, Timed, bench_shape  # noqa: E402
from reference_kernels.suite import source_text  # noqa: E402

EXTRA = r"""
struct SigmoidSoft {
    __device__ float operator()(float x) const { return geluTanhSigmoid(x); }
    __device__ unsigned int pack(float lo, float hi) const { return floatToBf16(lo) | (floatToBf16(hi) << 16); }
};
extern "C" __global__ void sigmoidSoft8(const unsigned short* __restrict__ in, unsigned short* __restrict__ out,
                                        size_t n) {
    geluBf16<SigmoidSoft>(in, out, n);
}
__device__ __forceinline__ unsigned int gelu2cvt(unsigned int w) {
    return packBf16x2(geluTanhSigmoid(bf16ToFloat(w & 0xffffu)), geluTanhSigmoid(bf16ToFloat(w >> 16)));
}
extern "C" __global__ void sigmoidCvt16(const unsigned short* __restrict__ in, unsigned short* __restrict__ out,
                                        size_t n) {
    const size_t i = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) * 16;
    if (i + 16 <= n) {
        const uint4 a = __ldcs(reinterpret_cast<const uint4*>(in + i));
        const uint4 b = __ldcs(reinterpret_cast<const uint4*>(in + i + 8));
        *reinterpret_cast<uint4*>(out + i) = make_uint4(gelu2cvt(a.x), gelu2cvt(a.y), gelu2cvt(a.z), gelu2cvt(a.w));
        *reinterpret_cast<uint4*>(out + i + 8) = make_uint4(gelu2cvt(b.x), gelu2cvt(b.y), gelu2cvt(b.z), gelu2cvt(b.w));
    }
}
"""

ION = (Param("in", "ptr"), Param("out", "ptr"), Param("n", "u64"))
VARIANTS = {"tanhf": ("geluTanhBf16", 8), "sigmoid": ("sigmoidSoft8", 8), "sigmoid+cvt": ("geluTanhBf16Sigmoid", 8),
            "sigmoid+cvt x16": ("sigmoidCvt16", 16)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("bf16_variants.json"))
    args = ap.parse_args()
    try:
        gpu = open_gpu()
    except NoGpuError as err:
        print(f"bf16_variants: no GPU ({err})", file=sys.stderr)
        return 3
    names = tuple(k for k, _ in VARIANTS.values())
    kernels = gpu.load(compile_kernels(source_text("gelu_bf16.cu") + EXTRA, "gelu_bf16.cu", names + ("toBf16",),
                                       gpu.info.arch))
    rows, cols = bench_shape(gpu.info, 4, free_bytes=gpu.free_bytes())
    n = 2 * rows * cols // 16 * 16
    src, out, tmp = gpu.alloc(n * 2), gpu.alloc(n * 2), gpu.alloc(n * 4)
    InputFiller(gpu)(tmp, n, 6, -4.0, 4.0)
    bind(gpu, kernels["toBf16"], LaunchSpec(ION), 1, n, {"in": tmp, "out": src, "n": n})()
    gpu.sync()
    specs = {label: LaunchSpec(ION, elems_per_thread=per, values_per_elem=2, value_bytes=2)
             for label, (_, per) in VARIANTS.items()}
    timed = [Timed(label, bind(gpu, kernels[k], specs[label], 1, n, {"in": src, "out": out, "n": n}), (specs[label],),
                   per_thread=per) for label, (k, per) in VARIANTS.items()]
    timer = TableTimer(gpu, CopyFloor(gpu), timed, n, src, out, n // 2)
    timer.run()
    table = timer.table("bf16 variants", f"{n} bf16 values")
    for r in table.rows:
        print(f"{r.version:18s} {r.ms:8.4f} ms {r.gbs:8.1f} GB/s {r.x_copy:6.3f} x copy")
    args.out.write_text(table.model_dump_json(indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
