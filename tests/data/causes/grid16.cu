// Expected first hint: grid (16 blocks of 256 threads: 128 warps for the whole card, an H200 holds 8,448).
// A grid-stride float4 kernel launched with 16 blocks (issue 29: 4.8% of the fastest copy's bandwidth on the H200). Its x loads
// and out stores are coalesced 16-byte accesses; the bias is read as four scalar loads per thread, 16 bytes apart
// across a warp (16 sectors per request, served by L1): not what sets its time.
//
// grade: params = x, bias, out, n, cols
// grade: grid = stride 16
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
            float4 r;
            r.x = geluErf(v.x + bias[c]);
            r.y = geluErf(v.y + bias[c + 1]);
            r.z = geluErf(v.z + bias[c + 2]);
            r.w = geluErf(v.w + bias[c + 3]);
            reinterpret_cast<float4*>(out)[q] = r;
        }
    } else {
        for (size_t i = first; i < n; i += stride) {
            out[i] = geluErf(x[i] + bias[i % cols]);
        }
    }
}
