// Whole program: device helpers in a namespace (called as gelu::erfForm) and in an anonymous namespace, an extern "C" kernel, a __constant__ table filled by the host, a struct of launch settings. Expected: graded (correct); kept the namespace braces and erfForm, tanhForm is left out; ignored main, Launch, hostSettings.
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

namespace gelu {
constexpr float kInvSqrt2 = 0.70710678118654752f;

__device__ __forceinline__ float erfForm(float v) { return 0.5f * v * (1.0f + erff(v * kInvSqrt2)); }

__device__ __forceinline__ float tanhForm(float v) {
    return 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
}

float referenceErf(float v) { return 0.5f * v * (1.0f + std::erf(v * kInvSqrt2)); }
}  // namespace gelu

namespace {
__device__ __forceinline__ size_t columnOf() { return blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; }

struct Launch {
    dim3 grid, block;
};

Launch hostSettings(int rows, int cols) { return {dim3((cols + 255) / 256, rows), dim3(256)}; }
}  // namespace

__constant__ float c_unused[4];

extern "C" __global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                                         float* __restrict__ out, size_t cols) {
    const size_t col = columnOf();
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        out[i] = gelu::erfForm(x[i] + bias[col]);
    }
}

int main() {
    const int rows = 4, cols = 8;
    float h[rows * cols], b[cols];
    for (int i = 0; i < rows * cols; ++i) h[i] = i * 0.25f - 4.0f;
    memset(b, 0, sizeof b);
    float *dx, *db, *dout;
    cudaMalloc(&dx, sizeof h);
    cudaMalloc(&db, sizeof b);
    cudaMalloc(&dout, sizeof h);
    cudaMemcpy(dx, h, sizeof h, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice);
    const float table[4] = {1, 2, 3, 4};
    cudaMemcpyToSymbol(c_unused, table, sizeof table);
    const Launch l = hostSettings(rows, cols);
    biasGeluFused<<<l.grid, l.block>>>(dx, db, dout, cols);
    cudaMemcpy(h, dout, sizeof h, cudaMemcpyDeviceToHost);
    printf("%f %f\n", h[0], gelu::referenceErf(-4.0f));
    return 0;
}
