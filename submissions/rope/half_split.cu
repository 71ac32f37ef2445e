// Expected verdict: FAIL verification (half-split pairing: the exercise pairs adjacent elements).
// Rotates the pairs (j, j + D/2) of each head, the Llama / Hugging Face convention, where the exercise (and the
// weights it stands for) pairs (2j, 2j+1). The page's Pitfall: "if element 0 matches while element 1 does not,
// you are rotating adjacent pairs where the weights expect halves, or the reverse". The grader must name the
// half-split pairing.

__global__ void ropeInterleaved(const float* __restrict__ in, const float* __restrict__ cosTab,
                                const float* __restrict__ sinTab, float* __restrict__ out, size_t pairs,
                                int halfDim, int heads, int seq) {
    const size_t p = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (p < pairs) {
        const size_t half = static_cast<size_t>(halfDim);
        const size_t j = p % half;
        const size_t head = p / half;
        const size_t pos = (head / static_cast<size_t>(heads)) % static_cast<size_t>(seq);
        const float c = cosTab[pos * half + j];
        const float s = sinTab[pos * half + j];
        const size_t at = head * 2 * half + j;
        const float x0 = in[at];
        const float x1 = in[at + half];
        out[at] = x0 * c - x1 * s;
        out[at + half] = x0 * s + x1 * c;
    }
}
