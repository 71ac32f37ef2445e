// Expected first hint: fence (a __threadfence() between two volatile stores of each element: MEMBAR per element).
// The page's answer, but each element is stored twice through a volatile pointer with a fence between (issue 29:
// 37% of the fastest copy's bandwidth on the H200): each warp waits at the fence for its first store to reach the GPU's point
// of coherence, then stores again.

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        const float v = x[i] + bias[col];
        volatile float* o = out;
        const float y = 0.5f * v * (1.0f + erff(v * 0.70710678f));
        o[i] = y;
        __threadfence();
        o[i] = y;
    }
}
