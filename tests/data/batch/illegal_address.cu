// Expected: ERROR at the run stage, CUDA_ERROR_ILLEGAL_ADDRESS (a store through a wild pointer). The fault is
// sticky: the grading process is finished with it, and the batch goes on with the next submission.
__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    float* wild = reinterpret_cast<float*>(0xdead00000000ull);
    wild[blockIdx.y * cols + threadIdx.x] = x[0] + bias[0];
}
