// Hint test, expected first hint: the work (the kernel computes in double: the FP64 pipe sets its time).
// The page's row grid with one float per thread, but the GELU in double precision (erf(double)); on the H200
// it ran at 0.353 of the copy floor (issue 23), below the one-float copy's 0.63, so its 4-byte loads are not
// what holds it back first.

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        const double v = static_cast<double>(x[i]) + bias[col];
        out[i] = static_cast<float>(0.5 * v * (1.0 + erf(v * 0.7071067811865476)));
    }
}
