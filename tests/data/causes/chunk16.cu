// Expected first hint: scattered; with counters: scattered (a thread per 16-element chunk: each warp's stores touch 32 sectors).
// A flat grid where each thread writes 16 consecutive floats one at a time (issue 29: right with counters): the 32
// threads of a warp store 64 bytes apart, so every store instruction touches 32 sectors for 128 useful bytes.
// grade: params = x, bias, out, n, cols
// grade: grid = flat
// grade: elems_per_thread = 16

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t n, size_t cols) {
    const size_t first = 16 * (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x);
    for (size_t i = first; i < first + 16 && i < n; ++i) {
        const float v = x[i] + bias[i % cols];
        out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
}
