#if __has_include__("/etc/passwd")
int yes;
#endif

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {}
