#include "kernels/gemm-lt.h"

#include <algorithm>
#include <bit>

#include "engine/common/error.h"
#include "kernels/cuda-check.h"

namespace folio::kernels {

namespace {

struct DescDestroy {
    void operator()(cublasLtMatmulDesc_t d) const { cublasLtMatmulDescDestroy(d); }
};
struct LayoutDestroy {
    void operator()(cublasLtMatrixLayout_t l) const { cublasLtMatrixLayoutDestroy(l); }
};
struct PreferenceDestroy {
    void operator()(cublasLtMatmulPreference_t p) const { cublasLtMatmulPreferenceDestroy(p); }
};
using LayoutPtr = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LayoutDestroy>;

LayoutPtr make_layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld) {
    cublasLtMatrixLayout_t layout = nullptr;
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, type, static_cast<uint64_t>(rows),
                                            static_cast<uint64_t>(cols), ld));
    return LayoutPtr(layout);
}

// The largest power of two, up to 256, that divides the address: cuBLASLt picks kernels by the alignment it
// is promised.
int64_t alignment_of(const void* p) {
    const auto address = reinterpret_cast<uintptr_t>(p);
    return address == 0 ? 256 : std::min<int64_t>(256, int64_t{1} << std::countr_zero(address));
}

cublasLtEpilogue_t lt_epilogue(LinearEpilogue epilogue, bool bias) {
    if (epilogue == LinearEpilogue::GeluTanh) {
        return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    }
    return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

const char* epilogue_name(LinearEpilogue epilogue) {
    switch (epilogue) {
        case LinearEpilogue::Store:
            return "store";
        case LinearEpilogue::GeluTanh:
            return "gelu_tanh";
        case LinearEpilogue::Accumulate:
            return "accumulate";
    }
    return "?";
}

}  // namespace

int64_t row_bucket(int64_t n) {
    constexpr int kKeptBits = 3;
    int shift = 0;
    while ((n >> shift) >= (int64_t{1} << kKeptBits)) {
        ++shift;
    }
    const int64_t step = int64_t{1} << shift;
    return (n + step - 1) / step * step;
}

// Row-major y[n, n_out] = x[n, n_in] · w[n_out, n_in]ᵀ is column-major yᵀ[n_out, n] = w · xᵀ: A is w read
// transposed (column-major [n_in, n_out]), B is x (column-major [n_in, n]), C and D are yᵀ with leading
// dimension ld_y. cuBLASLt's bias is per row of D, so per output column of y.
struct LtGemm::Plan {
    std::unique_ptr<cublasLtMatmulDescOpaque_t, DescDestroy> desc;
    LayoutPtr a, b, d;
    cublasLtMatmulAlgo_t algo{};
};

LtGemm::LtGemm(void* workspace, size_t workspace_bytes)
    : workspace_(workspace), workspace_bytes_(workspace_bytes) {
    cublasLtHandle_t handle = nullptr;
    CUBLAS_CHECK(cublasLtCreate(&handle));
    handle_.reset(handle);
}

LtGemm::~LtGemm() = default;

const LtGemm::Plan& LtGemm::plan(const PlanKey& key, const void* bias,
                                 const std::array<const float*, 2>& scales) {
    if (const auto it = plans_.find(key); it != plans_.end()) {
        return *it->second;
    }
    // Shapes come from batch sizes and image sizes, so a long run meets many; old plans are cheap to remake.
    constexpr size_t kMaxPlans = 512;
    if (plans_.size() >= kMaxPlans) {
        plans_.clear();
        bucket_algos_.clear();
    }
    const auto [n, n_in, n_out, ld_y, epilogue, has_bias, alignment, bf16_output, fp8] = key;
    auto p = std::make_unique<Plan>();
    cublasLtMatmulDesc_t desc = nullptr;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    p->desc.reset(desc);
    const cublasOperation_t transpose = CUBLAS_OP_T;
    CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof(transpose)));
    const cublasLtEpilogue_t lt = lt_epilogue(static_cast<LinearEpilogue>(epilogue), has_bias != 0);
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &lt, sizeof(lt)));
    // FP8 products take a bfloat16 bias for a float32 output as well.
    const cudaDataType_t bias_type = bf16_output != 0 || fp8 != 0 ? CUDA_R_16BF : CUDA_R_32F;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                sizeof(bias_type)));
    // The heuristic reads the bias pointer's alignment.
    CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
    if (fp8 != 0) {
        // A scale for each row of A (w's output channels) and each column of B (x's rows).
        const cublasLtMatmulMatrixScale_t outer = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
        for (const auto attribute : {CUBLASLT_MATMUL_DESC_A_SCALE_MODE, CUBLASLT_MATMUL_DESC_B_SCALE_MODE}) {
            CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attribute, &outer, sizeof(outer)));
        }
        // The tensor cores' own accumulation, without cuBLASLt's periodic promotion to float32: E4M3's
        // rounding of the inputs is far larger than what the promotion saves.
        const int8_t fast = 1;
        CUBLAS_CHECK(
            cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)));
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scales[0],
                                                    sizeof(scales[0])));
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scales[1],
                                                    sizeof(scales[1])));
    }
    const cudaDataType_t input_type = fp8 != 0 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    p->a = make_layout(input_type, n_in, n_out, n_in);
    p->b = make_layout(input_type, n_in, n, n_in);
    p->d = make_layout(bf16_output != 0 ? CUDA_R_16BF : CUDA_R_32F, n_out, n, ld_y);

    PlanKey bucket_key = key;
    bucket_key[0] = row_bucket(n);
    if (const auto it = bucket_algos_.find(bucket_key); it != bucket_algos_.end()) {
        cublasLtMatmulHeuristicResult_t checked{};
        if (cublasLtMatmulAlgoCheck(handle_.get(), desc, p->a.get(), p->b.get(), p->d.get(), p->d.get(),
                                    &it->second, &checked) == CUBLAS_STATUS_SUCCESS &&
            checked.workspaceSize <= workspace_bytes_) {
            p->algo = it->second;
            return *plans_.emplace(key, std::move(p)).first->second;
        }
    }
    cublasLtMatmulPreference_t pref_raw = nullptr;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref_raw));
    const std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, PreferenceDestroy> pref(pref_raw);
    const uint64_t workspace = workspace_bytes_;
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref_raw, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                      &workspace, sizeof(workspace)));
    const auto align = static_cast<uint32_t>(alignment);
    for (const auto attribute :
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
        CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref_raw, attribute, &align, sizeof(align)));
    }
    cublasLtMatmulHeuristicResult_t result{};
    int n_results = 0;
    CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle_.get(), desc, p->a.get(), p->b.get(), p->d.get(),
                                                p->d.get(), pref_raw, 1, &result, &n_results));
    if (n_results == 0) {
        fail("cuBLASLt: no algorithm for a ", fp8 != 0 ? "FP8 (scaled by rows)" : "bfloat16",
             " linear layer of ", n, " x ", n_in, " by ", n_out, " x ", n_in, " with epilogue ",
             epilogue_name(static_cast<LinearEpilogue>(epilogue)), has_bias ? " and bias" : "",
             bf16_output != 0 ? ", bfloat16 output" : "", " (pointers aligned to ", alignment, " bytes)");
    }
    p->algo = result.algo;
    bucket_algos_[bucket_key] = result.algo;
    return *plans_.emplace(key, std::move(p)).first->second;
}

