// Expected first hint: mistake (wrong output: the sigmoid GELU, v * sigmoid(1.702 v)).

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        const float v = x[i] + bias[col];
        out[i] = v / (1.0f + expf(-1.702f * v));
    }
}
