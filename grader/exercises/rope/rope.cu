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
// kPairs is the pairs per thread. kPairs = 1 is the page's kernel as printed: one pair per thread, (pos, j)
// from 64-bit division. kPairs > 1 (the suite's WIDE = 4) is what the H200 needs to reach its copy floor:
// each thread takes kPairs pairs one block apart (every load instruction of a warp stays coalesced), issues
// all of its loads before the first store, and computes (pos, j) in 32-bit integers (tensors under 2^31
// pairs; larger ones take the page's body pair by pair). Measured on the H200 at 1 GiB per tensor, the 64-bit
// division (a software routine of dozens of instructions, three per pair) held ropeInterleaved<4> to 0.83 of
// the copy floor; with 32-bit division and the same scalar loads it reached 0.97 (float2: 0.98, float4:
// 0.96). ropeHalfSplit<4> also reads and writes 16 bytes at a time (see there).
// Every kernel calls rotate() once per pair, so the interleaved kernels are bit-identical to one another at
// every width, and ropeHalfSplit<4> to ropeHalfSplit<1>.

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

// --- one pair: the page's kernels' bodies ---------------------------------------------------------------
// Each <1> kernel is one call of these; the wide kernels loop over them (pairOneByOne) where their fast
// path does not apply.

__device__ __forceinline__ void interleavedPair(const float* __restrict__ in, const float* __restrict__ cosTab,
                                                const float* __restrict__ sinTab, float* __restrict__ out,
                                                size_t p, int halfDim, int heads, int seq) {
    const size_t t = tableIndex(p, halfDim, heads, seq);
    rotate(in[2 * p], in[2 * p + 1], cosTab[t], sinTab[t], out[2 * p], out[2 * p + 1]);
}

__device__ __forceinline__ void interleavedVec2Pair(const float2* __restrict__ in2,
                                                    const float* __restrict__ cosTab,
                                                    const float* __restrict__ sinTab, float2* __restrict__ out2,
                                                    size_t p, int halfDim, int heads, int seq) {
    const size_t t = tableIndex(p, halfDim, heads, seq);
    const float2 x = in2[p];
    float2 r;
    rotate(x.x, x.y, cosTab[t], sinTab[t], r.x, r.y);
    out2[p] = r;
}

__device__ __forceinline__ void halfSplitPair(const float* __restrict__ in, const float* __restrict__ cosTab,
                                              const float* __restrict__ sinTab, float* __restrict__ out,
                                              size_t p, int halfDim, int heads, int seq) {
    const size_t half = static_cast<size_t>(halfDim);
    const size_t at = (p / half) * 2 * half + p % half;  // head start + j
    const size_t t = tableIndex(p, halfDim, heads, seq);
    rotate(in[at], in[at + half], cosTab[t], sinTab[t], out[at], out[at + half]);
}

__device__ __forceinline__ void fusedQKPair(const float2* __restrict__ q2, const float2* __restrict__ k2,
                                            const float* __restrict__ cosTab, const float* __restrict__ sinTab,
                                            float2* __restrict__ qOut2, float2* __restrict__ kOut2, size_t p,
                                            int halfDim, int heads, int seq) {
    const size_t t = tableIndex(p, halfDim, heads, seq);
    const float c = cosTab[t], s = sinTab[t];
    const float2 xq = q2[p], xk = k2[p];
    float2 rq, rk;
    rotate(xq.x, xq.y, c, s, rq.x, rq.y);
    rotate(xk.x, xk.y, c, s, rk.x, rk.y);
    qOut2[p] = rq;
    kOut2[p] = rk;
}

