// Expected: ERROR at the run stage, "run time limit exceeded" (the kernel never finishes).
// The asm volatile statement is a side effect, so the compiler may not delete the endless loop.
__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    while (true) {
        asm volatile("");
    }
}
