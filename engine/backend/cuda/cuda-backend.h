// The CUDA backend's class, its operations defined by concern: backend-cuda.cpp (memory, transfers,
// elementwise operations, norms, rows, sampling, recording), cuda-linear.cpp (the products),
// cuda-attention.cpp (attention) and cuda-vision.cpp (the layout models' vision operations).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "engine/backend/backend-checks.h"
#include "engine/backend/backend.h"
#include "engine/backend/cuda/cuda-linear.h"
#include "engine/backend/cuda/cuda-memory-pool.h"
#include "engine/backend/cuda/host-readback.h"
#include "engine/backend/cuda/host-staging.h"
#include "engine/backend/cuda/make-cuda-backend.h"
#include "engine/common/thread-pool.h"
#include "kernels/attention.h"
#include "kernels/cuda-check.h"
#include "kernels/gemm-lt.h"
#include "kernels/moe.h"
#include "kernels/quantized-linear.h"
#include "kernels/rotary.h"

namespace folio::cuda {

struct StreamDestroy {
    void operator()(cudaStream_t s) const { cudaStreamDestroy(s); }
};
struct CublasDestroy {
    void operator()(cublasHandle_t h) const { cublasDestroy(h); }
};

// The CUDA backend: every operation checks its arguments on the host as the CPU backend does, then enqueues
// kernels on the backend's stream; download() is the only call that waits for the device.
class CudaBackend final : public Backend {
public:
    explicit CudaBackend(const CudaBackendOptions& options);
    ~CudaBackend() override;
    CudaBackend(const CudaBackend&) = delete;
    CudaBackend& operator=(const CudaBackend&) = delete;
    std::string name() const override;
    // FP8 products need compute capability 8.9 (Ada) or later.
    std::string fp8_refusal() const override;
    // The stream the backend queues its work on, for others' work that must run in order with it (NCCL).
    cudaStream_t work_stream() const { return stream_.get(); }

    // Zero-filled, as the CPU backend's tensors are.
    Tensor alloc(std::vector<int64_t> shape) override;
    Tensor upload(std::span<const float> values, std::vector<int64_t> shape) override;

    // Through page-locked memory (copy_parts_to_device).
    Tensor upload(std::span<const std::span<const float>> parts, std::vector<int64_t> shape) override;

    // The levels go through page-locked memory as upload() does, into scratch that a kernel expands.
    Tensor upload_levels(std::span<const std::span<const uint8_t>> parts, std::span<const float> table,
                         int64_t channel_size, std::vector<int64_t> shape) override;
    void update_levels(Tensor& t, std::span<const std::span<const uint8_t>> parts,
                       std::span<const float> table, int64_t channel_size) override;
    Tensor upload_i32(std::span<const int32_t> values, std::vector<int64_t> shape) override;
    void update(Tensor& t, std::span<const int32_t> values) override;
    void update(Tensor& t, std::span<const std::span<const float>> parts) override;
    std::vector<float> download(const Tensor& t) override;
    std::vector<int32_t> download_i32(const Tensor& t) override;
    void download(const Tensor& t, std::span<const std::span<float>> parts) override;
    void download_i32(const Tensor& t, std::span<const std::span<int32_t>> parts) override;
    Tensor copy(const Tensor& t) override;

    // bfloat16 at Bf16: the attention kernels read either, and a decoding step's keys and values take half
    // the bytes.
    ScalarType kv_dtype(AttentionPrecision precision) const override;
    Tensor alloc_kv(std::vector<int64_t> shape, ScalarType dtype) override;
    Tensor upload_kv(std::span<const float> values, std::vector<int64_t> shape, ScalarType dtype) override;
    Tensor upload_table(std::span<const float> values, std::vector<int64_t> shape, ScalarType dtype) override;
    Weight alloc_weight(Quantization type, int64_t n_out, int64_t n_in, int64_t group_size) override;
    void write_weight(const Weight& dst, const QuantizedWeights& w) override;
    MemoryStats memory_stats() const override;
    int64_t total_memory() const override;
    void reset_peak() override;
    std::unique_ptr<QueueMark> mark_queue() override;

