// Whole program, refused: it includes a header of its own (helpers.cuh), which the grader never reads. Expected: refused at the source stage, "refused `#include`" at line 4.
#include <cstdio>
#include <cuda_runtime.h>
#include "helpers.cuh"

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    const size_t col = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (col < cols) out[blockIdx.y * cols + col] = geluErf(x[blockIdx.y * cols + col] + bias[col]);
}

int main() {
    printf("done\n");
    return 0;
}