// --- the wide kernels ------------------------------------------------------------------------------------
// Fast path: index type unsigned, for pairs < kNarrowPairs (no index of the launch, the last block's overhang
// included, wraps); memory offsets are formed in size_t. Tensors of 2^31 pairs (8 GiB) or more take
// pairOneByOne instead: the page's body for each of the thread's pairs in turn, 64-bit indices. It is slower,
// but it is a separate loop of few live values, so the fast path keeps its register count (a 64-bit copy of
// the fast path would raise it from 32 to 40-48 and cut the blocks per SM).
constexpr size_t kNarrowPairs = size_t(1) << 31;

// Head vector r = p / halfDim (head vectors in memory order) is at position (r / heads) % seq; returns the
// table index pos * halfDim + j of pair p, and the head vector in r.
__device__ __forceinline__ unsigned narrowTableIndex(unsigned p, unsigned half, int heads, int seq, unsigned& r) {
    r = p / half;
    return ((r / static_cast<unsigned>(heads)) % static_cast<unsigned>(seq)) * half + (p - r * half);
}

// The first pair (or quad) of this thread: kPerThread of them, one block apart.
template <int kPerThread>
__device__ __forceinline__ unsigned narrowFirst() {
    return blockIdx.x * blockDim.x * kPerThread + threadIdx.x;
}

// kPairs pairs one block apart, each by `body` (one of the *Pair functions, given the pointers `ptrs`) with
// 64-bit indices.
template <int kPairs, typename Body, typename... Ptrs>
__device__ __forceinline__ void pairOneByOne(size_t pairs, int halfDim, int heads, int seq, Body body,
                                             Ptrs... ptrs) {
    const size_t first = blockIdx.x * static_cast<size_t>(blockDim.x) * kPairs + threadIdx.x;
#pragma unroll 1
    for (int k = 0; k < kPairs; ++k) {
        const size_t p = first + static_cast<size_t>(k) * blockDim.x;
        if (p < pairs) body(ptrs..., p, halfDim, heads, seq);
    }
}

// Adjacent pairs (2j, 2j + 1), scalar loads: ropeInterleaved<kPairs > 1>.
template <int kPairs>
__device__ __forceinline__ void interleavedWide(const float* __restrict__ in, const float* __restrict__ cosTab,
                                                const float* __restrict__ sinTab, float* __restrict__ out,
                                                unsigned pairs, unsigned half, int heads, int seq) {
    const unsigned first = narrowFirst<kPairs>();
    float x0[kPairs], x1[kPairs], c[kPairs], s[kPairs];
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
        const unsigned p = first + k * blockDim.x;
        if (p < pairs) {
            unsigned r;
            const unsigned t = narrowTableIndex(p, half, heads, seq, r);
            c[k] = cosTab[t];
            s[k] = sinTab[t];
            x0[k] = in[2 * static_cast<size_t>(p)];
            x1[k] = in[2 * static_cast<size_t>(p) + 1];
        }
    }
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
        const unsigned p = first + k * blockDim.x;
        if (p < pairs) rotate(x0[k], x1[k], c[k], s[k], out[2 * static_cast<size_t>(p)],
                              out[2 * static_cast<size_t>(p) + 1]);
    }
}

// Adjacent pairs, one float2 per pair: ropeInterleavedVec2<kPairs > 1>.
template <int kPairs>
__device__ __forceinline__ void interleavedVec2Wide(const float2* __restrict__ in2,
                                                    const float* __restrict__ cosTab,
                                                    const float* __restrict__ sinTab, float2* __restrict__ out2,
                                                    unsigned pairs, unsigned half, int heads, int seq) {
    const unsigned first = narrowFirst<kPairs>();
    float2 x[kPairs];
    float c[kPairs], s[kPairs];
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
        const unsigned p = first + k * blockDim.x;
        if (p < pairs) {
            unsigned r;
            const unsigned t = narrowTableIndex(p, half, heads, seq, r);
            c[k] = cosTab[t];
            s[k] = sinTab[t];
            x[k] = in2[p];
        }
    }
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
        const unsigned p = first + k * blockDim.x;
        if (p < pairs) {
            float2 o;
            rotate(x[k].x, x[k].y, c[k], s[k], o.x, o.y);
            out2[p] = o;
        }
    }
}

