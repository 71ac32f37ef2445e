// Hint test: the tanh GELU written without tanh, as v * sigmoid(2 sqrt(2/pi) (v + 0.044715 v^3)) with the
// constants folded by hand. Its folded cubic coefficient 0.0713548 gives it away.
// Expected hint: "the tanh form is a different function".

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        const float v = x[i] + bias[col];
        out[i] = v / (1.0f + __expf(-(1.5957691f * v + 0.0713548f * v * v * v)));
    }
}
