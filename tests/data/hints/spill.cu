// Hint test: 64 elements per thread held at once under __launch_bounds__(1024, 2), which caps ptxas at 32
// registers: it spills (NVRTC 13.5: 864 bytes of spill stores, 1044 of spill loads; hundreds of LDL/STL).
// Expected hints: local memory (from SASS only); 4-byte loads only (on a card whose scalar copy is slow).

__device__ __forceinline__ float geluErf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678f)); }

__global__ void __launch_bounds__(1024, 2) biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                                                         float* __restrict__ out, size_t cols) {
    const size_t col = 64 * (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x);
    const size_t base = blockIdx.y * cols;
    if (col + 63 < cols) {
        float v[64];
#pragma unroll
        for (int k = 0; k < 64; ++k) v[k] = x[base + col + k] + bias[col + k];
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < 64; ++k) s += v[k] * v[63 - k];
#pragma unroll
        for (int k = 0; k < 64; ++k) out[base + col + k] = geluErf(v[k]) + 0.0f * s;
    }
}
