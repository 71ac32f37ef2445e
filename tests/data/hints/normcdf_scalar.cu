// Hint test, expected first hint: the work (more warp instructions per element than the page's erff kernel).
// The page's row grid with one float per thread, the exact GELU written as v * normcdff(v); on the H200 it ran
// at 0.474 of the copy floor (issue 23), below the page's scalar kernel's 0.557 with the same 4-byte loads.
// (normcdf.cu is the same function with 16-byte loads, which checks that normcdff is not taken for a tanh.)

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        const float v = x[i] + bias[col];
        out[i] = v * normcdff(v);
    }
}
