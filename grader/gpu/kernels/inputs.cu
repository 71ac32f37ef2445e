// Input generation on the GPU for the benchmark shape: gigabytes of fresh inputs without a host round trip.
// A counter-based generator: element i of a draw with seed s is splitmix64(s + i), so any element can be
// recomputed from (seed, i) alone and a replay with the same seed gives the same inputs.

__device__ __forceinline__ unsigned long long splitmix64(unsigned long long z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// out[i] = lo + (hi - lo) * u, u uniform in [0, 1) with 24 random bits, for i < n.
extern "C" __global__ void fillUniform(float* __restrict__ out, size_t n, unsigned long long seed,
                                       float lo, float hi) {
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<size_t>(gridDim.x) * blockDim.x) {
        const float u = static_cast<float>(splitmix64(seed + i) >> 40) * (1.0f / 16777216.0f);
        out[i] = lo + (hi - lo) * u;
    }
}
