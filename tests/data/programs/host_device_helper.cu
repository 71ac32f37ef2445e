// Whole program: geluErf marked __host__ __device__, used by the kernel and by the host's check; iostream output. Expected: graded (correct); kept kInvSqrt2, geluErf; ignored main, maxError.
#include <iostream>
#include <iomanip>
#include <vector>
#include <cmath>
#include <cuda_runtime.h>

static constexpr float kInvSqrt2 = 0.70710678118654752f;

// One GELU for both sides: the host's check computes exactly what the kernel computes.
__host__ __device__ inline float geluErf(float v) {
    return 0.5f * v * (1.0f + erff(v * kInvSqrt2));
}

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        out[i] = geluErf(x[i] + bias[col]);
    }
}

float maxError(const std::vector<float>& got, const std::vector<float>& x, const std::vector<float>& bias,
               int cols) {
    float worst = 0.0f;
    for (size_t i = 0; i < got.size(); ++i) {
        worst = std::max(worst, std::fabs(got[i] - geluErf(x[i] + bias[i % cols])));
    }
    return worst;
}

int main() {
    const int rows = 101, cols = 97;
    std::vector<float> x(rows * cols), bias(cols), out(rows * cols);
    for (size_t i = 0; i < x.size(); ++i) x[i] = -4.0f + 8.0f * (i % 1000) / 1000.0f;
    for (int j = 0; j < cols; ++j) bias[j] = -0.5f + j / float(cols);
    float *dx = nullptr, *db = nullptr, *dout = nullptr;
    cudaMalloc(&dx, x.size() * sizeof(float));
    cudaMalloc(&db, bias.size() * sizeof(float));
    cudaMalloc(&dout, out.size() * sizeof(float));
    cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(db, bias.data(), bias.size() * sizeof(float), cudaMemcpyHostToDevice);
    biasGeluFused<<<dim3((cols + 255) / 256, rows), 256>>>(dx, db, dout, cols);
    cudaMemcpy(out.data(), dout, out.size() * sizeof(float), cudaMemcpyDeviceToHost);
    std::cout << "biasGeluFused max error " << std::scientific << std::setprecision(3)
              << maxError(out, x, bias, cols) << std::endl;
    cudaFree(dx);
    cudaFree(db);
    cudaFree(dout);
    return 0;
}
