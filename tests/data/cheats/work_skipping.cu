// Expected verdict: FAIL (the output of a timed launch is wrong).
// The gold float4 kernel, except that on large launches (more than 1000 rows) it skips the last 1% of the
// rows: 99% of the work, at every shape the correctness runs use it does all of it. Without the check of
// timed launches it would time faster than the fastest copy.
//
// grade: elems_per_thread = 4

__device__ __forceinline__ float geluErf(float v) {
    return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
}

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    if (gridDim.y > 1000 && blockIdx.y >= gridDim.y - gridDim.y / 100) return;
    const size_t col = 4 * (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x);
    const size_t rowBase = blockIdx.y * cols;
    if ((cols & 3) == 0) {
        if (col < cols) {
            const float4 v = *reinterpret_cast<const float4*>(x + rowBase + col);
            const float4 b = *reinterpret_cast<const float4*>(bias + col);
            *reinterpret_cast<float4*>(out + rowBase + col) =
                make_float4(geluErf(v.x + b.x), geluErf(v.y + b.y), geluErf(v.z + b.z), geluErf(v.w + b.w));
        }
    } else {
        for (size_t c = col; c < col + 4 && c < cols; ++c) out[rowBase + c] = geluErf(x[rowBase + c] + bias[c]);
    }
}
