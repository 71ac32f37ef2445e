// Whole program with CRLF line ends and a lone CR between # and include in host code (normalized to a
// line end: a null directive, then stray tokens in main, which is left out).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    out[0] = x[0] + bias[0];
}

int main() {
#include "/etc/passwd"
    return 0;
}
