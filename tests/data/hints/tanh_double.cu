// Hint test: tanh in double precision, without the tanh GELU's 0.044715, so only tanh(double)'s own inline
// expansion can give it away. Expected hint: "the tanh form is a different function".

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        const double v = x[i] + bias[col];
        out[i] = static_cast<float>(0.5 * v * (1.0 + tanh(0.7978845608028654 * v)));
    }
}
