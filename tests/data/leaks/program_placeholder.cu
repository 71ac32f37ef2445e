// The student writes the grader's own placeholder pragma and tries a line marker inside a kept helper: the
// pragma stays a pragma (only the grader's placeholders become #line), the line marker is refused.
#include <cstdio>
#include <cuda_runtime.h>

__device__ float helper(float v) {
#pragma grader_line
#line 1 "/etc/passwd"
    return v;
}

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    out[0] = helper(x[0]) + bias[0];
}

int main() {
    return 0;
}
