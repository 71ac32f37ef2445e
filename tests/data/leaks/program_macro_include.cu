// A whole program whose kept device helper includes a host file through a macro: refused (macro-built
// include names are refused everywhere).
#include <cstdio>
#include <cuda_runtime.h>
#define SECRET "/etc/passwd"

__device__ float helper(float v) {
#include SECRET
    return v;
}

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    out[0] = helper(x[0]) + bias[0];
}

int main() {
    return 0;
}
