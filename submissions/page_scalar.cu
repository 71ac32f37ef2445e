// Expected verdict: FAIL on an H200 (correct output, at about 56% of the fastest copy's bandwidth).
// The page's own answer: a row grid, one float per thread, the page's default launch (no grade block).
// It matches a one-float-per-thread copy, but on an H200 that copy reaches only about 0.63 of the fastest
// copy (2684 against 4232 GB/s), so the grader reports both fractions. On the page's Tesla T4 it is gold.

#define kInvSqrt2 0.70710678118654752f

__device__ __forceinline__ float geluErf(float x) {
    return 0.5f * x * (1.0f + erff(x * kInvSqrt2));
}

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        out[i] = geluErf(x[i] + bias[col]);
    }
}
