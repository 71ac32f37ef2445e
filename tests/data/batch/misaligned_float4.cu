// Expected: ERROR at the run stage, CUDA_ERROR_MISALIGNED_ADDRESS, with a message naming the ragged 101 x 97
// shape: 16-byte loads everywhere, but at 97 columns a row is 388 bytes, so rows after the first are not
// 16-byte aligned.
// grade: elems_per_thread = 4
__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    const size_t col = 4 * (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x);
    if (col + 3 < cols) {
        const size_t i = blockIdx.y * cols + col;
        const float4 v = *reinterpret_cast<const float4*>(x + i);
        const float4 b = *reinterpret_cast<const float4*>(bias + col);
        float4 r;
        r.x = 0.5f * (v.x + b.x) * (1.0f + erff((v.x + b.x) * 0.70710678f));
        r.y = 0.5f * (v.y + b.y) * (1.0f + erff((v.y + b.y) * 0.70710678f));
        r.z = 0.5f * (v.z + b.z) * (1.0f + erff((v.z + b.z) * 0.70710678f));
        r.w = 0.5f * (v.w + b.w) * (1.0f + erff((v.w + b.w) * 0.70710678f));
        *reinterpret_cast<float4*>(out + i) = r;
    }
}
