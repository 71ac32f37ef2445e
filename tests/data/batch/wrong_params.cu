// Expected: ERROR at the contract stage: three parameters where the launch passes four; both lists printed.
__global__ void biasGeluFused(const float* x, float* out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) out[blockIdx.y * cols + col] = x[blockIdx.y * cols + col];
}
