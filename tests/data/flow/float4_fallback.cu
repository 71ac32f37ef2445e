// float4 rows, with a scalar fallback for rows that are not 16-byte aligned (cols % 4 != 0), both addressing out
// through the same row pointer: each element is stored once (the two stores are on different paths).
__device__ __forceinline__ float gelu(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678f)); }

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, int cols) {
    const int c4 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    const float* xr = x + (size_t)blockIdx.y * cols;
    float* orow = out + (size_t)blockIdx.y * cols;
    if (c4 >= cols) return;
    if ((cols & 3) == 0) {
        const float4 v = *reinterpret_cast<const float4*>(xr + c4);
        const float4 b = *reinterpret_cast<const float4*>(bias + c4);
        *reinterpret_cast<float4*>(orow + c4) =
            make_float4(gelu(v.x + b.x), gelu(v.y + b.y), gelu(v.z + b.z), gelu(v.w + b.w));
    } else {
        orow[c4] = gelu(xr[c4] + bias[c4]);
        if (c4 + 1 < cols) orow[c4 + 1] = gelu(xr[c4 + 1] + bias[c4 + 1]);
        if (c4 + 2 < cols) orow[c4 + 2] = gelu(xr[c4 + 2] + bias[c4 + 2]);
        if (c4 + 3 < cols) orow[c4 + 3] = gelu(xr[c4 + 3] + bias[c4 + 3]);
    }
}