void LtGemm::linear_bf16(const LtLinearArgs& args, cudaStream_t stream) {
    run(args, args.x, args.w, false, stream);
}

void LtGemm::linear_fp8(const LtLinearArgs& args, cudaStream_t stream) {
    if (args.x_scales == nullptr || args.w_scales == nullptr || args.b != nullptr) {
        fail("cuBLASLt FP8 linear: x scales ", args.x_scales != nullptr ? "given" : "missing", ", w scales ",
             args.w_scales != nullptr ? "given" : "missing",
             args.b != nullptr ? ", a float32 bias (FP8 products take a bfloat16 one)" : "");
    }
    // The FP8 path reads rows of 16-byte multiples.
    if (args.n_in % 16 != 0) {
        fail("cuBLASLt FP8 linear: ", args.n_in, " input columns are not a multiple of 16");
    }
    run(args, args.x_fp8, args.w_fp8, true, stream);
}

void LtGemm::run(const LtLinearArgs& args, const void* x, const void* w, bool fp8, cudaStream_t stream) {
    if (args.n == 0 || args.n_out == 0) {
        return;
    }
    if (args.ld_y < args.n_out) {
        fail("cuBLASLt linear: row stride ", args.ld_y, " of y under its ", args.n_out, " columns");
    }
    const bool bf16_output = args.y_bf16 != nullptr;
    const bool bf16_bias = bf16_output || fp8;
    if ((args.y != nullptr) == bf16_output || (bf16_output && args.epilogue == LinearEpilogue::Accumulate) ||
        (bf16_bias ? args.b != nullptr : args.b_bf16 != nullptr)) {
        fail("cuBLASLt linear: float32 output ", args.y != nullptr ? "given" : "missing",
             ", bfloat16 output ", bf16_output ? "given" : "missing", ", float32 bias ",
             args.b != nullptr ? "given" : "missing", ", bfloat16 bias ",
             args.b_bf16 != nullptr ? "given" : "missing", ", epilogue ", epilogue_name(args.epilogue),
             " (one output; bfloat16 only stored, with a bias of the output's type)");
    }
    void* y = bf16_output ? static_cast<void*>(args.y_bf16) : static_cast<void*>(args.y);
    const void* bias = bf16_bias ? static_cast<const void*>(args.b_bf16) : static_cast<const void*>(args.b);
    const int64_t alignment =
        std::min({alignment_of(x), alignment_of(w), alignment_of(y), alignment_of(bias)});
    const Plan& p = plan({args.n, args.n_in, args.n_out, args.ld_y, static_cast<int64_t>(args.epilogue),
                          bias != nullptr ? 1 : 0, alignment, bf16_output ? 1 : 0, fp8 ? 1 : 0},
                         bias, {args.w_scales, args.x_scales});
    if (bias != nullptr) {
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                    sizeof(bias)));
    }
    if (fp8) {
        // A is w, B is x.
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc.get(), CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                                    &args.w_scales, sizeof(args.w_scales)));
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc.get(), CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                                    &args.x_scales, sizeof(args.x_scales)));
    }
    const float alpha = 1.0f;
    const float beta = args.epilogue == LinearEpilogue::Accumulate ? 1.0f : 0.0f;
    CUBLAS_CHECK(cublasLtMatmul(handle_.get(), p.desc.get(), &alpha, w, p.a.get(), x, p.b.get(), &beta, y,
                                p.d.get(), y, p.d.get(), &p.algo, workspace_, workspace_bytes_, stream));
}

}  // namespace folio::kernels
