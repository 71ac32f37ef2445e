// The feed-forward tail of the course page (day 96): add the bias, apply GELU, add the residual. float32,
// row-major [rows, cols]; the bias has cols entries and is indexed by column. Row kernels use the page's row
// grid (blockIdx.y = row, so the column falls out of threadIdx.x with no i % cols); flat kernels index n
// elements with one grid dimension.
//
// kVec is the floats per thread. kVec = 1 is the page's kernel as printed. kVec = 4 moves 16 bytes per load
// and store where every row is 16-byte aligned (cols % 4 == 0 for row kernels; whole float4s of a flat
// buffer) and falls back to up to 4 scalar elements elsewhere (ragged cols, the tail of a flat buffer).
// Buffers must start 16-byte aligned (the grader's allocations are 256-byte aligned).

// GELU constants (PyTorch's GELU docs; Hendrycks and Gimpel, arXiv:1606.08415).
#define kInvSqrt2 0.7071067811865475f   // 1 / sqrt(2)
#define kGeluA 0.7978845608028654f      // sqrt(2 / pi)
#define kGeluB 0.044715f

// The exact GELU: x times the standard normal CDF, PyTorch's approximate='none'.
__device__ __forceinline__ float geluErf(float x) {
    return 0.5f * x * (1.0f + erff(x * kInvSqrt2));
}

// The tanh GELU, the paper's approximation and what GPT-2 shipped: a different function, not a rounding.
__device__ __forceinline__ float geluTanh(float x) {
    const float inner = kGeluA * (x + kGeluB * x * x * x);
    return 0.5f * x * (1.0f + tanhf(inner));
}

__device__ __forceinline__ float4 load4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ void store4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }

// f applied lane by lane to two float4s.
template <class F>
__device__ __forceinline__ float4 map4(float4 a, float4 b, F f) {
    return make_float4(f(a.x, b.x), f(a.y, b.y), f(a.z, b.z), f(a.w, b.w));
}

// out[row, col] = f(a[row, col], bias[col], r[row, col]) over a row grid; r may be null when f ignores it.
template <int kVec, class F>
__device__ __forceinline__ void rowMap(const float* __restrict__ a, const float* __restrict__ bias,
                                       const float* __restrict__ r, float* __restrict__ out, size_t cols, F f) {
    const size_t col = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) * kVec;
    const size_t i = blockIdx.y * cols + col;
    if (kVec == 4 && cols % 4 == 0) {
        if (col < cols) {
            const float4 va = load4(a + i), vb = load4(bias + col);
            const float4 vr = r ? load4(r + i) : make_float4(0.f, 0.f, 0.f, 0.f);
            store4(out + i, make_float4(f(va.x, vb.x, vr.x), f(va.y, vb.y, vr.y), f(va.z, vb.z, vr.z),
                                        f(va.w, vb.w, vr.w)));
        }
    } else {
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
            if (col + k < cols) out[i + k] = f(a[i + k], bias[col + k], r ? r[i + k] : 0.0f);
        }
    }
}

// out[i] = f(a[i], b[i]) for i < n over a flat grid; b may be null when f ignores it.
template <int kVec, class F>
__device__ __forceinline__ void flatMap(const float* __restrict__ a, const float* __restrict__ b,
                                        float* __restrict__ out, size_t n, F f) {
    const size_t i = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) * kVec;
    if (kVec == 4 && i + 4 <= n) {
        const float4 va = load4(a + i);
        const float4 vb = b ? load4(b + i) : make_float4(0.f, 0.f, 0.f, 0.f);
        store4(out + i, map4(va, vb, f));
    } else {
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
            if (i + k < n) out[i + k] = f(a[i + k], b ? b[i + k] : 0.0f);
        }
    }
}

// Stage 1 of the staged chain: out = x + bias[col]. Reads x, writes out: 2 floats per element.
template <int kVec>
__global__ void addBiasRow(const float* __restrict__ x, const float* __restrict__ bias, float* __restrict__ out,
                           size_t cols) {
    rowMap<kVec>(x, bias, nullptr, out, cols, [](float v, float b, float) { return v + b; });
}

// Stage 2: out = GELU_erf(in). 2 floats per element.
template <int kVec>
__global__ void applyGeluErf(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    flatMap<kVec>(in, nullptr, out, n, [](float v, float) { return geluErf(v); });
}

// Stage 2 with the tanh form instead (a different function; for the GELU comparison). 2 floats per element.
template <int kVec>
__global__ void applyGeluTanh(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    flatMap<kVec>(in, nullptr, out, n, [](float v, float) { return geluTanh(v); });
}

// Stage 3: out = in + r. Reads in and r, writes out: 3 floats per element.
template <int kVec>
__global__ void addResidual(const float* __restrict__ in, const float* __restrict__ r, float* __restrict__ out,
                            size_t n) {
    flatMap<kVec>(in, r, out, n, [](float v, float w) { return v + w; });
}

// The exercise's model answer: out = GELU_erf(x + bias[col]). 2 floats per element.
template <int kVec>
__global__ void biasGeluFused(const float* __restrict__ x, const float* __restrict__ bias, float* __restrict__ out,
                              size_t cols) {
    rowMap<kVec>(x, bias, nullptr, out, cols, [](float v, float b, float) { return geluErf(v + b); });
}

// The whole chain in one pass: out = GELU_erf(x + bias[col]) + r. Reads x and r, writes out: 3 floats.
template <int kVec>
__global__ void biasGeluResidualFused(const float* __restrict__ x, const float* __restrict__ bias,
                                      const float* __restrict__ r, float* __restrict__ out, size_t cols) {
    rowMap<kVec>(x, bias, r, out, cols, [](float v, float b, float w) { return geluErf(v + b) + w; });
}

// The GELU gap with the float32 device functions above: both forms at each x of a sweep, one per thread.
extern "C" __global__ void geluForms(const float* __restrict__ x, float* __restrict__ erfOut,
                                     float* __restrict__ tanhOut, size_t n) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n) {
        erfOut[i] = geluErf(x[i]);
        tanhOut[i] = geluTanh(x[i]);
    }
}
