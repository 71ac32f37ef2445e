// Expected verdict: FAIL on an H200 (correct output, at about 68% of the fastest copy's bandwidth: 0.682 and 0.677 in two gradings).
// The page's own kernel as printed: a flat grid, one pair per thread, the page's default launch (no grade block).
// Its pos and j come from size_t division and remainder: on the H200 each is a call of CUDA's 64-bit division
// routine, and with 4-byte loads and one pair per thread it stays far below the copy floor (the reference suite's
// ropeInterleaved<1>). The grader's hints point at the index arithmetic first, then at the width.

__global__ void ropeInterleaved(const float* __restrict__ in, const float* __restrict__ cosTab, const float* __restrict__ sinTab, float* __restrict__ out, size_t pairs, int halfDim, int heads, int seq) {
    const size_t p = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (p < pairs) {
        const size_t half = static_cast<size_t>(halfDim);
        const size_t j = p % half;
        const size_t pos = (p / (half * static_cast<size_t>(heads))) % static_cast<size_t>(seq);
        const float c = cosTab[pos * half + j];
        const float s = sinTab[pos * half + j];
        const float x0 = in[2 * p];
        const float x1 = in[2 * p + 1];
        out[2 * p] = x0 * c - x1 * s;
        out[2 * p + 1] = x0 * s + x1 * c;
    }
}
