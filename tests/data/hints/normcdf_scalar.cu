// Hint test, expected first hint: "every global load ... is 4 bytes wide", then "extra work per element" naming
// the XU pipe. The page's row grid with one float per thread, the exact GELU as v * normcdff(v): on the H200
// 47.9% of the fastest copy's bandwidth (issue 23), below the page's erff kernel's 56.4% with the same loads. Both fixes were
// measured there: 16-byte loads keeping normcdff (normcdf.cu) reach 0.589, erff keeping 4-byte loads (scalar.cu)
// 0.564, so the width explains a little more of its time. tests/data/ncu/h200_normcdf_scalar.csv: its counters.

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (col < cols) {
        const size_t i = blockIdx.y * cols + col;
        const float v = x[i] + bias[col];
        out[i] = v*normcdff(v);
    }
}
