// A grid whose threads walk down a column: thread t of blockIdx.y's column takes row t, so consecutive threads
// are cols floats apart (4 x cols bytes: a parameter-valued stride, scattered).
__global__ void biasGeluFused(const float* x, const float* bias, float* out, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    const int col = blockIdx.y;
    if (row < rows) {
        const float v = x[(size_t)row * cols + col] + bias[col];
        out[(size_t)row * cols + col] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
}
