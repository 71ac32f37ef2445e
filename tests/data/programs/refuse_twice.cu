// Whole program, refused: biasGeluFused is defined twice (a scalar version pasted above the float4 one, both live). Expected: refused at the source stage, "`biasGeluFused` is defined twice (lines 7 and 13)".
#include <cstdio>
#include <cuda_runtime.h>

__device__ float geluErf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    const size_t col = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (col < cols) out[blockIdx.y * cols + col] = geluErf(x[blockIdx.y * cols + col] + bias[col]);
}

// float4 version
__global__ void biasGeluFused(const float4* x, const float4* bias, float4* out, size_t cols4) {
    const size_t col = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (col < cols4) {
        const float4 v = x[blockIdx.y * cols4 + col], b = bias[col];
        out[blockIdx.y * cols4 + col] = make_float4(geluErf(v.x + b.x), geluErf(v.y + b.y), geluErf(v.z + b.z),
                                                    geluErf(v.w + b.w));
    }
}

int main() {
    printf("two kernels\n");
    return 0;
}
