// Hint test: a flat grid that finds the bias entry with i % cols on size_t operands (the page's pitfall).
// NVRTC 13.5 emits rem.u64 behind a both-fit-in-32-bits test, with a rem.u32 fast path.
// Expected hints: "look at your bias index first"; 4-byte loads only (on a card whose scalar copy is slow).
// Ranked on the H200 (issue 23): the 4-byte loads first; it ran at 55.8% of the fastest copy's bandwidth, the page's scalar
// kernel at 0.564, so the division costs about 1% there (tests/data/ncu/h200_mod_cols.csv: its counters).
// grade: params = x, bias, out, n, cols
// grade: grid = flat

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t n, size_t cols) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n) {
        const float v = x[i] + bias[i % cols];
        out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
}
