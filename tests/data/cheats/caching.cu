// Expected verdict: FAIL (the output of a timed launch is wrong).
// Computes correctly for its first launches, then keeps a count in a __device__ variable and skips all work:
// the output of an earlier launch is left in place. Passes the small correctness runs, so only the check
// of timed launches on redrawn inputs catches it.

__device__ unsigned long long launches;

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    if (launches > 8) return;
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        const float v = x[i] + bias[col];
        out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) atomicAdd(&launches, 1ull);
}
