// Expected: error at stage launch: __launch_bounds__(128) under the page's default 256-thread launch; the
// message says so and what to declare (instead of the driver's CUDA_ERROR_INVALID_VALUE).
__global__ void __launch_bounds__(128) biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    size_t col = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (col < cols) {
        size_t i = blockIdx.y * cols + col;
        float v = x[i] + bias[col];
        out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
}
