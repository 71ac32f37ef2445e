// résumé in Latin-1
__global__ void biasGeluFused(const float* x, const float* b, float* o, size_t c) {}
