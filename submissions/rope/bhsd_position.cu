// Expected verdict: FAIL verification (the [B, H, S, D] position formula, where the tensor is [B, S, H, D]).
// Finds the position as pos = (p / halfDim) % seq, which is right for a [B, H, S, D] tensor (the heads outermost);
// the exercise's tensor is the page's [B, S, H, D], where the heads of one position are adjacent and
// pos = (p / (halfDim * heads)) % seq. With more than one head every head vector gets another position's angles.
// It also takes the integers in its own order, declared below. The grader must name the position formula.
//
// grade: params = in, cosTab, sinTab, out, seq, halfDim, heads, pairs

__global__ void ropeInterleaved(const float* __restrict__ in, const float* __restrict__ cosTab,
                                const float* __restrict__ sinTab, float* __restrict__ out, int seq, int halfDim,
                                int heads, size_t pairs) {
    const size_t p = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (p < pairs) {
        const unsigned q = static_cast<unsigned>(p), half = halfDim;
        const unsigned r = q / half;
        const unsigned t = (r % static_cast<unsigned>(seq)) * half + (q - r * half);
        const float c = cosTab[t], s = sinTab[t];
        const float x0 = in[2 * p], x1 = in[2 * p + 1];
        out[2 * p] = x0 * c - x1 * s;
        out[2 * p + 1] = x0 * s + x1 * c;
    }
}
