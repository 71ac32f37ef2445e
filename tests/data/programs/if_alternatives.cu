// Whole program: two versions of biasGeluFused in the branches of #if USE_VEC4 / #else, and a first attempt kept under #if 0. Expected: graded (correct; NVRTC compiles the #else branch, USE_VEC4 being undefined); kept geluErf; ignored main.
#include <cstdio>
#include <cuda_runtime.h>

#if 0
// first attempt: wrong bias index, kept for the write-up
__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    out[i] = x[i] + bias[i % 97];
}
#endif

__device__ float geluErf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

#ifdef USE_VEC4
__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    const size_t col = 4 * (blockIdx.x * (size_t)blockDim.x + threadIdx.x);
    for (size_t c = col; c < col + 4 && c < cols; ++c)
        out[blockIdx.y * cols + c] = geluErf(x[blockIdx.y * cols + c] + bias[c]);
}
#else
__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    const size_t col = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (col < cols) out[blockIdx.y * cols + col] = geluErf(x[blockIdx.y * cols + col] + bias[col]);
}
#endif

int main() {
    float* d;
    cudaMalloc(&d, 97 * sizeof(float));
    biasGeluFused<<<dim3(1, 1), 256>>>(d, d, d, 97);
    printf("%s\n", cudaGetErrorString(cudaDeviceSynchronize()));
    return 0;
}
