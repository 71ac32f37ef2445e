// A raw string in main holding an include line, braces and quotes: lexed as one literal, left out with main;
// the kernel after it compiles and nothing is read.
#include <cstdio>
#include <cuda_runtime.h>

int main() {
    const char* text = R"x(}
#include "/etc/passwd"
{ " ' )x";
    char brace = '{';
    long big = 1'000'000;  // }
    printf("%s %c %ld\n", text, brace, big);
    return 0;
}

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    out[0] = x[0] + bias[0];
}
