// Expected first hint: idle (half the threads exit at once: the body moves 2 floats per thread, the page's launch gives one thread per element).
// A float2 body in the page's launch (issue 29: 68% of the fastest copy's bandwidth on the H200): blocks 8 to 15 of every
// row of the default grid (ceil(cols / 256) blocks per row) have no element.

__device__ __forceinline__ float geluErf(float v) {
    return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
}

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = 2 * (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x);
    const size_t rowBase = blockIdx.y * cols;
    if ((cols & 1) == 0) {
        if (col < cols) {
            const float2 v = *reinterpret_cast<const float2*>(x + rowBase + col);
            const float2 b = *reinterpret_cast<const float2*>(bias + col);
            float2 r;
            r.x = geluErf(v.x + b.x);
            r.y = geluErf(v.y + b.y);
            *reinterpret_cast<float2*>(out + rowBase + col) = r;
        }
    } else {
        for (size_t c = col; c < col + 2 && c < cols; ++c) {
            out[rowBase + c] = geluErf(x[rowBase + c] + bias[c]);
        }
    }
}
