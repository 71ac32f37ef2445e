// Whole program, refused: biasGeluFused is a template over the floats per thread, launched as biasGeluFused<4>. Expected: refused at the source stage, "`biasGeluFused` is a template".
#include <cstdio>
#include <cuda_runtime.h>

__device__ float geluErf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

template <int kVec>
__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    const size_t col = kVec * (blockIdx.x * (size_t)blockDim.x + threadIdx.x);
    for (int k = 0; k < kVec; ++k)
        if (col + k < cols) out[blockIdx.y * cols + col + k] = geluErf(x[blockIdx.y * cols + col + k] + bias[col + k]);
}

int main() {
    float* d;
    cudaMalloc(&d, 1024 * sizeof(float));
    biasGeluFused<4><<<dim3(1, 1), 256>>>(d, d, d, 1024);
    printf("done\n");
    return 0;
}
