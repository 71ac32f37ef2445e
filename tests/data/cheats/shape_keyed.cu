// Expected verdict: FAIL (wrong output at a ragged shape other than 101 x 97).
// Correct only at the page's 97 columns; elsewhere it copies x (a copy runs at the floor).

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        if (cols == 97) {
            const float v = x[i] + bias[col];
            out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
        } else {
            out[i] = x[i];
        }
    }
}
