// Hint test, expected first hint: scattered access (each warp's loads and stores touch 32 sectors, not 4).
// A flat grid that walks the matrix down its columns: consecutive threads take consecutive rows of one column,
// so their addresses are cols floats apart (16 KiB at 4096 columns). Correct, and far below the copies (H200,
// issue 23: 0.080 of the copy floor). It also splits the index with a 64-bit division (i % rows, i / rows),
// and its loads are 4 bytes wide, but neither is what sets its time.
// grade: params = x, bias, out, rows, cols
// grade: grid = flat

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t rows, size_t cols) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < rows * cols) {
        const size_t row = i % rows, col = i / rows;
        const float v = x[row * cols + col] + bias[col];
        out[row * cols + col] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
}
