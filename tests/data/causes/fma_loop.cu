// Expected first hint: unexplained; with counters: work (a 256-step FMA loop per element).
// The page's answer with a loop of 256 dependent multiply-adds per element whose result is kept (issue 29: right with
// counters): the issue slots, not the memory, set its time.

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        const float v = x[i] + bias[col];
        float acc = 0.0f;
        for (int k = 0; k < 256; ++k) {
            acc = fmaf(acc, 0.5f, v * 1e-30f);
        }
        out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f)) + acc * 1e-30f;
    }
}
