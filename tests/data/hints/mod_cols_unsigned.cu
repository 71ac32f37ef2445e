// Hint test: the i % cols pitfall with unsigned operands. NVRTC 13.5 emits rem.u32 in PTX; in SASS an inline
// 32-bit division (I2F.U32.RP, MUFU.RCP, IMAD.HI.U32), no routine call.
// Expected hints: "look at your bias index first"; 4-byte loads only (on a card whose scalar copy is slow).

__global__ void biasGeluFused(const float* x, const float* bias, float* out, unsigned n, unsigned cols) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float v = x[i] + bias[i % cols];
        out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
}
