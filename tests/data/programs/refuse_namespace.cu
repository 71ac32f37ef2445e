// Whole program, refused: biasGeluFused lives in namespace student. Expected: refused at the source stage, "`biasGeluFused` is inside `namespace student { }`".
#include <cstdio>
#include <cuda_runtime.h>

namespace student {
__device__ float geluErf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    const size_t col = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (col < cols) out[blockIdx.y * cols + col] = geluErf(x[blockIdx.y * cols + col] + bias[col]);
}
}  // namespace student

int main() {
    float* d;
    cudaMalloc(&d, 1024 * sizeof(float));
    student::biasGeluFused<<<dim3(4, 1), 256>>>(d, d, d, 1024);
    printf("done\n");
    return 0;
}
