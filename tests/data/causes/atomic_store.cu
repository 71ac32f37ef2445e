// Expected first hint: atomic (an atomicExch per element: every store goes to the L2's atomic units and back).
// The page's answer, with each result written by atomicExch instead of a store: correct, but each warp waits for
// the old values to come back from the L2.

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        const float v = x[i] + bias[col];
        atomicExch(out + i, 0.5f * v * (1.0f + erff(v * 0.70710678f)));
    }
}
