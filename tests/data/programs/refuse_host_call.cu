// Whole program, refused: biasGeluFused calls gelu(), a host function (not marked __device__). Expected: refused at the source stage, "`biasGeluFused` calls `gelu`, a host function (line 7)".
#include <cstdio>
#include <cmath>
#include <cuda_runtime.h>

// Used by the CPU check, and (by mistake) by the kernel: nvcc refuses this too.
float gelu(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    const size_t col = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (col < cols) out[blockIdx.y * cols + col] = gelu(x[blockIdx.y * cols + col] + bias[col]);
}

int main() {
    printf("%f\n", gelu(1.0f));
    return 0;
}
