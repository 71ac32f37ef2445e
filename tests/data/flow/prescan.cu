// Two passes over x in one launch: a grid-stride pre-scan for values that are not finite, then the GELU pass
// (grid-stride again); both loops load x 4 bytes at a time.
__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, int n, int cols) {
    const int stride = blockDim.x * gridDim.x;
    bool bad = false;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        bad |= !isfinite(x[i]);
    }
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = x[i] + bias[i % cols];
        out[i] = bad ? __int_as_float(0x7fc00000) : 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
}
