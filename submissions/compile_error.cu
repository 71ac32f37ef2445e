// Expected verdict: ERROR (compile error), shown as `compile_error.cu:LINE: error: ...`.
// A missing semicolon and an undeclared name.

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    const size_t col = blockIdx.x * blockDim.x + threadIdx.x
    if (col < cols) {
        out[blockIdx.y * cols + col] = gelu(x[blockIdx.y * cols + col] + bias[col]);
    }
}
