// out is written twice in one launch: a first grid-stride loop stores x + bias, a second one reads it back and
// stores the GELU (a staged kernel folded into one).
__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* out, int n, int cols) {
    const int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = x[i] + bias[i % cols];
    }
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = out[i];
        out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
}
