// An include in an `#if 0` group of a whole program (extraction drops the group's tokens): still refused.
#include <vector>
#include <cuda_runtime.h>

#if 0
#include "/etc/passwd"
#endif

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    out[0] = x[0] + bias[0];
}

int main() {
    std::vector<float> v(4);
    return 0;
}