    using Backend::linear;
    // Each spec onto the product's fused kernels (cuda-linear.cpp): packed weights through the GEMV for the
    // few rows kernels::quantized_gemv_takes gives it (a single row's RMSNorm inside it, SwiGLU and
    // RoPE-to-cache in its epilogue), otherwise on the tensor cores, WINT8/WINT4 weights of a few rows
    // dequantized in registers (kernels/quantized-mma.h) and the rest through cuBLASLt (GELU and the residual
    // add in the epilogue); float32 weights through cublasSgemm. What no kernel fuses runs as its parts
    // (linear_in_parts).
    Tensor linear(const Tensor& x, const Weight& w, const LinearSpec& spec) override;

    Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, float eps) override;
    Tensor rms_norm(const Tensor& x, const Tensor& w, float eps) override;
    void add(Tensor& x, const Tensor& y) override;
    void gelu_tanh(Tensor& x) override;
    void gelu_erf(Tensor& x) override;
    Tensor swiglu(const Tensor& gate_up) override;
    void rope(Tensor& x, const Tensor& cos, const Tensor& sin) override;
    Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v,
                     std::span<const AttentionSegment> segments, float scale,
                     AttentionPrecision precision) override;

    // On the tensor cores in one pass that turns and rounds q, k and v where every segment is bidirectional
    // and long enough to go in tiles, from float32 qkv into float32 or from bfloat16 qkv into bfloat16; as
    // the default does otherwise (bfloat16 qkv widened first).
    Tensor rope_attention(const Tensor& qkv, const Tensor& cos, const Tensor& sin,
                          std::span<const AttentionSegment> segments, float scale,
                          AttentionPrecision precision) override;

    // Bidirectional attention without grouped heads (the vision encoder): the scores of every image and head
    // as whole matrices through batched cuBLAS calls, images of one size together, many times faster than the
    // tile kernel, which stays for causal prefill.
    Tensor segment_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                             std::span<const AttentionSegment> segments, float scale);
    Tensor paged_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                           std::span<const PagedSequence> seqs, std::span<const int32_t> block_tables,
                           int64_t block_size, float scale, AttentionPrecision precision) override;
    Tensor rope_qkv_to_cache(const Tensor& qkv, const Tensor& positions, const Tensor& slots,
                             const RopeParams& rope, Tensor& k_cache, Tensor& v_cache) override;
    Tensor paged_decode_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                                  const Tensor& seq_lens, const Tensor& block_tables, int64_t block_size,
                                  float scale, AttentionPrecision precision) override;
    void argmax_rows_to(const Tensor& x, Tensor& out) override;
    void sample_rows_to(const Tensor& logits, std::span<const RowSampling> rows,
                        std::span<const int32_t> history, Tensor& out) override;
    std::unique_ptr<TokenReadback> read_back(const Tensor& values) override;
    Tensor gather_rows(const Tensor& src, std::span<const int64_t> rows) override;
    Tensor gather_rows(const Tensor& src, const Tensor& rows) override;
    Tensor gather_token_rows(const Tensor& table, const Tensor& ids, const Tensor& pending) override;
    bool can_record() const override;
    void begin_recording() override;
    std::unique_ptr<RecordedWork> end_recording() override;
    void add_weighted_rows(Tensor& x, const Tensor& src, std::span<const int64_t> rows,
                           std::span<const float> weights) override;
    void scatter_rows(Tensor& dst, std::span<const int64_t> rows, const Tensor& src) override;
    void scatter_rows(Tensor& dst, const Tensor& rows, const Tensor& src) override;

    // The mixture-of-experts operations (cuda-moe.cpp).
    ExpertRouting route_experts(const Tensor& logits, const Tensor& score_bias, int k,
                                float norm_min) override;
    Tensor expert_rows_linear(const Tensor& x, const Weight& w, const Tensor& experts, int64_t n_rows,
                              int64_t x_step, Activation act) override;
    void add_expert_outputs(Tensor& x, const Tensor& src, const Tensor& weights) override;
    // Three launches: the router's product with the routing, the chosen and shared experts' gate/up rows,
    // and their down rows summed into x; the parts one at a time where the shared experts' format is not the
    // pool's or for more than kernels::kRoutedExpertsMaxRows rows.
    void add_routed_experts(Tensor& x, const Tensor& input, const ExpertLayer& layer) override;
    ExpertRouting merge_expert_routings(const ExpertRouting& a, const ExpertRouting& b, const Tensor& use_b,
                                        int b_first) override;
    ExpertOrder order_by_expert(const Tensor& experts, int n_experts) override;
    void grouped_expert_linear(const Tensor& x, const Weight& w, const Tensor& offsets, int first,
                               int64_t n_rows, Activation act, Tensor& y) override;

    // The vision operations (cuda-vision.cpp).
    Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor* b, const Conv2dParams& p) override;
    Tensor pool2d(const Tensor& x, const Pool2dParams& p) override;
    Tensor pad2d(const Tensor& x, const std::array<int64_t, 4>& pads) override;
    Tensor interpolate2d(const Tensor& x, int64_t out_h, int64_t out_w, InterpolateMode mode) override;
    void apply_activation(Tensor& x, Activation act) override;
    Tensor multiply(const Tensor& x, const Tensor& y, Activation y_act) override;
    void softmax(Tensor& x) override;
    Tensor batched_products(const Tensor& a, const Tensor& b) override;
    Tensor permute(const Tensor& x, std::span<const int> axes) override;
    Tensor concat(std::span<const Tensor> parts, int axis) override;
    Tensor grid_sample(const Tensor& x, const Tensor& grid) override;
    Tensor multi_scale_deformable_attention(const Tensor& value, std::span<const FeatureLevel> levels,
                                            const Tensor& sampling_locations,
                                            const Tensor& attention_weights) override;
    TopK top_k(const Tensor& x, int64_t k) override;
    Tensor mask_boxes(const Tensor& x) override;
    Tensor sigmoid_bits(const Tensor& x, float threshold) override;
    Tensor box_sample_locations(const Tensor& boxes, const Tensor& offsets, int64_t n_points) override;
    void refine_boxes(Tensor& boxes, const Tensor& delta) override;
    Tensor pair_relations(const Tensor& boxes, float scale) override;
    Tensor sinusoid(const Tensor& x, std::span<const float> freqs) override;

