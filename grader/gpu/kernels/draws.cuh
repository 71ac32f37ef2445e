// The draw of the grader's inputs on the GPU, shared by inputs.cu (the fills) and every exercise's check kernel
// (`#include "draws.cuh"`, replaced by this text: grader.gpu.kernels.source_text): gigabytes of fresh inputs
// without a host round trip, and checks that regenerate the inputs instead of trusting the buffers a kernel had.
//
// A counter-based generator: element i of a draw with seed s is a function of splitmix64(s + i) alone, so any
// element can be recomputed from (seed, i), a replay with the same seed gives the same inputs, and
// grader/check/draws.py computes the very same floats in numpy (bit for bit: every step below is integer
// arithmetic or a float operation whose result is exact).

__device__ __forceinline__ unsigned long long splitmix64(unsigned long long z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// How a draw mixes its kinds of value, unpacked from two kernel parameters (grader/check/draws.py packs them):
// `shares` holds four cumulative shares out of 65536 (16 bits each, low to high: nan, zero, subnormal, wide);
// `shape` holds wideExp0 (bits 0-7), wideExps (bits 8-15) and the uniform part's step as a signed power of two
// (bits 16-23).
struct DrawMix {
    unsigned nan, zero, subnormal, wide;
    unsigned wideExp0, wideExps;
    float step;
};

__device__ __forceinline__ DrawMix unpackMix(unsigned long long shares, int shape) {
    DrawMix m;
    m.nan = static_cast<unsigned>(shares & 0xFFFFu);
    m.zero = static_cast<unsigned>(shares >> 16 & 0xFFFFu);
    m.subnormal = static_cast<unsigned>(shares >> 32 & 0xFFFFu);
    m.wide = static_cast<unsigned>(shares >> 48 & 0xFFFFu);
    m.wideExp0 = static_cast<unsigned>(shape) & 0xFFu;
    m.wideExps = static_cast<unsigned>(shape) >> 8 & 0xFFu;
    m.step = __int_as_float((127 + static_cast<signed char>(shape >> 16 & 0xFF)) << 23);
    return m;
}

// One value of a draw: the 16 low bits of h pick its kind by the cumulative shares, the rest give its sign and
// digits.
//   share < nan:        a quiet NaN (the answer is NaN)
//   share < zero:       +0 or -0
//   share < subnormal:  a nonzero subnormal float of either sign
//   share < wide:       (1 + m) * 2^e of either sign, e uniform in [wideExp0, wideExp0 + wideExps): heavy tails
//                       (the magnitudes LLM activations reach) and the range where erf saturates
//   otherwise:          (k - 2^23) * step, k uniform in [0, 2^24): uniform in [-2^23 step, 2^23 step)
// Every result is exact in float32, so the numpy twin agrees to the bit.
__device__ __forceinline__ float drawValue(unsigned long long seed, unsigned long long i, const DrawMix& m) {
    const unsigned long long h = splitmix64(seed + i);
    const unsigned share = static_cast<unsigned>(h & 0xFFFFu);
    const unsigned sign = static_cast<unsigned>(h >> 16 & 1u) << 31;
    const unsigned mant = static_cast<unsigned>(h >> 17) & 0x7FFFFFu;
    if (share < m.nan) return __uint_as_float(0x7FC00000u);
    if (share < m.zero) return __uint_as_float(sign);
    if (share < m.subnormal) return __uint_as_float(sign | mant | 1u);
    if (share < m.wide) {
        const unsigned e = m.wideExp0 + static_cast<unsigned>((h >> 40) % m.wideExps);
        return __uint_as_float(sign | (e + 127u) << 23 | mant);
    }
    return static_cast<float>(static_cast<long long>(h >> 40) - (1ll << 23)) * m.step;
}
