#define CAP(...) static_assert(false, #__VA_ARGS__);
CAP(
const char* s = "\\

#include "/etc/passwd"
";
)

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {}
