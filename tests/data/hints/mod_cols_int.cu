// Hint test: the same pitfall with int operands in a grid-stride loop. NVRTC 13.5 emits rem.s32.
// Expected hint: "look at your bias index first".

__global__ void biasGeluFused(const float* x, const float* bias, float* out, int n, int cols) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float v = x[i] + bias[i % cols];
        out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
}
