// Whole program with Windows line ends (CRLF), in the style of Visual Studio's CUDA template: quoted runtime includes, a host wrapper returning cudaError_t. Expected: graded (correct); kept geluErf; ignored main, launchBiasGelu.

#include "cuda_runtime.h"
#include "device_launch_parameters.h"

#include <stdio.h>
#include <math.h>

cudaError_t launchBiasGelu(float* out, const float* x, const float* bias, int rows, int cols);

__device__ float geluErf(float v)
{
    return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
}

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols)
{
    size_t col = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (col < cols)
    {
        size_t i = blockIdx.y * cols + col;
        out[i] = geluErf(x[i] + bias[col]);
    }
}

int main()
{
    const int rows = 101, cols = 97;
    static float x[101 * 97], bias[97], out[101 * 97];
    for (int i = 0; i < rows * cols; i++) x[i] = (i % 800) / 100.0f - 4.0f;
    for (int j = 0; j < cols; j++) bias[j] = j / 97.0f - 0.5f;

    cudaError_t cudaStatus = launchBiasGelu(out, x, bias, rows, cols);
    if (cudaStatus != cudaSuccess) {
        fprintf(stderr, "launchBiasGelu failed!");
        return 1;
    }
    printf("out[0] = %f, out[last] = %f\n", out[0], out[rows * cols - 1]);

    cudaStatus = cudaDeviceReset();
    if (cudaStatus != cudaSuccess) {
        fprintf(stderr, "cudaDeviceReset failed!");
        return 1;
    }
    return 0;
}

// Helper function for using CUDA to run the kernel on rows x cols floats.
cudaError_t launchBiasGelu(float* out, const float* x, const float* bias, int rows, int cols)
{
    float* dev_x = 0;
    float* dev_bias = 0;
    float* dev_out = 0;
    size_t n = (size_t)rows * cols;
    cudaError_t cudaStatus;

    cudaStatus = cudaSetDevice(0);
    if (cudaStatus != cudaSuccess) {
        fprintf(stderr, "cudaSetDevice failed!  Do you have a CUDA-capable GPU installed?");
        goto Error;
    }
    cudaStatus = cudaMalloc((void**)&dev_out, n * sizeof(float));
    if (cudaStatus != cudaSuccess) { fprintf(stderr, "cudaMalloc failed!"); goto Error; }
    cudaStatus = cudaMalloc((void**)&dev_x, n * sizeof(float));
    if (cudaStatus != cudaSuccess) { fprintf(stderr, "cudaMalloc failed!"); goto Error; }
    cudaStatus = cudaMalloc((void**)&dev_bias, cols * sizeof(float));
    if (cudaStatus != cudaSuccess) { fprintf(stderr, "cudaMalloc failed!"); goto Error; }
    cudaMemcpy(dev_x, x, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(dev_bias, bias, cols * sizeof(float), cudaMemcpyHostToDevice);

    {
        dim3 grid((cols + 255) / 256, rows);
        biasGeluFused<<<grid, 256>>>(dev_x, dev_bias, dev_out, cols);
    }
    cudaStatus = cudaGetLastError();
    if (cudaStatus != cudaSuccess) {
        fprintf(stderr, "biasGeluFused launch failed: %s\n", cudaGetErrorString(cudaStatus));
        goto Error;
    }
    cudaStatus = cudaDeviceSynchronize();
    cudaMemcpy(out, dev_out, n * sizeof(float), cudaMemcpyDeviceToHost);

Error:
    cudaFree(dev_out);
    cudaFree(dev_x);
    cudaFree(dev_bias);
    return cudaStatus;
}
