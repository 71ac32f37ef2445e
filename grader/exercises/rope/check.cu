// The RoPE exercise's on-GPU check of a timed launch (grader/exercises/rope/device.py launches it): the outputs of
// ropeInterleaved at the benchmark size are checked where they are, without copying gigabytes to the host.
//
// `in` is regenerated from its seed (the generator of grader/gpu/kernels/inputs.cu, whose numpy twin is
// grader/check/draws.py), never read from the buffer the kernel was given; cos and sin come from a private copy of
// the tables that the kernel was never given (the host compares that copy with its own tables after every check).
// For every pair p: j = p % halfDim, pos = (p / (halfDim * heads)) % seq, and in float64
//     ref0 = x0 c - x1 s,  ref1 = x0 s + x1 c,  tol = rtol (|x0| + |x1|) + atol
// (grader.exercises.rope: rtol = 8 x 2^-24, atol = 2^-147; the tables' float32 values are the reference's cos and
// sin here, which moves it by at most 2^-24 (|x0| + |x1|) from the host's float64 cos and sin: 1/8 of the
// tolerance). An output is bad unless |out - ref| <= tol, or both are NaN (a NaN in the pair). The buffers the
// kernel was given (in, cosTab, sinTab) are compared with the draw and the private tables bit for bit, only to name
// an input the kernel changed.
//
// The draw of `in` is the grader's own (grader/gpu/kernels/draws.cuh, the same bits as grader.check.draws).

#include "draws.cuh"

// counts[0..7]: bad output elements, the smallest bad float index, changed elements of in, the smallest changed
// index, changed cosTab entries, the smallest, changed sinTab entries, the smallest (the minima start at ~0).
enum { kBad, kFirstBad, kIn, kFirstIn, kCos, kFirstCos, kSin, kFirstSin, kCounts };

// The table index pos * halfDim + j of pair p: 32-bit divisions while every index fits (the check runs over
// about 10^8 pairs after every timed launch; a 64-bit division is a routine of dozens of instructions).
__device__ __forceinline__ size_t tableIndex(size_t p, size_t half, size_t heads, size_t seq, bool narrow) {
    if (narrow) {
        const unsigned r = static_cast<unsigned>(p) / static_cast<unsigned>(half);
        const unsigned pos = r / static_cast<unsigned>(heads) % static_cast<unsigned>(seq);
        return static_cast<size_t>(pos) * half + (static_cast<unsigned>(p) - r * static_cast<unsigned>(half));
    }
    const size_t r = p / half;
    return (r / heads % seq) * half + (p - r * half);
}

__device__ __forceinline__ bool outputBad(float got, double ref, double tol) {
    const double g = static_cast<double>(got);
    return !(isnan(ref) ? isnan(g) : fabs(g - ref) <= tol);
}

// One more changed or bad element at `index`: the thread's count and its smallest index (one atomic per thread at
// the end, not one per element: a wrong kernel's output is wrong everywhere).
__device__ __forceinline__ void note(unsigned long long index, unsigned long long& count, unsigned long long& least) {
    ++count;
    least = index < least ? index : least;
}

__device__ __forceinline__ void report(unsigned long long* counts, int which, unsigned long long count,
                                       unsigned long long least) {
    if (count) {
        atomicAdd(&counts[which], count);
        atomicMin(&counts[which + 1], least);
    }
}

extern "C" __global__ void checkRope(const float* __restrict__ in, const float* __restrict__ cosTab,
                                     const float* __restrict__ sinTab, const float* __restrict__ out,
                                     const float* __restrict__ privCos, const float* __restrict__ privSin,
                                     size_t pairs, int halfDim, int heads, int seq, unsigned long long seed,
                                     unsigned long long shares, int shape, double rtol, double atol,
                                     unsigned long long* __restrict__ counts) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    const size_t first = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    const size_t half = static_cast<size_t>(halfDim), table = static_cast<size_t>(seq) * half;
    const bool narrow = pairs + stride < (size_t(1) << 32);
    const DrawMix mix = unpackMix(shares, shape);
    const unsigned long long none = ~0ull;
    unsigned long long bad = 0, inChanged = 0, cosChanged = 0, sinChanged = 0;
    unsigned long long firstBad = none, firstIn = none, firstCos = none, firstSin = none;
    for (size_t p = first; p < pairs; p += stride) {
        const float x0 = drawValue(seed, 2 * p, mix), x1 = drawValue(seed, 2 * p + 1, mix);
        if (__float_as_uint(in[2 * p]) != __float_as_uint(x0)) note(2 * p, inChanged, firstIn);
        if (__float_as_uint(in[2 * p + 1]) != __float_as_uint(x1)) note(2 * p + 1, inChanged, firstIn);
        const size_t t = tableIndex(p, half, static_cast<size_t>(heads), static_cast<size_t>(seq), narrow);
        const double c = privCos[t], s = privSin[t], a = x0, b = x1;
        const double tol = rtol * (fabs(a) + fabs(b)) + atol;
        if (outputBad(out[2 * p], a * c - b * s, tol)) note(2 * p, bad, firstBad);
        if (outputBad(out[2 * p + 1], a * s + b * c, tol)) note(2 * p + 1, bad, firstBad);
    }
    for (size_t t = first; t < table; t += stride) {
        if (__float_as_uint(cosTab[t]) != __float_as_uint(privCos[t])) note(t, cosChanged, firstCos);
        if (__float_as_uint(sinTab[t]) != __float_as_uint(privSin[t])) note(t, sinChanged, firstSin);
    }
    report(counts, kBad, bad, firstBad);
    report(counts, kIn, inChanged, firstIn);
    report(counts, kCos, cosChanged, firstCos);
    report(counts, kSin, sinChanged, firstSin);
}
