#define CAP(...) static_assert(false, #__VA_ARGS__);
int a = 1'+'/*';
CAP(
#include "/etc/passwd"
)
//*/

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {}
