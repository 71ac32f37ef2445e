// Hint test: the tanh GELU and i % cols hidden in __noinline__ helpers, which PTX keeps as .func
// functions called from the kernel's .entry. Expected hints: bias index, and the tanh form.

__device__ __noinline__ float gelu(float v) {
    return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
}

__device__ __noinline__ size_t biasIndex(size_t i, size_t cols) { return i % cols; }

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t n, size_t cols) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = gelu(x[i] + bias[biasIndex(i, cols)]);
}
