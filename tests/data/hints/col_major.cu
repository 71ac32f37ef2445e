// Hint test, expected first hint: "scattered accesses" (each warp's stores touch 32 sectors, not 4).
// A flat grid that walks the matrix down its columns: consecutive threads take consecutive rows of one column,
// so their addresses are cols floats apart (16 KiB at 4096 columns). Correct, and far below the copies: on the
// H200 8.0% of the fastest copy's bandwidth, 12.6% of the one-float copy's (issue 23), so `grade FILE` measures its counters
// unasked. It also divides by run-time values (n / cols, i % rows, i / rows: 64-bit) and its loads are
// 4 bytes wide, but neither is what sets its time. tests/data/ncu/h200_col_major.csv: its counters.
// grade: params = x, bias, out, n, cols
// grade: grid = flat

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t n, size_t cols) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n) { const size_t r = n / cols, j = i % r * cols + i / r;
        const float v = x[j] + bias[i / r];
        out[j] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
}
