// Expected: ERROR at the compile stage, "compile time limit exceeded". Every level instantiates two new
// classes, so NVRTC would instantiate 2^30 of them (hours); the batch stops it at --compile-limit.
template <int N, unsigned long long M>
struct T {
    static constexpr unsigned long long v = T<N - 1, 2 * M>::v + T<N - 1, 2 * M + 1>::v;
};
template <unsigned long long M>
struct T<0, M> {
    static constexpr unsigned long long v = M;
};

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {
    out[0] = static_cast<float>(T<30, 1>::v);
}
