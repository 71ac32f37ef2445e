// Hint test: the page's own answer, a row grid with one float per thread (ld.global.nc.f32 only).
// Expected hint: 4-byte loads only, when the one-float copy is far below the floor; no division, no tanh.
// On the H200 (issue 23): 56.4% of the fastest copy's bandwidth, 88.8% of the one-float copy's; the counters show nothing
// else (tests/data/ncu/h200_scalar.csv), and it stands for the page's answer in the other recorded files.

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        const float v = x[i] + bias[col];
        out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
}
