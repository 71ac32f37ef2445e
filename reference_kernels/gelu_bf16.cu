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

// Two packed bf16 in, two packed bf16 out.
__device__ __forceinline__ unsigned int gelu2(unsigned int w) {
    const float lo = geluTanhLlmc(bf16ToFloat(w & 0xffffu));
    const float hi = geluTanhLlmc(bf16ToFloat(w >> 16));
    return floatToBf16(lo) | (floatToBf16(hi) << 16);
}

// out[i] = bf16(GELU_tanh(float(in[i]))) for i < n. Thread t owns elements 8t .. 8t + 7: a whole group is one
// 16-byte streaming load (__ldcs, read once, as llm.c's load128cs) and one 16-byte store; the last, partial
// group (n % 8 elements) is done one element at a time. in and out must be 16-byte aligned.
extern "C" __global__ void geluTanhBf16(const unsigned short* __restrict__ in, unsigned short* __restrict__ out,
                                        size_t n) {
    const size_t i = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) * 8;
    if (i + 8 <= n) {
        const uint4 v = __ldcs(reinterpret_cast<const uint4*>(in + i));
        *reinterpret_cast<uint4*>(out + i) = make_uint4(gelu2(v.x), gelu2(v.y), gelu2(v.z), gelu2(v.w));
    } else {
        for (size_t k = i; k < n; ++k) {
            out[k] = static_cast<unsigned short>(floatToBf16(geluTanhLlmc(bf16ToFloat(in[k]))));
        }
    }
}

// out[i] = bf16(in[i]) for i < n, rounding to nearest, ties to even: makes bf16 inputs on the GPU for the
// timed run, and lets the self-check compare floatToBf16 with the numpy version bit for bit.
extern "C" __global__ void toBf16(const float* __restrict__ in, unsigned short* __restrict__ out, size_t n) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = static_cast<unsigned short>(floatToBf16(in[i]));
}
