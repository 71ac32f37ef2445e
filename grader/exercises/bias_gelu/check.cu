// The on-GPU check of biasGeluFused's timed launches (grader/exercises/bias_gelu/device.py).

#include "draws.cuh"

// Checks outputs of biasGeluFused on the GPU, so no gigabytes cross to the host. The inputs are regenerated from
// their seeds, never read from the buffers the kernel was given (a kernel that writes its inputs cannot make the
// expected side agree): for every element, ref = GELU_erf(x + bias[col]) in float64 (the formula of
// grader.exercises.bias_gelu.reference.bias_gelu), and an output element is bad unless |out - ref| <= atol + rtol * |ref|, or both
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
