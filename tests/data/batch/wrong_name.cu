// Expected: ERROR at the compile stage: no kernel named biasGeluFused; the message lists biasGelu, addBias.
__global__ void biasGelu(const float* x, const float* bias, float* out, size_t cols) {}
__global__ void addBias(const float* x, const float* bias, float* out, size_t cols) {}
