// Hint test: 8 elements per thread staged in a per-thread array by loops that are not unrolled, so the array
// is indexed with a run-time counter and lives in local memory: in SASS one STL and one LDL in the loops and
// a 32-byte stack frame (ptxas reports no spill: it is an array, not spilled registers).
// Expected hints: local memory (from SASS only); 4-byte loads only (on a card whose scalar copy is slow).

__device__ __forceinline__ float geluErf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678f)); }

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = 8 * (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x);
    if (col >= cols) return;
    const size_t base = blockIdx.y * cols;
    const int n = cols - col < 8 ? static_cast<int>(cols - col) : 8;
    float v[8];
#pragma unroll 1
    for (int k = 0; k < n; ++k) v[k] = x[base + col + k] + bias[col + k];
#pragma unroll 1
    for (int k = 0; k < n; ++k) out[base + col + k] = geluErf(v[k]);
}
