#define STR(...) #__VA_ARGS__
constexpr const char* s = STR(
#inc\
lude "/etc/passwd"
);
static_assert(s[0] == 0, "x");

__global__ void biasGeluFused(const float* x, const float* bias, float* out, size_t cols) {}
