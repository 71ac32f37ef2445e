// A whole program whose kernel includes a host file inside its body: refused before NVRTC (the whole file
// passes the include policy before anything is extracted).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
#include "/etc/passwd"
    out[0] = x[0] + bias[0];
}

int main() {
    printf("done\n");
    return 0;
}
