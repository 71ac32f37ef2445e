// Hint test, expected first hint: "extra work per element" naming the FP64 pipe (the kernel computes in double).
// The page's row grid with one float per thread, the GELU in double precision (erf(double)): on the H200 35.4%
// of the fastest copy's bandwidth, 55.6% of the one-float copy's (issue 23), so its 4-byte loads are not what holds it back
// first: 5.03 warp instructions per element against the page's 1.94, issue slots 92% busy.
// tests/data/ncu/h200_double.csv: its counters.

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        const double v = x[i] + bias[col];
        out[i] = (float)(0.5*v*(1.0+erf(v*0.7071067811865476)));
    }
}
