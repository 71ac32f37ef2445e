// Expected: ERROR at the source stage: the include is refused before NVRTC sees the file.
#include "/etc/passwd"
__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {}
