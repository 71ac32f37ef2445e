// Whole program in the style of CUDA samples' helper_math.h: float4 operators (operator*, operator+=), M_SQRT1_2 and FLT_MAX from the headers, a copy kernel with a default template argument, a host counter, the table row and sentence as the page prints them after a pasted table. Expected: graded (correct; gold on an H200); kept operator*, operator+=, geluErf, gelu4; ignored main, copyFloor, gRuns, checkAll.
#include <cmath>
#include <cfloat>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>

// version    kernels  floats/elem  ms      GB/s   x copy
// copyFloor        1            2  0.5392  248.9   1.00
// biasGeluFused    1            2  0.5601  239.6   0.96
//
// At 0.5601 ms my kernel reached 0.96 of the copy floor; it cannot exceed 1.0 because it reads one buffer and
// writes one, exactly what copyFloor moves.

static int gRuns = 0;

inline __device__ float4 operator*(float4 a, float s) { return make_float4(a.x * s, a.y * s, a.z * s, a.w * s); }
inline __device__ void operator+=(float4& a, float4 b) { a.x += b.x; a.y += b.y; a.z += b.z; a.w += b.w; }

__device__ __forceinline__ float geluErf(float v) {
    const float g = 0.5f * v * (1.0f + erff(v * (float)M_SQRT1_2));
    return g > FLT_MAX ? FLT_MAX : g;  // not fminf: it would turn a NaN input's NaN into FLT_MAX
}

__device__ __forceinline__ float4 gelu4(float4 v) {
    return make_float4(geluErf(v.x), geluErf(v.y), geluErf(v.z), geluErf(v.w));
}

template <int N = 4>
__global__ void copyFloor(const float4* __restrict__ in, float4* __restrict__ out, size_t n) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = in[i] * 1.0f;
}

// grade: params = x, bias, out, cols
// grade: grid = row
// grade: block = 256
// grade: elems_per_thread = 4
__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias,
                              float* __restrict__ out, size_t cols) {
    const size_t col = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) * 4;
    const size_t row = blockIdx.y * cols;
    if (cols % 4 == 0 && col + 4 <= cols) {
        float4 v = *reinterpret_cast<const float4*>(x + row + col);
        v += *reinterpret_cast<const float4*>(bias + col);
        *reinterpret_cast<float4*>(out + row + col) = gelu4(v);
    } else {
        for (size_t c = col; c < cols && c < col + 4; ++c) out[row + c] = geluErf(x[row + c] + bias[c]);
    }
}

bool checkAll(const std::vector<float>& got, const std::vector<float>& want) {
    for (size_t i = 0; i < got.size(); ++i) {
        if (std::fabs(got[i] - want[i]) > 1e-5f + 1e-5f * std::fabs(want[i])) return false;
    }
    return true;
}

int main() {
    const int rows = 101, cols = 97;
    std::vector<float> x(rows * cols, 0.5f), bias(cols, 0.25f), out(rows * cols), want(rows * cols);
    float *dx, *db, *dout;
    cudaMalloc(&dx, x.size() * sizeof(float));
    cudaMalloc(&db, bias.size() * sizeof(float));
    cudaMalloc(&dout, out.size() * sizeof(float));
    cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(db, bias.data(), bias.size() * sizeof(float), cudaMemcpyHostToDevice);
    biasGeluFused<<<dim3((cols / 4 + 255) / 256 + 1, rows), 256>>>(dx, db, dout, cols);
    cudaMemcpy(out.data(), dout, out.size() * sizeof(float), cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < want.size(); ++i) {
        const float v = x[i] + bias[i % cols];
        want[i] = 0.5f * v * (1.0f + std::erf(v * (float)M_SQRT1_2));
    }
    ++gRuns;
    std::printf("biasGeluFused %s after %d run(s)\n", checkAll(out, want) ? "matches" : "DIFFERS", gRuns);
    cudaFree(dx);
    cudaFree(db);
    cudaFree(dout);
    return 0;
}
