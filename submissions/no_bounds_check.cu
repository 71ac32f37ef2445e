// Expected verdict: FAIL verification (writes past the end of the output).
// The page's row grid without `if (col < cols)`: at 101 x 97 the last 159 threads of each row write into
// the next row, and the last row's write past the end of `out`. The guard region after the output
// catches it.

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    const size_t i = blockIdx.y * cols + col;
    const float v = x[i] + bias[col];
    out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
}
