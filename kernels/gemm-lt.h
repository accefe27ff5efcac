// Linear layers on cuBLASLt: bfloat16 activations and weights, float32 accumulation and output, with the
// bias, the GELU and the residual add done in the GEMM's epilogue instead of in passes of their own. A plan
// (the operation and layout descriptors and the algorithm cuBLASLt's heuristic chose) is kept per shape. The
// heuristic takes milliseconds of host time, and the vision encoder's row counts differ from batch to batch,
// so shapes whose row counts share a row_bucket() share its algorithm, checked against each new shape before
// it is used.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>

#include <cublasLt.h>
#include <cuda_runtime.h>

namespace folio::kernels {

// What a linear layer does with its product p = x · wᵀ + b before it stores it in y.
enum class LinearEpilogue {
    Store,       // y = p
    GeluTanh,    // y = gelu(p), tanh approximation
    Accumulate,  // y += p (a layer that adds to the residual stream)
};

// y [n, n_out] float32 = epilogue(x [n, n_in] · w [n_out, n_in]ᵀ + b [n_out]); x and w are bfloat16 bits,
// row-major with row strides n_in, y with row stride ld_y (>= n_out, so that a block of a layer's output
// columns can be written in place). b float32 or null. With y_bf16 in place of y the output is written as
// bfloat16 bits, rounded to nearest even (not for Accumulate), and the bias, if any, is b_bf16 in bfloat16
// bits: cuBLASLt takes a bias of the output's type there.
//
// FP8 (linear_fp8): x_fp8 and w_fp8 are E4M3 bytes in the same layouts, their values x_scales[i] · x_fp8[i,
// :] and w_scales[o] · w_fp8[o, :] (one scale a row of each, float32, on the device); the bias, if any, is
// b_bf16 for either output.
struct LtLinearArgs {
    const uint16_t* x = nullptr;
    const uint16_t* w = nullptr;
    const uint8_t* x_fp8 = nullptr;
    const uint8_t* w_fp8 = nullptr;
    const float* x_scales = nullptr;  // [n]
    const float* w_scales = nullptr;  // [n_out]
    const float* b = nullptr;
    float* y = nullptr;
    uint16_t* y_bf16 = nullptr;
    const uint16_t* b_bf16 = nullptr;
    int64_t n = 0;
    int64_t n_in = 0;
    int64_t n_out = 0;
    int64_t ld_y = 0;
    LinearEpilogue epilogue = LinearEpilogue::Store;
};

// The bucket of row counts n falls in: n rounded up to its three most significant bits (exact up to 8;
// 9 to 16 by twos, ..., 4,097 to 8,192 by 1,024s), so that a bucket's row counts lie within a quarter of it.
int64_t row_bucket(int64_t n);

class LtGemm {
public:
    // workspace [workspace_bytes] in device memory, owned by the caller; the GEMMs allocate nothing, so
    // they can be recorded into CUDA graphs.
    LtGemm(void* workspace, size_t workspace_bytes);
    ~LtGemm();
    LtGemm(const LtGemm&) = delete;
    LtGemm& operator=(const LtGemm&) = delete;

    // Enqueues the linear layer on stream. Throws folio::Error when cuBLASLt has no algorithm for it.
    void linear_bf16(const LtLinearArgs& args, cudaStream_t stream);
    // The same with FP8 inputs on the tensor cores' FP8 path (compute capability 8.9 and later), each input's
    // row scales applied to the float32 sums. Throws folio::Error when cuBLASLt has no algorithm for it
    // (cuBLASLt scales by rows on the FP8 path of Hopper and later).
    void linear_fp8(const LtLinearArgs& args, cudaStream_t stream);

private:
    struct Plan;
    // n, n_in, n_out, ld_y, epilogue, bias present, alignment of the pointers in bytes, bfloat16 output, FP8
    // inputs
    using PlanKey = std::array<int64_t, 9>;
    // Checks the outputs args gives and enqueues its product from inputs x and w.
    void run(const LtLinearArgs& args, const void* x, const void* w, bool fp8, cudaStream_t stream);
    // scales: an FP8 product's w and x scales, which the heuristic reads beside the bias.
    const Plan& plan(const PlanKey& key, const void* bias, const std::array<const float*, 2>& scales);

    struct HandleDestroy {
        void operator()(cublasLtHandle_t h) const { cublasLtDestroy(h); }
    };
    std::unique_ptr<cublasLtContext, HandleDestroy> handle_;
    void* workspace_;
    size_t workspace_bytes_;
    std::map<PlanKey, std::unique_ptr<Plan>> plans_;
    // The heuristic's algorithm by plan key with n replaced by row_bucket(n).
    std::map<PlanKey, cublasLtMatmulAlgo_t> bucket_algos_;
};

}  // namespace folio::kernels
