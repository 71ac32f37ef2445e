#line 1 "/etc/passwd"
int int int;

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {}
