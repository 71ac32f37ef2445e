// A thread per 8-element chunk, int indices, one float at a time: consecutive threads are 32 bytes apart for
// 4-byte loads and stores (scattered: a known multiple of the width).
__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, int n, int cols) {
    const int first = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
#pragma unroll 1
    for (int k = 0; k < 8; ++k) {
        const int i = first + k;
        if (i < n) {
            const float v = x[i] + bias[i % cols];
            out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
        }
    }
}
