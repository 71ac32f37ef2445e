// Whole program, refused: biasGeluFused reads g_scale, a host global variable. Expected: refused at the source stage, "`biasGeluFused` reads `g_scale`, a host variable (line 5)".
#include <cstdio>
#include <cuda_runtime.h>

float g_scale = 0.70710678118654752f;

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    const size_t col = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (col < cols) {
        const float v = x[blockIdx.y * cols + col] + bias[col];
        out[blockIdx.y * cols + col] = 0.5f * v * (1.0f + erff(v * g_scale));
    }
}

int main() {
    g_scale = 0.7f;
    printf("%f\n", g_scale);
    return 0;
}