private:
    // Whether every row of [0, n_rows) lies in the queries of some segment.
    static bool covers_rows(std::span<const AttentionSegment> segments, int64_t n_rows);

    // Bytes of a piece of one scratch allocation, rounded up so that the next piece starts 256-byte aligned.
    static int64_t scratch_piece_bytes(int64_t n_bytes);

    // The product of n rows of bfloat16 x with bfloat16 w, into rows of w.n_out; bias and output to be set.
    static kernels::LtLinearArgs lt_linear_args(const uint16_t* x, const Weight& w, int64_t n,
                                                kernels::LinearEpilogue epilogue, const char* op);

    cudaStream_t stream() const { return stream_.get(); }

    // CUDA's current device is per host thread: the backend may be driven from another thread than the one
    // that made it.
    void activate() const { CUDA_CHECK(cudaSetDevice(device_)); }

    // A tensor whose contents are unspecified (NaN with poison_allocations); the operation writes all of it.
    Tensor alloc_uninitialized(std::vector<int64_t> shape, const char* op,
                               ScalarType dtype = ScalarType::F32);
    Tensor alloc_zeroed(std::vector<int64_t> shape, const char* op, ScalarType dtype = ScalarType::F32);

    // Enqueues a copy of the parts, one after another, to dst: through page-locked memory, so that the host
    // goes on while the copy runs, or part by part through the driver's own staging when no page-locked
    // memory can be had. The parts may be reused as soon as this returns.
    template <typename T>
    void copy_parts_to_device(std::span<const std::span<const T>> parts, std::byte* dst);

    // Copies t's elements, after the work queued before, into the parts one after another (their sizes
    // checked by the caller) and waits for it: large copies through page-locked memory, a few threads reading
    // each chunk out as the next arrives; small ones, or all when no page-locked memory can be had, straight
    // through the driver.
    template <typename T>
    void copy_device_to_parts(const Tensor& t, std::span<const std::span<T>> parts, const char* op);

    // Enqueues a copy of host memory that the caller may reuse as soon as this returns, as
    // copy_parts_to_device does.
    void copy_to_device(void* dst, const void* src, size_t n_bytes);

    // Enqueues dst[i] = values[i]: a few words in a kernel's launch (transfer.h), more through
    // copy_to_device.
    void store_words(std::span<const int32_t> values, int32_t* dst);

    // Copies small host arrays (row lists, block tables) into the backend's staging memory, each at an
    // aligned offset, and returns their device addresses. The staging memory is reused by the next call:
    // the work enqueued in between reads it in stream order.
    std::vector<const void*> stage(std::initializer_list<std::span<const std::byte>> arrays);

    // How the keys of an attention call's row spans are split, with the partials buffer several splits need.
    struct Splits {
        kernels::AttentionSplits kernel_splits;
        Tensor partials;  // [kernels::attention_partials_floats(...)] or empty
    };

    // n_rows rows of q [.., n_head, head_dim] seeing at most max_visible keys of n_kv_head heads;
    // split_row_tensor_cores as kernels::attention_splits takes it.
    Splits attention_splits(int64_t n_rows, int64_t n_head, int64_t n_kv_head, int64_t head_dim,
                            int64_t max_visible, const char* op, bool split_row_tensor_cores);

    // Where the heads of a qkv of n_qkv columns go, but for q_out.
    kernels::RopeCacheArgs rope_cache_args(int64_t n_qkv, const Tensor& positions, const Tensor& slots,
                                           const RopeParams& rope, Tensor& k_cache, Tensor& v_cache,
                                           const char* op);

    void check_not_recording(const char* what) const;

    // A float32 copy of a bfloat16 tensor; t itself where it is float32.
    Tensor widened(const Tensor& t, const char* op);

    // y = epilogue(norm(x) · wᵀ + b) for bfloat16 w on the tensor cores, written in bfloat16 by
    // cuBLASLt: the norm (or the rounding of a float32 x) as one bfloat16 pass, the bias rounded to bfloat16
    // beside that output.  ->  [n, w.n_out] bfloat16
    Tensor bf16_linear(const Tensor& x, const Weight& w, const LinearSpec& spec,
                       kernels::LinearEpilogue epilogue);

    // y = epilogue(norm(x) · wᵀ + b) for FP8 w: the rows (normalised where asked) rounded to E4M3 with a
    // scale each in one pass, then cuBLASLt's FP8 product with both inputs' scales, the bias rounded to
    // bfloat16.  ->  [n, w.n_out], bfloat16 where spec asks; the residual where it has one
    Tensor fp8_linear(const Tensor& x, const Weight& w, const LinearSpec& spec);

    // The device address of a quantized weight's values, after checking that this backend holds them.
    static const void* device_weights(const Weight& w, const char* op);
    // The expert kernels' view of w, its experts' n_rows rows one after another.
    static kernels::ExpertWeights expert_weights(const Weight& w, int64_t n_rows, const char* op);

    // Scratch of at least n_bytes (whole floats), or an empty tensor for none.
    Tensor alloc_bytes(int64_t n_bytes, const char* op);

    // Whether an attention call's tiles of query rows go to the tensor cores, whose softmax needs a positive
    // scale; other scales go through the float32 kernels.
    bool use_flash(int64_t head_dim, float scale, AttentionPrecision precision) const;

    // y = output(epilogue(input(x) · wᵀ + b)), the arguments checked.  ->  y [n, w.n_out], [n, w.n_out / 2]
    // for a SwiGLU output, or q [n, n_head, head_dim] and the cache rows for RopeToCache
    void quantized_linear(const Tensor& x, const Weight& w, const Tensor* b, Tensor& y,
                          kernels::LinearEpilogue epilogue, const LinearInputSpec& input = {},
                          const LinearOutputSpec& output = {});

    // A product of n rows with w, but for where its input and output are.
    static kernels::QuantizedLinearArgs linear_args(const Weight& w, const Tensor* b, int64_t n,
                                                    kernels::LinearEpilogue epilogue,
                                                    const LinearInputSpec& input = {},
                                                    const LinearOutputSpec& output = {});

    // Enqueues the product args describes, giving it the scratch it needs.
    void run_linear(kernels::QuantizedLinearArgs& args);

    void check_head_dim(const Tensor& q, const char* op) const;

    int device_;
    bool poison_;
    std::string device_name_;
    int n_multiprocessors_ = 1;
    int compute_capability_major_ = 0;
    int compute_capability_minor_ = 0;
    std::unique_ptr<CUstream_st, StreamDestroy> stream_;
    std::unique_ptr<cublasContext, CublasDestroy> cublas_;
    static constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

    DevicePtr cublas_workspace_;
    DevicePtr split_counters_;    // [kernels::kAttentionSplitCounters] int32
    DevicePtr routing_counters_;  // [kernels::kRoutingCounters] int32
    std::unique_ptr<kernels::LtGemm> gemm_;
    DevicePtr staging_;
    size_t staging_bytes_ = 0;
    // Up to four threads fill page-locked memory: with one, the host's part of a vision batch's upload took
    // several times the copy to the device.
    kernels::HostStaging host_staging_{ThreadPool::at_most_hardware(4)};
    kernels::ReadbackPool readbacks_;
    bool recording_ = false;
    std::shared_ptr<MemoryCounter> memory_ = std::make_shared<MemoryCounter>();
    std::shared_ptr<DeviceMemoryLimit> limit_;  // null: the device's own memory
    std::shared_ptr<DevicePool> pool_;
    // Tensors made while recording: their blocks stay with the pool, for the recorded work that reuses them.
    std::shared_ptr<DevicePool> recording_pool_;
};

}  // namespace folio::cuda
