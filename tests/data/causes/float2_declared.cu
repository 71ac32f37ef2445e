// Expected first hint: none (float2_page_launch.cu's body with its elems_per_thread = 2: what its idle fact predicts it reaches).
// The idle fact of float2_page_launch.cu (issue 29 measured 68% of the fastest copy's bandwidth) predicts the fix reaches 78% of
// it: this kernel is that fix, and benchmarks/hint_check.py prints what it measures.
// grade: params = x, bias, out, cols
// grade: grid = row
// grade: elems_per_thread = 2

__device__ __forceinline__ float geluErf(float v) {
    return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
}

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = 2 * (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x);
    const size_t rowBase = blockIdx.y * cols;
    if ((cols & 1) == 0) {
        if (col < cols) {
            const float2 v = *reinterpret_cast<const float2*>(x + rowBase + col);
            const float2 b = *reinterpret_cast<const float2*>(bias + col);
            float2 r;
            r.x = geluErf(v.x + b.x);
            r.y = geluErf(v.y + b.y);
            *reinterpret_cast<float2*>(out + rowBase + col) = r;
        }
    } else {
        for (size_t c = col; c < col + 2 && c < cols; ++c) {
            out[rowBase + c] = geluErf(x[rowBase + c] + bias[c]);
        }
    }
}
