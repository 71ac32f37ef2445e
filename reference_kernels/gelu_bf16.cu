// llm.c's GELU forward, version 2 (gelu_forward_kernel2): the tanh GELU on bf16 input and output, float
// math inside, one 16-byte load and one 16-byte store per thread (8 bf16 values, llm.c's Packed128 / x128).
// Bytes: 2 bf16 values of 2 bytes per element (one read, one write).
//
// bf16 is handled as its bits in an unsigned short, by hand: the pip NVRTC on the GPU machine (13.0) ships
// no cuda_bf16.h. A bf16 is the high half of a float32; widening shifts it up 16 bits, and narrowing rounds
// to nearest, ties to even, as __float2bfloat16 does (NaN stays a quiet NaN).
// Element i of the buffer is the low half of 32-bit word i / 2 when i is even (little-endian).

#define kGeluScale 0.7978845608028654f  // llm.c's GELU_SCALING_FACTOR, sqrtf(2.0f / M_PI)

__device__ __forceinline__ float bf16ToFloat(unsigned int bits16) { return __uint_as_float(bits16 << 16); }

__device__ __forceinline__ unsigned int floatToBf16(float f) {
    const unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x0040u;  // NaN: keep the sign, make it quiet
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;                     // round to nearest, ties to even
}

// llm.c's expression, term for term.
__device__ __forceinline__ float geluTanhLlmc(float xi) {
    const float cube = 0.044715f * xi * xi * xi;
    return 0.5f * xi * (1.0f + tanhf(kGeluScale * (xi + cube)));
}

// The same function, GELU_tanh(x) = 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3), written as
// x * sigmoid(2u) = x / (1 + exp(-2u)) (since 1 + tanh(u) = 2 / (1 + exp(-2u))), with the hardware's
// approximate exp (__expf: ex2.approx, one MUFU.EX2) and reciprocal (__fdividef: MUFU.RCP), and the
// results rounded to bf16 two at a time by the hardware (cvt.rn.bf16x2.f32, sm_80 and later).
// Why: tanhf, exact to float32, is a polynomial of some twenty instructions with branches, and the software
// rounding another dozen per pair; with eight values per thread geluTanhBf16 is issue-bound on an H200, not
// memory-bound. Measured there (benchmarks/bf16_variants.py, 503,316,480 values; ncu's instruction count):
// tanhf form 0.653 of the copy floor (534.8 M warp instructions), sigmoid form with software rounding 0.852
// (389.3 M), sigmoid form with hardware rounding 0.959 (279.2 M); sixteen values per thread instead of eight
// is slower (0.875).
// Accuracy: nothing cancels (the denominator is >= 1 and x is factored out), so the relative error is a few
// float32 ulps plus the two approximations' (about 2^-21 each), thousands of times below bf16's rounding
// step 2^-8, and the rounding is the same round-to-nearest-even as floatToBf16 for every finite value. The
// self-check's gate measures it against float64 like the tanhf form's (on the H200: within 0.98 of the
// tolerance, and no element rounded differently from the float64 result, against 0.2 to 0.3% for the tanhf
// form). In the far tails exp overflows to inf and x / inf gives -0 (the limit); exp underflows to 0 and it
// gives x.
__device__ __forceinline__ float geluTanhSigmoid(float xi) {
    const float u = kGeluScale * (xi + 0.044715f * xi * xi * xi);
    return __fdividef(xi, 1.0f + __expf(-2.0f * u));
}

// Two floats rounded to bf16 (nearest, ties to even) and packed, low half first: one cvt.rn.bf16x2.f32 where
// the hardware has it (sm_80 and later), floatToBf16 twice elsewhere.
__device__ __forceinline__ unsigned int packBf16x2(float lo, float hi) {
#if __CUDA_ARCH__ >= 800
    unsigned int r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
#else
    return floatToBf16(lo) | (floatToBf16(hi) << 16);
#endif
}

struct Llmc {
    __device__ float operator()(float x) const { return geluTanhLlmc(x); }
    __device__ unsigned int pack(float lo, float hi) const { return floatToBf16(lo) | (floatToBf16(hi) << 16); }
};
struct Sigmoid {
    __device__ float operator()(float x) const { return geluTanhSigmoid(x); }
    __device__ unsigned int pack(float lo, float hi) const { return packBf16x2(lo, hi); }
};

// Two packed bf16 in, two packed bf16 out.
template <class F>
__device__ __forceinline__ unsigned int gelu2(unsigned int w) {
    const float lo = F()(bf16ToFloat(w & 0xffffu));
    const float hi = F()(bf16ToFloat(w >> 16));
    return F().pack(lo, hi);
}

// out[i] = bf16(F(float(in[i]))) for i < n. Thread t owns elements 8t .. 8t + 7: a whole group is one 16-byte
// streaming load (__ldcs, read once, as llm.c's load128cs) and one 16-byte store; the last, partial group
// (n % 8 elements) is done one element at a time. in and out must be 16-byte aligned.
template <class F>
__device__ __forceinline__ void geluBf16(const unsigned short* __restrict__ in, unsigned short* __restrict__ out,
                                         size_t n) {
    const size_t i = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) * 8;
    if (i + 8 <= n) {
        const uint4 v = __ldcs(reinterpret_cast<const uint4*>(in + i));
        *reinterpret_cast<uint4*>(out + i) =
            make_uint4(gelu2<F>(v.x), gelu2<F>(v.y), gelu2<F>(v.z), gelu2<F>(v.w));
    } else {
        for (size_t k = i; k < n; ++k) {
            out[k] = static_cast<unsigned short>(floatToBf16(F()(bf16ToFloat(in[k]))));
        }
    }
}

// llm.c's form (tanhf).
extern "C" __global__ void geluTanhBf16(const unsigned short* __restrict__ in, unsigned short* __restrict__ out,
                                        size_t n) {
    geluBf16<Llmc>(in, out, n);
}

// The sigmoid form (see geluTanhSigmoid).
extern "C" __global__ void geluTanhBf16Sigmoid(const unsigned short* __restrict__ in,
                                               unsigned short* __restrict__ out, size_t n) {
    geluBf16<Sigmoid>(in, out, n);
}

// out[i] = bf16(in[i]) for i < n, rounding to nearest, ties to even: makes bf16 inputs on the GPU for the
// timed run, and lets the self-check compare floatToBf16 with the numpy version bit for bit.
extern "C" __global__ void toBf16(const float* __restrict__ in, unsigned short* __restrict__ out, size_t n) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = static_cast<unsigned short>(floatToBf16(in[i]));
}
