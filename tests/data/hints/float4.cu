// Hint test: a row grid moving 4 floats per thread with 16-byte loads (ld.global.nc.v4.f32), with a
// scalar path for rows that are not 16-byte aligned. Expected: no hint at all.

__device__ __forceinline__ float geluErf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678f)); }

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = 4 * (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x);
    const size_t base = blockIdx.y * cols;
    if ((cols & 3) == 0) {
        if (col < cols) {
            const float4 v = *reinterpret_cast<const float4*>(x + base + col);
            const float4 b = *reinterpret_cast<const float4*>(bias + col);
            const float4 r = make_float4(geluErf(v.x + b.x), geluErf(v.y + b.y), geluErf(v.z + b.z),
                                         geluErf(v.w + b.w));
            *reinterpret_cast<float4*>(out + base + col) = r;
        }
    } else {
        for (size_t c = col; c < col + 4 && c < cols; ++c) out[base + c] = geluErf(x[base + c] + bias[c]);
    }
}
