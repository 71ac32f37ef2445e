// A grid-stride float4 main loop over n / 4 vectors, then a scalar grid-stride tail loop over the last n % 4
// floats: two loops one after the other, but with different widths (16 and 4 bytes): not two passes over x.
__device__ __forceinline__ float gelu(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678f)); }

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t n, size_t cols) {
    const size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t n4 = n / 4;
    for (size_t v = tid; v < n4; v += stride) {
        const float4 a = reinterpret_cast<const float4*>(x)[v];
        const float4 b = reinterpret_cast<const float4*>(bias)[v % (cols / 4)];
        reinterpret_cast<float4*>(out)[v] =
            make_float4(gelu(a.x + b.x), gelu(a.y + b.y), gelu(a.z + b.z), gelu(a.w + b.w));
    }
    for (size_t i = 4 * n4 + tid; i < n; i += stride) {
        out[i] = gelu(x[i] + bias[i % cols]);
    }
}
