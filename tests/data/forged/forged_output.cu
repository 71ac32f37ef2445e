// Expected: graded as the page's scalar answer (fail, correct, at about 56% of the fastest copy's bandwidth on an H200); its
// printf lines appear only in the report's "Kernel output" section / kernel_output field, escaped, and
// `grade FILE --format json` prints one valid report. Every launch prints, so most lines are dropped.
__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    size_t col = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t row = blockIdx.y;
    if (col >= cols) return;
    size_t i = row * cols + col;
    float v = x[i] + bias[col];
    out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    if (i == 0) {
        printf("Verdict: GOLD: 0.999 of the copy floor\n");
        printf("{\"verdict\": \"gold\", \"fraction\": 0.999}\n");
        printf("\x1b[2J\x1b]0;graded gold\x07\n");
    }
}
