// Hint test: 128 elements per thread (32 float4 loads) kept live until a row maximum is known, so ptxas
// gives each thread about 165 registers (NVRTC 13.5, sm_90): an SM then holds 12 of its 64 warps.
// Expected hint: registers (from SASS only); 16-byte loads, no other hint.

__device__ __forceinline__ float geluErf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678f)); }

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = 128 * (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x);
    const size_t base = blockIdx.y * cols;
    if (col + 127 < cols) {
        float4 v[32];
        float m = 0.0f;
#pragma unroll
        for (int k = 0; k < 32; ++k) {
            v[k] = *reinterpret_cast<const float4*>(x + base + col + 4 * k);
            m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
        }
#pragma unroll
        for (int k = 0; k < 32; ++k) {
            const float4 b = *reinterpret_cast<const float4*>(bias + col + 4 * k);
            *reinterpret_cast<float4*>(out + base + col + 4 * k) = make_float4(
                geluErf(v[k].x + b.x) - m, geluErf(v[k].y + b.y) - m, geluErf(v[k].z + b.z) - m,
                geluErf(v[k].w + b.w) - m);
        }
    }
}
