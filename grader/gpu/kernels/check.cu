// Checks the output of a timed launch on the GPU, so no gigabytes cross to the host: for every element,
// ref = GELU_erf(x + bias[col]) in float64 (the same formula as grader.check.reference.bias_gelu) and the element
// is bad unless |out - ref| <= atol + rtol * |ref| (NaN and inf are bad). Counts bad elements and keeps the
// smallest bad index.

extern "C" __global__ void checkBiasGelu(const float* __restrict__ x, const float* __restrict__ bias,
                                         const float* __restrict__ out, size_t rows, size_t cols,
                                         double atol, double rtol, unsigned long long* badCount,
                                         unsigned long long* firstBad) {
    const size_t n = rows * cols;
    unsigned long long bad = 0;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<size_t>(gridDim.x) * blockDim.x) {
        const double v = static_cast<double>(x[i]) + static_cast<double>(bias[i % cols]);
        const double ref = 0.5 * v * (1.0 + erf(v * 0.70710678118654752440));
        const double got = static_cast<double>(out[i]);
        if (!(fabs(got - ref) <= atol + rtol * fabs(ref))) {
            ++bad;
            atomicMin(firstBad, static_cast<unsigned long long>(i));
        }
    }
    if (bad) atomicAdd(badCount, bad);
}