// Half-split pairs with 16-byte accesses: a quad is 4 consecutive columns j..j+3 of one head (j a multiple
// of 4): one float4 from the low half, the same 4 columns of the high half, and 4 cos and 4 sin as float4s,
// then the same rotate() per pair as ropeHalfSplit<1> (so the two agree bit for bit). kQuads quads per
// thread, one block apart. Needs halfDim % 4 == 0 and 16-byte aligned pointers (ropeHalfSplit checks).
template <int kQuads>
__device__ __forceinline__ void halfSplitQuads(const float* __restrict__ in, const float* __restrict__ cosTab,
                                               const float* __restrict__ sinTab, float* __restrict__ out,
                                               unsigned pairs, unsigned half, int heads, int seq) {
    const unsigned quads = pairs / 4;
    const unsigned first = narrowFirst<kQuads>();
    float4 lo[kQuads], hi[kQuads], c[kQuads], s[kQuads];
    size_t at[kQuads];
#pragma unroll
    for (int k = 0; k < kQuads; ++k) {
        const unsigned u = first + k * blockDim.x;
        if (u < quads) {
            unsigned r;
            const unsigned t = narrowTableIndex(4 * u, half, heads, seq, r);  // t = pos * half + j
            at[k] = static_cast<size_t>(r) * 2 * half + (4 * u - r * half);   // head start + j
            c[k] = *reinterpret_cast<const float4*>(cosTab + t);
            s[k] = *reinterpret_cast<const float4*>(sinTab + t);
            lo[k] = *reinterpret_cast<const float4*>(in + at[k]);
            hi[k] = *reinterpret_cast<const float4*>(in + at[k] + half);
        }
    }
#pragma unroll
    for (int k = 0; k < kQuads; ++k) {
        const unsigned u = first + k * blockDim.x;
        if (u < quads) {
            float4 a, b;
            rotate(lo[k].x, hi[k].x, c[k].x, s[k].x, a.x, b.x);
            rotate(lo[k].y, hi[k].y, c[k].y, s[k].y, a.y, b.y);
            rotate(lo[k].z, hi[k].z, c[k].z, s[k].z, a.z, b.z);
            rotate(lo[k].w, hi[k].w, c[k].w, s[k].w, a.w, b.w);
            *reinterpret_cast<float4*>(out + at[k]) = a;
            *reinterpret_cast<float4*>(out + at[k] + half) = b;
        }
    }
}

// Q and K together, one float2 per pair of each: ropeFusedQK<kPairs > 1>.
template <int kPairs>
__device__ __forceinline__ void fusedQKWide(const float2* __restrict__ q2, const float2* __restrict__ k2,
                                            const float* __restrict__ cosTab, const float* __restrict__ sinTab,
                                            float2* __restrict__ qOut2, float2* __restrict__ kOut2,
                                            unsigned pairs, unsigned half, int heads, int seq) {
    const unsigned first = narrowFirst<kPairs>();
    float2 xq[kPairs], xk[kPairs];
    float c[kPairs], s[kPairs];
#pragma unroll
    for (int i = 0; i < kPairs; ++i) {
        const unsigned p = first + i * blockDim.x;
        if (p < pairs) {
            unsigned r;
            const unsigned t = narrowTableIndex(p, half, heads, seq, r);
            c[i] = cosTab[t];
            s[i] = sinTab[t];
            xq[i] = q2[p];
            xk[i] = k2[p];
        }
    }
#pragma unroll
    for (int i = 0; i < kPairs; ++i) {
        const unsigned p = first + i * blockDim.x;
        if (p < pairs) {
            float2 rq, rk;
            rotate(xq[i].x, xq[i].y, c[i], s[i], rq.x, rq.y);
            rotate(xk[i].x, xk[i].y, c[i], s[i], rk.x, rk.y);
            qOut2[p] = rq;
            kOut2[p] = rk;
        }
    }
}

