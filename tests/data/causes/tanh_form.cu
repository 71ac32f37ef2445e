// Expected first hint: mistake (wrong output: llm.c's tanh GELU, GELU_tanh(x + bias)).
// The page's launch with the tanh form of GELU copied from llm.c: about 8,000 of the 9,797 elements at 101 x 97 are
// off by up to 4.7e-4 (issue 29).

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        const float v = x[i] + bias[col];
        const float cube = 0.044715f * v * v * v;
        out[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + cube)));
    }
}
