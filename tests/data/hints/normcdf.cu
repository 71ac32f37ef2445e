// Hint test: the exact GELU written as v * normcdff(v) (= 0.5 v erfc(-v / sqrt(2))), with 16-byte loads on a
// row grid. normcdff's code has MUFU.EX2 and two MUFU.RCP in SASS, but no reciprocal of 1 + exp and no tanh
// constant. Expected: no hint at all.

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = 4 * (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x);
    if (col + 3 < cols) {
        const size_t base = blockIdx.y * cols;
        const float4 v = *reinterpret_cast<const float4*>(x + base + col);
        const float4 b = *reinterpret_cast<const float4*>(bias + col);
        const float4 s = make_float4(v.x + b.x, v.y + b.y, v.z + b.z, v.w + b.w);
        *reinterpret_cast<float4*>(out + base + col) =
            make_float4(s.x * normcdff(s.x), s.y * normcdff(s.y), s.z * normcdff(s.z), s.w * normcdff(s.w));
    }
}
