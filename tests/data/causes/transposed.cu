// Expected first hint: scattered; with counters: scattered (consecutive threads take consecutive rows of one column).
// A flat grid that walks the matrix down its columns (issue 29: right with counters, +0.49): a warp's 32 stores land
// cols floats apart, each in its own 32-byte sector. Its integer divisions and 4-byte loads are not what sets its time.
// grade: params = x, bias, out, n, cols
// grade: grid = flat

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t n, size_t cols) {
    const size_t t = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (t < n) {
        const size_t rows = n / cols;
        const size_t r = t % rows, c = t / rows;
        const float v = x[r * cols + c] + bias[c];
        out[r * cols + c] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
}
