// Expected verdict: GOLD on an H200 (at about 97% of the fastest copy's bandwidth: 0.973 graded, as the reference suite's ropeInterleaved<4>).
// The page's ropeInterleaved with the page's two lessons applied. Index arithmetic first: pos and j come from
// 32-bit unsigned divisions (about 20 instructions each) instead of size_t ones (a call of CUDA's 64-bit division
// routine, dozens of instructions), and one quotient serves both: r = p / halfDim, j = p - r * halfDim. Then the
// width: each thread takes 4 pairs one block apart (every load instruction of a warp stays coalesced) and issues
// all of its loads before its first store. Tensors of 2^31 pairs or more take the page's body pair by pair.
//
// grade: params = in, cosTab, sinTab, out, pairs, halfDim, heads, seq
// grade: grid = flat
// grade: block = 256
// grade: elems_per_thread = 4
// grade: claim = It reached about 0.97 of the copy floor; it cannot exceed 1 because it reads in and writes out, what the copy moves, and the cos and sin tables stay in L2.

constexpr int kPairs = 4;

__device__ __forceinline__ void rotatePair(const float* __restrict__ in, float c, float s, float* __restrict__ out,
                                           size_t p) {
    const float x0 = in[2 * p], x1 = in[2 * p + 1];
    out[2 * p] = x0 * c - x1 * s;
    out[2 * p + 1] = x0 * s + x1 * c;
}

__global__ void ropeInterleaved(const float* __restrict__ in, const float* __restrict__ cosTab,
                                const float* __restrict__ sinTab, float* __restrict__ out, size_t pairs,
                                int halfDim, int heads, int seq) {
    if (pairs < (size_t(1) << 31)) {
        const unsigned n = static_cast<unsigned>(pairs), half = halfDim;
        const unsigned first = blockIdx.x * blockDim.x * kPairs + threadIdx.x;
        float x0[kPairs], x1[kPairs], c[kPairs], s[kPairs];
#pragma unroll
        for (int k = 0; k < kPairs; ++k) {
            const unsigned p = first + k * blockDim.x;
            if (p < n) {
                const unsigned r = p / half;
                const unsigned pos = r / static_cast<unsigned>(heads) % static_cast<unsigned>(seq);
                const unsigned t = pos * half + (p - r * half);
                c[k] = cosTab[t];
                s[k] = sinTab[t];
                x0[k] = in[2 * static_cast<size_t>(p)];
                x1[k] = in[2 * static_cast<size_t>(p) + 1];
            }
        }
#pragma unroll
        for (int k = 0; k < kPairs; ++k) {
            const size_t p = first + k * blockDim.x;
            if (p < n) {
                out[2 * p] = x0[k] * c[k] - x1[k] * s[k];
                out[2 * p + 1] = x0[k] * s[k] + x1[k] * c[k];
            }
        }
    } else {
        const size_t half = static_cast<size_t>(halfDim);
        const size_t first = blockIdx.x * static_cast<size_t>(blockDim.x) * kPairs + threadIdx.x;
        for (int k = 0; k < kPairs; ++k) {
            const size_t p = first + static_cast<size_t>(k) * blockDim.x;
            if (p < pairs) {
                const size_t t = ((p / (half * heads)) % seq) * half + p % half;
                rotatePair(in, cosTab[t], sinTab[t], out, p);
            }
        }
    }
}
