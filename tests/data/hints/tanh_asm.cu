// Hint test: the tanh GELU through the hardware tanh (inline PTX tanh.approx.f32), with sqrt(2/pi) and
// 0.044715 folded by hand into one cubic coefficient. Expected hint: "the tanh form is a different function".

__device__ __forceinline__ float fastTanh(float a) {
    float r;
    asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(a));
    return r;
}

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        const float v = x[i] + bias[col];
        out[i] = 0.5f * v * (1.0f + fastTanh(0.7978846f * v + 0.0356774f * v * v * v));
    }
}
