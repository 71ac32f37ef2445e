// The grader's inputs on the GPU, and the check of an output against them: gigabytes of fresh inputs without a
// host round trip, and a check that never trusts the input buffers a kernel was given.
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

// Checks outputs of biasGeluFused on the GPU, so no gigabytes cross to the host. The inputs are regenerated from
// their seeds, never read from the buffers the kernel was given (a kernel that writes its inputs cannot make the
// expected side agree): for every element, ref = GELU_erf(x + bias[col]) in float64 (the formula of
// grader.check.reference.bias_gelu), and an output element is bad unless |out - ref| <= atol + rtol * |ref|, or both
// are NaN (a NaN input's answer is NaN). `out2`, when not null, is a second output of the same inputs, checked in the
// same pass (the chain's two launches of the submission). The buffers x and bias are compared with the regenerated
// inputs bit for bit, only to name an input the kernel changed. counts[0..7]: bad elements of out, the smallest bad
// index, changed x elements, the smallest changed x index, changed bias elements, the smallest changed col, bad
// elements of out2, its smallest bad index (the minima start at ~0). The column is kept by a running remainder, not
// a 64-bit division per element.
extern "C" __global__ void checkBiasGelu(const float* __restrict__ x, const float* __restrict__ bias,
                                         const float* __restrict__ out, const float* __restrict__ out2,
                                         size_t rows, size_t cols, unsigned long long xSeed,
                                         unsigned long long xShares, int xShape, unsigned long long biasSeed,
                                         unsigned long long biasShares, int biasShape, double atol, double rtol,
                                         unsigned long long* __restrict__ counts) {
    const size_t n = rows * cols;
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    const DrawMix xMix = unpackMix(xShares, xShape), biasMix = unpackMix(biasShares, biasShape);
    size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    size_t c = i % cols;
    const size_t step = stride % cols;
    unsigned long long bad = 0, bad2 = 0, xChanged = 0, biasChanged = 0;
    for (; i < n; i += stride) {
        const float xv = drawValue(xSeed, i, xMix), bv = drawValue(biasSeed, c, biasMix);
        if (__float_as_uint(x[i]) != __float_as_uint(xv)) {
            ++xChanged;
            atomicMin(&counts[3], static_cast<unsigned long long>(i));
        }
        if (i < cols && __float_as_uint(bias[i]) != __float_as_uint(bv)) {
            ++biasChanged;
            atomicMin(&counts[5], static_cast<unsigned long long>(i));
        }
        const double v = static_cast<double>(xv) + static_cast<double>(bv);
        const double ref = 0.5 * v * (1.0 + erf(v * 0.70710678118654752440));
        const double tol = atol + rtol * fabs(ref);
        const double got = static_cast<double>(out[i]);
        if (!(isnan(ref) ? isnan(got) : fabs(got - ref) <= tol)) {
            ++bad;
            atomicMin(&counts[1], static_cast<unsigned long long>(i));
        }
        if (out2) {
            const double got2 = static_cast<double>(out2[i]);
            if (!(isnan(ref) ? isnan(got2) : fabs(got2 - ref) <= tol)) {
                ++bad2;
                atomicMin(&counts[7], static_cast<unsigned long long>(i));
            }
        }
        c += step;
        if (c >= cols) c -= cols;
    }
    if (bad) atomicAdd(&counts[0], bad);
    if (xChanged) atomicAdd(&counts[2], xChanged);
    if (biasChanged) atomicAdd(&counts[4], biasChanged);
    if (bad2) atomicAdd(&counts[6], bad2);
}
