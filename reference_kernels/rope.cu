// Rotary position embedding (RoPE), float32, one rotation per pair of a head of width D = 2 * halfDim.
// Source: the course page (day 96, ropeInterleaved is its kernel) and the RoFormer paper, eq. 15: pair j at
// position pos is rotated by the angle pos * base^(-2j/D); the host computes the cos and sin tables
// (seq rows x halfDim columns) in float64 and rounds them to float32.
//
//   out0 = x0 * cos - x1 * sin
//   out1 = x0 * sin + x1 * cos
//
// Pair index p counts the pairs of the whole tensor in memory order (pairs = B * S * H * D / 2).
// Layouts: the page's [B, S, H, D] passes heads = H; [B, H, S, D] passes heads = 1. In both,
// pos = (p / (halfDim * heads)) % seq and the table column is j = p % halfDim.
//
// kPairs is the pairs per thread. kPairs = 1 is the page's kernel as printed. kPairs > 1 gives each thread
// kPairs pairs one block apart (so every load instruction of a warp stays coalesced) and issues all of the
// thread's loads before the first store, to keep more bytes in flight; the arithmetic per pair is unchanged.
// Every kernel calls rotate(), so the interleaved kernels are bit-identical to one another by construction.

__device__ __forceinline__ size_t tableIndex(size_t p, int halfDim, int heads, int seq) {
    const size_t half = static_cast<size_t>(halfDim);
    const size_t pos = (p / (half * static_cast<size_t>(heads))) % static_cast<size_t>(seq);
    return pos * half + p % half;
}

// The page writes out0 = x0 * c - x1 * s and out1 = x0 * s + x1 * c and leaves the choice of FMA to the
// compiler, which may fuse either product of out0 and need not choose alike in two kernels. Here the rounding
// is spelled out (mul.rn is never contracted), so every kernel that calls rotate() computes the same bits.
__device__ __forceinline__ void rotate(float x0, float x1, float c, float s, float& out0, float& out1) {
    out0 = __fmaf_rn(x0, c, -__fmul_rn(x1, s));
    out1 = __fmaf_rn(x0, s, __fmul_rn(x1, c));
}

// Adjacent pairs (2j, 2j + 1): two scalar loads two floats apart (the page's ropeInterleaved).
template <int kPairs>
__global__ void ropeInterleaved(const float* __restrict__ in, const float* __restrict__ cosTab,
                                const float* __restrict__ sinTab, float* __restrict__ out, size_t pairs,
                                int halfDim, int heads, int seq) {
    const size_t first = blockIdx.x * static_cast<size_t>(blockDim.x) * kPairs + threadIdx.x;
    float x0[kPairs], x1[kPairs], c[kPairs], s[kPairs];
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
        const size_t p = first + static_cast<size_t>(k) * blockDim.x;
        if (p < pairs) {
            const size_t t = tableIndex(p, halfDim, heads, seq);
            c[k] = cosTab[t];
            s[k] = sinTab[t];
            x0[k] = in[2 * p];
            x1[k] = in[2 * p + 1];
        }
    }
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
        const size_t p = first + static_cast<size_t>(k) * blockDim.x;
        if (p < pairs) rotate(x0[k], x1[k], c[k], s[k], out[2 * p], out[2 * p + 1]);
    }
}

// Adjacent pairs with one float2 load and one float2 store per pair: the same arithmetic in the same order
// as ropeInterleaved, so its output must be equal bit for bit.
template <int kPairs>
__global__ void ropeInterleavedVec2(const float* __restrict__ in, const float* __restrict__ cosTab,
                                    const float* __restrict__ sinTab, float* __restrict__ out, size_t pairs,
                                    int halfDim, int heads, int seq) {
    const float2* in2 = reinterpret_cast<const float2*>(in);
    float2* out2 = reinterpret_cast<float2*>(out);
    const size_t first = blockIdx.x * static_cast<size_t>(blockDim.x) * kPairs + threadIdx.x;
    float2 x[kPairs];
    float c[kPairs], s[kPairs];
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
        const size_t p = first + static_cast<size_t>(k) * blockDim.x;
        if (p < pairs) {
            const size_t t = tableIndex(p, halfDim, heads, seq);
            c[k] = cosTab[t];
            s[k] = sinTab[t];
            x[k] = in2[p];
        }
    }
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
        const size_t p = first + static_cast<size_t>(k) * blockDim.x;
        if (p < pairs) {
            float2 r;
            rotate(x[k].x, x[k].y, c[k], s[k], r.x, r.y);
            out2[p] = r;
        }
    }
}

