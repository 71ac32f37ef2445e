// Expected first hint: mistake (wrong output: the last columns of each row never written).
// gold_float4's float4 body without its scalar path: where cols is not a multiple of 4 the last cols % 4 columns of
// every row keep the NaN the output was filled with (and the rows after the first start unaligned: the kernel
// loads them with 4-byte accesses, so it does not fault).
// grade: params = x, bias, out, cols
// grade: grid = row
// grade: elems_per_thread = 4

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = 4 * (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x);
    const size_t rowBase = blockIdx.y * cols;
    if (col + 3 < cols) {
        for (int k = 0; k < 4; ++k) {
            const float v = x[rowBase + col + k] + bias[col + k];
            out[rowBase + col + k] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
        }
    }
}
