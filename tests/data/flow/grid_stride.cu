// A grid-stride loop over all elements, with int indices: every access is in the loop, 4 bytes apart from one
// thread to the next; the loop's increment (blockDim.x * gridDim.x) is the same for every thread.
__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, int n, int cols) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        const int c = i % cols;
        const float v = x[i] + bias[c];
        out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
}
