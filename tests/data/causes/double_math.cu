// Expected first hint: double; with counters: double (the GELU in double: the FP64 pipe).
// The page's row grid with one float per thread, computed in double (erf(double)): issue 23 measured 35.4% of the fastest
// copy's bandwidth on the H200 for the same kernel (tests/data/hints/double.cu).

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        const double v = (double)x[i] + (double)bias[col];
        out[i] = (float)(0.5 * v * (1.0 + erf(v * 0.7071067811865476)));
    }
}
