// The grader's input generator on the GPU (grader/gpu/kernels/draws.cuh is the draw itself; grader.check.draws
// its numpy twin, bit for bit).

#include "draws.cuh"

// out[i] = lo + (hi - lo) * u, u uniform in [0, 1) with 24 random bits, for i < n (the reference kernels'
// tables, the counters' child).
extern "C" __global__ void fillUniform(float* __restrict__ out, size_t n, unsigned long long seed,
                                       float lo, float hi) {
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<size_t>(gridDim.x) * blockDim.x) {
        const float u = static_cast<float>(splitmix64(seed + i) >> 40) * (1.0f / 16777216.0f);
        out[i] = lo + (hi - lo) * u;
    }
}

// out[i] = drawValue(seed, i, mix) for i < n: the inputs of the submission's timed launches and of the chain.
extern "C" __global__ void fillDraw(float* __restrict__ out, size_t n, unsigned long long seed,
                                    unsigned long long shares, int shape) {
    const DrawMix mix = unpackMix(shares, shape);
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<size_t>(gridDim.x) * blockDim.x) {
        out[i] = drawValue(seed, i, mix);
    }
}
