// A digraph include (`%:include`) inside host code of a whole program: refused.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    out[0] = x[0] + bias[0];
}

int main() {
%:include "/etc/passwd"
    return 0;
}
