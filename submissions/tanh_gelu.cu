// Expected verdict: FAIL verification (wrong function).
// The tanh GELU is a different function from the exact (erf) GELU the exercise asks for: they differ by up
// to 4.73e-4 at |x + bias| = 2.699. The grader must print the first bad (row, col) with both values.

#define kGeluA 0.7978845608028654f  // sqrt(2/pi)
#define kGeluB 0.044715f

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        const float v = x[i] + bias[col];
        out[i] = 0.5f * v * (1.0f + tanhf(kGeluA * (v + kGeluB * v * v * v)));
    }
}