// --- the kernels -------------------------------------------------------------------------------------------
// Adjacent pairs (2j, 2j + 1): two scalar loads two floats apart (the page's ropeInterleaved).
template <int kPairs>
__global__ void ropeInterleaved(const float* __restrict__ in, const float* __restrict__ cosTab,
                                const float* __restrict__ sinTab, float* __restrict__ out, size_t pairs,
                                int halfDim, int heads, int seq) {
    if constexpr (kPairs == 1) {
        const size_t p = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
        if (p < pairs) interleavedPair(in, cosTab, sinTab, out, p, halfDim, heads, seq);
    } else if (pairs < kNarrowPairs) {
        interleavedWide<kPairs>(in, cosTab, sinTab, out, static_cast<unsigned>(pairs), halfDim, heads, seq);
    } else {
        pairOneByOne<kPairs>(pairs, halfDim, heads, seq, interleavedPair, in, cosTab, sinTab, out);
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
    if constexpr (kPairs == 1) {
        const size_t p = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
        if (p < pairs) interleavedVec2Pair(in2, cosTab, sinTab, out2, p, halfDim, heads, seq);
    } else if (pairs < kNarrowPairs) {
        interleavedVec2Wide<kPairs>(in2, cosTab, sinTab, out2, static_cast<unsigned>(pairs), halfDim, heads, seq);
    } else {
        pairOneByOne<kPairs>(pairs, halfDim, heads, seq, interleavedVec2Pair, in2, cosTab, sinTab, out2);
    }
}

// Half-split pairs (j, j + D/2), the Llama / Hugging Face convention: each load is a contiguous run.
// A different function from ropeInterleaved on the same input: the run fails if the outputs agree.
// The wide kernel reads and writes 16 bytes at a time (halfSplitQuads) when halfDim % 4 == 0 and the four
// pointers are 16-byte aligned, else (and above 2^31 pairs) it takes the page's body pair by pair.
template <int kPairs>
__global__ void ropeHalfSplit(const float* __restrict__ in, const float* __restrict__ cosTab,
                              const float* __restrict__ sinTab, float* __restrict__ out, size_t pairs,
                              int halfDim, int heads, int seq) {
    if constexpr (kPairs == 1) {
        const size_t p = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
        if (p < pairs) halfSplitPair(in, cosTab, sinTab, out, p, halfDim, heads, seq);
    } else {
        static_assert(kPairs % 4 == 0, "the wide half-split kernel takes whole quads (4 pairs) per thread");
        const size_t addresses = reinterpret_cast<size_t>(in) | reinterpret_cast<size_t>(out) |
                                 reinterpret_cast<size_t>(cosTab) | reinterpret_cast<size_t>(sinTab);
        if (pairs < kNarrowPairs && halfDim % 4 == 0 && addresses % 16 == 0)
            halfSplitQuads<kPairs / 4>(in, cosTab, sinTab, out, static_cast<unsigned>(pairs), halfDim, heads, seq);
        else
            pairOneByOne<kPairs>(pairs, halfDim, heads, seq, halfSplitPair, in, cosTab, sinTab, out);
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
    if constexpr (kPairs == 1) {
        const size_t p = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
        if (p < pairs) fusedQKPair(q2, k2, cosTab, sinTab, qOut2, kOut2, p, halfDim, heads, seq);
    } else if (pairs < kNarrowPairs) {
        fusedQKWide<kPairs>(q2, k2, cosTab, sinTab, qOut2, kOut2, static_cast<unsigned>(pairs), halfDim, heads,
                            seq);
    } else {
        pairOneByOne<kPairs>(pairs, halfDim, heads, seq, fusedQKPair, q2, k2, cosTab, sinTab, qOut2, kOut2);
    }
}
