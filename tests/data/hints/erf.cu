// Hint test: a clean exact-GELU kernel (16-byte loads, row grid, erff) in a file whose other kernel has
// every mistake (i % cols, tanhf, scalar loads). Only the submission's own .entry is read, so the
// expected hints are none.

__global__ void stagedTanh(const float* x, const float* bias, float* out, size_t n, size_t cols) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n) {
        const float v = x[i] + bias[i % cols];
        out[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
}

__device__ __forceinline__ float geluErf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678f)); }

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = 4 * (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x);
    if (col + 3 < cols) {
        const size_t base = blockIdx.y * cols;
        const float4 v = *reinterpret_cast<const float4*>(x + base + col);
        const float4 b = *reinterpret_cast<const float4*>(bias + col);
        *reinterpret_cast<float4*>(out + base + col) =
            make_float4(geluErf(v.x + b.x), geluErf(v.y + b.y), geluErf(v.z + b.z), geluErf(v.w + b.w));
    }
}
