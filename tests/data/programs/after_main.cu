// Whole program: the page's scalar biasGeluFused defined after main, with a forward declaration before it (page's default launch). Expected: graded (correct; as slow as submissions/page_scalar.cu on an H200); kept kInvSqrt2, geluErf and the forward declaration; ignored main, addResidual, copyFloor, geluRef, checkRows.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

#define kInvSqrt2 0.70710678118654752f

__device__ __forceinline__ float geluErf(float x) {
    return 0.5f * x * (1.0f + erff(x * kInvSqrt2));
}

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols);

__global__ void addResidual(const float* __restrict__ in, const float* __restrict__ r,
                            float* __restrict__ out, size_t n) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = in[i] + r[i];
}

__global__ void copyFloor(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = in[i];
}

double geluRef(double v) { return 0.5 * v * (1.0 + erf(v / sqrt(2.0))); }

int checkRows(const float* got, const float* x, const float* bias, int rows, int cols) {
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) {
            const double want = geluRef((double)x[i * cols + j] + bias[j]);
            if (fabs(got[i * cols + j] - want) > 1e-5 * (1.0 + fabs(want))) {
                printf("first bad (%d, %d): got %.9g want %.9g\n", i, j, got[i * cols + j], want);
                return 0;
            }
        }
    return 1;
}

int main(void) {
    const int rows = 101, cols = 97;
    const size_t n = (size_t)rows * cols;
    std::vector<float> x(n), bias(cols), out(n);
    for (size_t i = 0; i < n; ++i) x[i] = 8.0f * rand() / RAND_MAX - 4.0f;
    for (int j = 0; j < cols; ++j) bias[j] = rand() / (float)RAND_MAX - 0.5f;
    float *dx, *db, *dout;
    cudaMalloc(&dx, n * sizeof(float));
    cudaMalloc(&db, cols * sizeof(float));
    cudaMalloc(&dout, n * sizeof(float));
    cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(db, bias.data(), cols * sizeof(float), cudaMemcpyHostToDevice);
    dim3 grid((cols + 255) / 256, rows);
    biasGeluFused<<<grid, 256>>>(dx, db, dout, cols);
    cudaMemcpy(out.data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost);
    const int ok = checkRows(out.data(), x.data(), bias.data(), rows, cols);
    printf("%-16s %s\n", "biasGeluFused", ok ? "ok" : "FAIL");
    cudaFree(dx);
    cudaFree(db);
    cudaFree(dout);
    return ok ? 0 : 1;
}

// Bias + exact GELU in one pass: 2 floats per element (x in, out out). The bias is indexed by column.
__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        out[i] = geluErf(x[i] + bias[col]);
    }
}
