// Expected verdict: FAIL (the output of a timed launch is wrong).
// Does all the work at every shape the correctness runs use (cols <= 4099), but on wider rows skips the last
// 1% of each row: 99% of the work, at a speed above the copy floor.

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols && !(cols > 4099 && col >= cols - cols / 100)) {
        const size_t i = blockIdx.y * cols + col;
        const float v = x[i] + bias[col];
        out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
}
