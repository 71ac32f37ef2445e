// RoPE-style pair access: thread p rotates in[2p], in[2p + 1] (two 4-byte loads 8 bytes apart from one thread to
// the next, which together cover every byte), and a float2 version of the same (8-byte loads, coalesced).
__global__ void ropePairs(const float* __restrict__ in, const float* __restrict__ cosTab,
                          const float* __restrict__ sinTab, float* __restrict__ out, int pairs, int half) {
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < pairs) {
        const int t = p % half;
        const float c = cosTab[t], s = sinTab[t];
        const float x0 = in[2 * p], x1 = in[2 * p + 1];
        out[2 * p] = x0 * c - x1 * s;
        out[2 * p + 1] = x0 * s + x1 * c;
    }
}

__global__ void ropeFloat2(const float2* __restrict__ in, const float* __restrict__ cosTab,
                           const float* __restrict__ sinTab, float2* __restrict__ out, int pairs, int half) {
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < pairs) {
        const int t = p % half;
        const float c = cosTab[t], s = sinTab[t];
        const float2 v = in[p];
        out[p] = make_float2(v.x * c - v.y * s, v.x * s + v.y * c);
    }
}
