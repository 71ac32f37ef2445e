// Expected first hint: idle (3 of every 4 threads exit at once: the body moves 4 floats per thread, the page's launch gives one thread per element).
// The exercise's most common near miss (issue 29: silver, 76% of the fastest copy's bandwidth on the H200): gold_float4's body
// without its elems_per_thread = 4 declaration, so the page's launch (ceil(cols / 256) blocks per row) starts
// four times the threads the body needs and blocks 4 to 15 of every row exit at once.

__device__ __forceinline__ float geluErf(float v) {
    return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
}

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = 4 * (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x);
    const size_t rowBase = blockIdx.y * cols;
    if ((cols & 3) == 0) {
        if (col < cols) {
            const float4 v = *reinterpret_cast<const float4*>(x + rowBase + col);
            const float4 b = *reinterpret_cast<const float4*>(bias + col);
            float4 r;
            r.x = geluErf(v.x + b.x);
            r.y = geluErf(v.y + b.y);
            r.z = geluErf(v.z + b.z);
            r.w = geluErf(v.w + b.w);
            *reinterpret_cast<float4*>(out + rowBase + col) = r;
        }
    } else {
        for (size_t c = col; c < col + 4 && c < cols; ++c) {
            out[rowBase + c] = geluErf(x[rowBase + c] + bias[c]);
        }
    }
}
