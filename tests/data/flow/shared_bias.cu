// The bias row staged in shared memory once per block (a strided loop over cols), then one element per thread
// from the shared copy: bias is loaded 4 bytes apart in the staging loop; x and out 4 bytes apart.
__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, int cols) {
    __shared__ float sb[1024];
    const int base = blockIdx.x * blockDim.x;
    for (int c = threadIdx.x; c < blockDim.x && base + c < cols; c += blockDim.x) {
        sb[c] = bias[base + c];
    }
    __syncthreads();
    const int col = base + threadIdx.x;
    if (col < cols) {
        const size_t i = (size_t)blockIdx.y * cols + col;
        const float v = x[i] + sb[threadIdx.x];
        out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
}
