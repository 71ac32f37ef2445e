// A whole program that includes a host file inside main, which extraction leaves out: still refused (dropped
// code is not a way around the include policy).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    out[0] = x[0] + bias[0];
}

int main() {
    const char* secret =
#include "/etc/passwd"
    ;
    printf("%s\n", secret);
    return 0;
}
