// A `#include` that is not a directive in the file (a `#` in the middle of a line) but would start a line once
// the unused constant before it is left out: the extracted text is scanned again, so it is refused there.
#include <cstdio>
#include <cuda_runtime.h>

__device__ float kUnused = 1.0f; #include "/etc/passwd"
__device__ float helper(float v) { return v; }

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    out[0] = helper(x[0]) + bias[0];
}

int main() {
    return 0;
}
