// The page's answer with a compute loop per element whose trip count is a parameter (steps): a loop with no memory
// access, run once for each element a thread stores.
__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols, int steps) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        const float v = x[i] + bias[col];
        float acc = v;
        for (int k = 0; k < steps; ++k) {
            acc = fmaf(acc, 0.999f, 1e-3f * v);
        }
        out[i] = 0.5f * acc * (1.0f + erff(acc * 0.70710678f));
    }
}
