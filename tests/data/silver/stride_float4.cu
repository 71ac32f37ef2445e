// Expected verdict: SILVER on an H200 (at about 77% of the fastest copy's bandwidth; 528 blocks gave 83%, 264 gave 64%): a correct 16-byte kernel held back on
// purpose. A grid-stride loop with few blocks keeps too few 16-byte loads in flight to reach the copy's
// bandwidth (Little's law: bytes in flight = bandwidth x latency). Used to check that verdicts near the
// silver line hold, or are withheld, on a shared GPU (benchmarks/contention.py).
//
// grade: params = x, bias, out, n, cols
// grade: grid = stride 396
// grade: block = 256

__device__ __forceinline__ float geluErf(float v) {
    return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
}

__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t n, size_t cols) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    const size_t first = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if ((cols & 3) == 0) {
        for (size_t q = first; q < n / 4; q += stride) {
            const float4 v = reinterpret_cast<const float4*>(x)[q];
            const size_t c = (4 * q) % cols;
            const float4 b = *reinterpret_cast<const float4*>(bias + c);
            float4 r;
            r.x = geluErf(v.x + b.x);
            r.y = geluErf(v.y + b.y);
            r.z = geluErf(v.z + b.z);
            r.w = geluErf(v.w + b.w);
            reinterpret_cast<float4*>(out)[q] = r;
        }
    } else {
        for (size_t i = first; i < n; i += stride) {
            out[i] = geluErf(x[i] + bias[i % cols]);
        }
    }
}
