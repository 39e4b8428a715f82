// bench/gpu/cublas_sgemm.cu: cuBLAS sgemm called directly, the anchor for bench/gpu/gpu_sgemm.lua:
// C = A B for n x n float32 (n = 1024, 2048, 4096, or the arguments), A, B uniform in [-0.5, 0.5),
// TFLOP/s = 2 n^3 / t, one warm-up call, then best of 5 repetitions of a loop of >= 0.2 s timed
// with cudaEvents on the default stream (the way fastnn's figure is timed: the device synchronised
// around each loop). Built by CMake with -DFASTNN_CUDA=ON (target cublas_sgemm); check.sh runs it.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                                 \
    do {                                                                                            \
        auto e_ = (call);                                                                           \
        if ((int)e_ != 0) {                                                                         \
            std::fprintf(stderr, "cublas_sgemm: %s failed (%d) at line %d\n", #call, (int)e_, __LINE__); \
            std::exit(1);                                                                           \
        }                                                                                           \
    } while (0)

static float time_loop(cublasHandle_t h, int n, const float *a, const float *b, float *c, int calls) {
    const float one = 1.0f, zero = 0.0f;
    cudaEvent_t t0, t1;
    CHECK(cudaEventCreate(&t0));
    CHECK(cudaEventCreate(&t1));
    CHECK(cudaEventRecord(t0));
    for (int i = 0; i < calls; i++) CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n));
    CHECK(cudaEventRecord(t1));
    CHECK(cudaEventSynchronize(t1));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, t0, t1));
    CHECK(cudaEventDestroy(t0));
    CHECK(cudaEventDestroy(t1));
    return ms / 1e3f;
}

int main(int argc, char **argv) {
    std::vector<int> sizes;
    for (int i = 1; i < argc; i++) sizes.push_back(std::atoi(argv[i]));
    if (sizes.empty()) sizes = {1024, 2048, 4096};
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        std::printf("SKIPPED cublas_sgemm: skipped: no CUDA device\n");
        return 0;
    }
    cublasHandle_t h;
    CHECK(cublasCreate(&h));
    for (int n : sizes) {
        size_t elems = (size_t)n * n;
        std::vector<float> host(elems);
        srand(1);
        for (auto &v : host) v = (float)rand() / ((float)RAND_MAX + 1.0f) - 0.5f;
        float *a, *b, *c;
        CHECK(cudaMalloc(&a, elems * sizeof(float)));
        CHECK(cudaMalloc(&b, elems * sizeof(float)));
        CHECK(cudaMalloc(&c, elems * sizeof(float)));
        CHECK(cudaMemcpy(a, host.data(), elems * sizeof(float), cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(b, host.data(), elems * sizeof(float), cudaMemcpyHostToDevice));
        float t1 = time_loop(h, n, a, b, c, 1);   // warm-up and calibration
        int calls = (int)(0.2f / (t1 > 1e-6f ? t1 : 1e-6f)) + 1;
        double flop = 2.0 * n * (double)n * n, best = 0;
        for (int r = 0; r < 5; r++) {
            double t = time_loop(h, n, a, b, c, calls);
            if (flop * calls / t / 1e12 > best) best = flop * calls / t / 1e12;
        }
        std::printf("RESULT cublas_sgemm_n%d tflops=%.6g TFLOP/s\n", n, best);
        std::fflush(stdout);
        CHECK(cudaFree(a));
        CHECK(cudaFree(b));
        CHECK(cudaFree(c));
    }
    CHECK(cublasDestroy(h));
    return 0;
}
