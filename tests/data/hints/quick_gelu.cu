// Hint test: the sigmoid GELU v * sigmoid(1.702 v) = v / (1 + expf(-1.702 v)): neither tanh nor 0.044715, so
// the PTX shows nothing; the machine code shows the reciprocal of 1 + exp (MUFU.EX2, FFMA ..., 1, MUFU.RCP).
// Expected hints: from SASS "the tanh form is a different function" (none from PTX); 16-byte loads, no other.

__device__ __forceinline__ float geluSigmoid(float v) { return v / (1.0f + expf(-1.702f * v)); }

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = 4 * (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x);
    if (col + 3 < cols) {
        const size_t base = blockIdx.y * cols;
        const float4 v = *reinterpret_cast<const float4*>(x + base + col);
        const float4 b = *reinterpret_cast<const float4*>(bias + col);
        *reinterpret_cast<float4*>(out + base + col) = make_float4(
            geluSigmoid(v.x + b.x), geluSigmoid(v.y + b.y), geluSigmoid(v.z + b.z), geluSigmoid(v.w + b.w));
    }
}
