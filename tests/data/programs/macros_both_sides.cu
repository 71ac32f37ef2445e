// Whole program: a #define block size, a GELU macro and an index macro used by both the kernel and the host, a CUDA_CHECK macro, an #ifndef guard and a stride kernel (grid = stride). Expected: graded (correct); kept BLOCK, INV_SQRT2, GELU_ERF, IDX; ignored main, CUDA_CHECK, ceilDiv, hostGelu.
// grade: params = x, bias, out, rows, cols
// grade: grid = stride
// grade: block = 256
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <cuda_runtime.h>

#ifndef BLOCK
#define BLOCK 256
#endif

#define INV_SQRT2 0.70710678118654752f
#define GELU_ERF(v) (0.5f * (v) * (1.0f + erff((v) * INV_SQRT2)))
#define IDX(r, c, cols) ((size_t)(r) * (cols) + (c))
#define CUDA_CHECK(call)                                                          \
    do {                                                                          \
        cudaError_t e = (call);                                                   \
        if (e != cudaSuccess) {                                                   \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

static inline unsigned ceilDiv(size_t a, unsigned b) { return (unsigned)((a + b - 1) / b); }

// A grid-stride loop over rows x cols; the bias index is the column of the element.
__global__ void __launch_bounds__(BLOCK) biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                                                     float* __restrict__ out, int rows, int cols) {
    const size_t n = (size_t)rows * cols;
    for (size_t i = blockIdx.x * (size_t)BLOCK + threadIdx.x; i < n; i += (size_t)gridDim.x * BLOCK) {
        const int r = (int)(i / cols), c = (int)(i % cols);
        const float v = x[IDX(r, c, cols)] + bias[c];
        out[IDX(r, c, cols)] = GELU_ERF(v);
    }
}

static float hostGelu(float v) { return GELU_ERF(v); }

int main(void) {
    const int rows = 101, cols = 97;
    const size_t n = (size_t)rows * cols;
    float *hx = (float*)malloc(n * sizeof(float)), *hb = (float*)malloc(cols * sizeof(float));
    float *hout = (float*)malloc(n * sizeof(float));
    for (size_t i = 0; i < n; ++i) hx[i] = (float)((i * 7919) % 8000) / 1000.0f - 4.0f;
    for (int c = 0; c < cols; ++c) hb[c] = (float)c / cols - 0.5f;
    float *dx, *db, *dout;
    CUDA_CHECK(cudaMalloc(&dx, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&db, cols * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dout, n * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(dx, hx, n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(db, hb, cols * sizeof(float), cudaMemcpyHostToDevice));
    biasGeluFused<<<ceilDiv(n, BLOCK), BLOCK>>>(dx, db, dout, rows, cols);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(hout, dout, n * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
            if (fabsf(hout[IDX(r, c, cols)] - hostGelu(hx[IDX(r, c, cols)] + hb[c])) > 1e-5f) ++bad;
    printf("%d bad of %zu\n", bad, n);
    CUDA_CHECK(cudaFree(dx));
    CUDA_CHECK(cudaFree(db));
    CUDA_CHECK(cudaFree(dout));
    free(hx);
    free(hb);
    free(hout);
    return bad != 0;
}
