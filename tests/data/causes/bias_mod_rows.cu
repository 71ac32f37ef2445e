// Expected first hint: mistake (wrong output: the bias indexed with i % rows).
// A flat grid over all elements that indexes the bias with the row count: bias[i % rows] instead of bias[i % cols]
// (issue 29: its only hint was the cost of its integer division).
// grade: params = x, bias, out, rows, cols
// grade: grid = flat

__global__ void biasGeluFused(const float* x, const float* bias, float* out, int rows, int cols) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) {
        const float v = x[i] + bias[i % rows];
        out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
}