// Half-split pairs (j, j + D/2), the Llama / Hugging Face convention: each load is a contiguous run.
// A different function from ropeInterleaved on the same input: the run fails if the outputs agree.
template <int kPairs>
__global__ void ropeHalfSplit(const float* __restrict__ in, const float* __restrict__ cosTab,
                              const float* __restrict__ sinTab, float* __restrict__ out, size_t pairs,
                              int halfDim, int heads, int seq) {
    const size_t half = static_cast<size_t>(halfDim);
    const size_t first = blockIdx.x * static_cast<size_t>(blockDim.x) * kPairs + threadIdx.x;
    float x0[kPairs], x1[kPairs], c[kPairs], s[kPairs];
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
        const size_t p = first + static_cast<size_t>(k) * blockDim.x;
        if (p < pairs) {
            const size_t at = (p / half) * 2 * half + p % half;  // head start + j
            const size_t t = tableIndex(p, halfDim, heads, seq);
            c[k] = cosTab[t];
            s[k] = sinTab[t];
            x0[k] = in[at];
            x1[k] = in[at + half];
        }
    }
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
        const size_t p = first + static_cast<size_t>(k) * blockDim.x;
        if (p < pairs) {
            const size_t at = (p / half) * 2 * half + p % half;
            rotate(x0[k], x1[k], c[k], s[k], out[at], out[at + half]);
        }
    }
}

// Q and K together, adjacent pairs, float2 loads: each table entry is read once and used for both tensors
// (the second document's fused kernel). q and k have the same shape and layout; the result for each equals
// ropeInterleavedVec2's bit for bit.
template <int kPairs>
__global__ void ropeFusedQK(const float* __restrict__ q, const float* __restrict__ k,
                            const float* __restrict__ cosTab, const float* __restrict__ sinTab,
                            float* __restrict__ qOut, float* __restrict__ kOut, size_t pairs, int halfDim,
                            int heads, int seq) {
    const float2* q2 = reinterpret_cast<const float2*>(q);
    const float2* k2 = reinterpret_cast<const float2*>(k);
    float2* qOut2 = reinterpret_cast<float2*>(qOut);
    float2* kOut2 = reinterpret_cast<float2*>(kOut);
    const size_t first = blockIdx.x * static_cast<size_t>(blockDim.x) * kPairs + threadIdx.x;
    float2 xq[kPairs], xk[kPairs];
    float c[kPairs], s[kPairs];
#pragma unroll
    for (int i = 0; i < kPairs; ++i) {
        const size_t p = first + static_cast<size_t>(i) * blockDim.x;
        if (p < pairs) {
            const size_t t = tableIndex(p, halfDim, heads, seq);
            c[i] = cosTab[t];
            s[i] = sinTab[t];
            xq[i] = q2[p];
            xk[i] = k2[p];
        }
    }
#pragma unroll
    for (int i = 0; i < kPairs; ++i) {
        const size_t p = first + static_cast<size_t>(i) * blockDim.x;
        if (p < pairs) {
            float2 rq, rk;
            rotate(xq[i].x, xq[i].y, c[i], s[i], rq.x, rq.y);
            rotate(xk[i].x, xk[i].y, c[i], s[i], rk.x, rk.y);
            qOut2[p] = rq;
            kOut2[p] = rk;
        }
    }
}
