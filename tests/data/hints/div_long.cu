// Hint test: a flat grid that splits the index into row and column with a signed 64-bit division (long long):
// row = i / cols, col = i - row * cols. NVRTC 13.5 emits div.s64 in PTX; in SASS a call to CUDA's routine
// __cuda_sm20_div_s64 (I2F.U64.RP inside), behind an inline 32-bit path (I2F.U32.RP) for operands that fit
// 32 bits. Expected hints: "look at your bias index first"; 4-byte loads only (on a card whose scalar copy is slow).

__global__ void biasGeluFused(const float* x, const float* bias, float* out, long long rows, long long cols) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    const long long row = i / cols;
    if (row < rows) {
        const long long col = i - row * cols;
        const float v = x[i] + bias[col];
        out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
}
