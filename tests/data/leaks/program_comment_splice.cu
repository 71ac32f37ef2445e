// A line comment in host code that ends with a backslash continues onto the next line, so the include there
// is comment text for NVRTC and for the lexer alike; extraction leaves it out with main.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    out[0] = x[0] + bias[0];
}

int main() {
    // the next line is part of this comment \
#include "/etc/passwd"
    return 0;
}
