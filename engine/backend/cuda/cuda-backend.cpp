#include "engine/backend/cuda/make-cuda-backend.h"

#include <algorithm>
#include <unordered_map>

#include "engine/backend/cuda/cuda-backend.h"
#include "engine/common/error.h"
#include "kernels/elementwise.h"
#include "kernels/norm.h"
#include "kernels/rows.h"
#include "kernels/token-sampling.h"
#include "kernels/transfer.h"

namespace folio {

namespace cuda {

namespace {

struct GraphExecDestroy {
    void operator()(cudaGraphExec_t g) const { cudaGraphExecDestroy(g); }
};
struct GraphDestroy {
    void operator()(cudaGraph_t g) const { cudaGraphDestroy(g); }
};

// A CUDA graph of work recorded on a backend's stream, with the memory pool its tensors came from. It must go
// before the backend that recorded it.
class CudaRecordedWork final : public RecordedWork {
public:
    CudaRecordedWork(cudaGraphExec_t exec, cudaStream_t stream, int device, std::shared_ptr<DevicePool> pool)
        : exec_(exec), stream_(stream), device_(device), pool_(std::move(pool)) {}

    void replay() override {
        CUDA_CHECK(cudaSetDevice(device_));
        CUDA_CHECK(cudaGraphLaunch(exec_.get(), stream_));
    }

private:
    std::unique_ptr<CUgraphExec_st, GraphExecDestroy> exec_;
    cudaStream_t stream_;
    int device_;
    std::shared_ptr<DevicePool> pool_;
};

struct EventDestroy {
    void operator()(cudaEvent_t e) const { cudaEventDestroy(e); }
};

// An event recorded on the backend's stream.
class CudaQueueMark final : public QueueMark {
public:
    CudaQueueMark(cudaStream_t stream, int device) : device_(device) {
        cudaEvent_t event = nullptr;
        CUDA_CHECK(cudaEventCreate(&event));
        event_.reset(event);
        CUDA_CHECK(cudaEventRecord(event, stream));
    }

    double seconds_since(const QueueMark& earlier) override {
        const auto* e = dynamic_cast<const CudaQueueMark*>(&earlier);
        if (e == nullptr || e->device_ != device_) {
            fail("cuda: a queue mark compared with one of another backend");
        }
        CUDA_CHECK(cudaSetDevice(device_));
        CUDA_CHECK(cudaEventSynchronize(event_.get()));
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, e->event_.get(), event_.get()));
        return static_cast<double>(ms) / 1000.0;
    }

private:
    std::unique_ptr<CUevent_st, EventDestroy> event_;
    int device_;
};

}  // namespace

CudaBackend::CudaBackend(const CudaBackendOptions& options)
    : device_(options.device), poison_(options.poison_allocations) {
    const int n_devices = kernels::device_count();
    if (n_devices == 0) {
        fail("cuda: no CUDA device");
    }
    if (device_ < 0 || device_ >= n_devices) {
        fail("cuda: no device ", device_, " (", n_devices, " present)");
    }
    CUDA_CHECK(cudaSetDevice(device_));
    if (options.memory_limit_bytes < 0) {
        fail("cuda: a memory limit must not be negative, got ", options.memory_limit_bytes);
    }
    if (options.memory_limit_bytes > 0) {
        limit_ = std::make_shared<DeviceMemoryLimit>(options.memory_limit_bytes);
    }
    pool_ = std::make_shared<DevicePool>(device_, true, limit_);
    recording_pool_ = std::make_shared<DevicePool>(device_, false, limit_);
    cudaDeviceProp props{};
    CUDA_CHECK(cudaGetDeviceProperties(&props, device_));
    device_name_ = props.name;
    n_multiprocessors_ = props.multiProcessorCount;
    compute_capability_major_ = props.major;
    compute_capability_minor_ = props.minor;
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreate(&stream));
    stream_.reset(stream);
    cublasHandle_t handle = nullptr;
    CUBLAS_CHECK(cublasCreate(&handle));
    cublas_.reset(handle);
    CUBLAS_CHECK(cublasSetStream(handle, stream));
    // cuBLAS's workspace is ours, so that recorded GEMMs allocate nothing.
    cublas_workspace_.reset(try_cuda_malloc(kCublasWorkspaceBytes));
    if (!cublas_workspace_) {
        fail_out_of_memory(kCublasWorkspaceBytes, device_);
    }
    CUBLAS_CHECK(cublasSetWorkspace(handle, cublas_workspace_.get(), kCublasWorkspaceBytes));
    // One stream, so cuBLAS and cuBLASLt take turns with the workspace.
    gemm_ = std::make_unique<kernels::LtGemm>(cublas_workspace_.get(), kCublasWorkspaceBytes);
    // The attention kernels leave their split counters zero, so that recorded calls find them so.
    const size_t counter_bytes = static_cast<size_t>(kernels::kAttentionSplitCounters) * sizeof(int32_t);
    split_counters_.reset(try_cuda_malloc(counter_bytes));
    if (!split_counters_) {
        fail_out_of_memory(counter_bytes, device_);
    }
    CUDA_CHECK(cudaMemset(split_counters_.get(), 0, counter_bytes));
    // So do the routing kernels theirs.
    const size_t routing_bytes = static_cast<size_t>(kernels::kRoutingCounters) * sizeof(int32_t);
    routing_counters_.reset(try_cuda_malloc(routing_bytes));
    if (!routing_counters_) {
        fail_out_of_memory(routing_bytes, device_);
    }
    CUDA_CHECK(cudaMemset(routing_counters_.get(), 0, routing_bytes));
}

CudaBackend::~CudaBackend() {
    if (recording_) {
        cudaGraph_t graph = nullptr;
        cudaStreamEndCapture(stream_.get(), &graph);
        cudaGraphDestroy(graph);
    }
    cudaStreamSynchronize(stream_.get());
}

std::string CudaBackend::name() const {
    return "cuda (" + device_name_ + ")";
}

std::string CudaBackend::fp8_refusal() const {
    if (compute_capability_major_ * 10 + compute_capability_minor_ >= 89) {
        return {};
    }
    return "FP8 products need a GPU of compute capability 8.9 or later (RTX 40 series, Ada, Hopper and "
           "after); cuda:" +
           std::to_string(device_) + " (" + device_name_ + ") is " +
           std::to_string(compute_capability_major_) + "." + std::to_string(compute_capability_minor_);
}

Tensor CudaBackend::alloc(std::vector<int64_t> shape) {
    return alloc_zeroed(std::move(shape), "alloc");
}

Tensor CudaBackend::upload(std::span<const float> values, std::vector<int64_t> shape) {
    Tensor t = alloc_uninitialized(std::move(shape), "upload");
    check_upload(t, static_cast<int64_t>(values.size()));
    copy_to_device(t.f32(), values.data(), values.size_bytes());
    return t;
}

Tensor CudaBackend::upload(std::span<const std::span<const float>> parts, std::vector<int64_t> shape) {
    Tensor t = alloc_uninitialized(std::move(shape), "upload");
    check_upload(t, total_size(parts));
    copy_parts_to_device(parts, reinterpret_cast<std::byte*>(t.f32()));
    return t;
}

Tensor CudaBackend::upload_levels(std::span<const std::span<const uint8_t>> parts,
                                  std::span<const float> table, int64_t channel_size,
                                  std::vector<int64_t> shape) {
    Tensor t = alloc_uninitialized(std::move(shape), "upload_levels");
    update_levels(t, parts, table, channel_size);
    return t;
}

void CudaBackend::update_levels(Tensor& t, std::span<const std::span<const uint8_t>> parts,
                                std::span<const float> table, int64_t channel_size) {
    const char* op = "update_levels";
    check_update_f32(t, t.n_elements());
    check_upload_levels(t, total_size(parts), static_cast<int64_t>(table.size()), channel_size);
    if (t.n_elements() == 0) {
        return;
    }
    activate();
    const Tensor table_d = upload(table, {static_cast<int64_t>(table.size())});  // [n_channels * 256]
    const Tensor levels = alloc_bytes(t.n_elements(), op);                       // [n] bytes
    copy_parts_to_device(parts, reinterpret_cast<std::byte*>(levels.f32()));
    kernels::expand_levels(reinterpret_cast<const uint8_t*>(levels.f32()), table_d.f32(), device_f32(t, op),
                           t.n_elements(), static_cast<int>(t.row_size()), static_cast<int>(channel_size),
                           stream());
}

Tensor CudaBackend::upload_i32(std::span<const int32_t> values, std::vector<int64_t> shape) {
    Tensor t = alloc_uninitialized(std::move(shape), "upload_i32");
    t.dtype = ScalarType::I32;
    check_update(t, values);
    store_words(values, t.i32());
    return t;
}

void CudaBackend::update(Tensor& t, std::span<const int32_t> values) {
    check_update(t, values);
    activate();
    store_words(values, device_i32(t, "update"));
}

void CudaBackend::update(Tensor& t, std::span<const std::span<const float>> parts) {
    check_update_f32(t, total_size(parts));
    activate();
    copy_parts_to_device(parts, reinterpret_cast<std::byte*>(device_f32(t, "update")));
}

std::vector<int32_t> CudaBackend::download_i32(const Tensor& t) {
    check_i32(t, t.shape, "download_i32", "t");
    std::vector<int32_t> values(static_cast<size_t>(t.n_elements()));
    const std::span<int32_t> all[] = {values};
    download_i32(t, all);
    return values;
}

void CudaBackend::download_i32(const Tensor& t, std::span<const std::span<int32_t>> parts) {
    check_not_recording("download_i32");
    check_download_parts(t, ScalarType::I32, total_size(parts));
    copy_device_to_parts(t, parts, "download_i32");
}

void CudaBackend::download(const Tensor& t, std::span<const std::span<float>> parts) {
    check_not_recording("download");
    check_download_parts(t, ScalarType::F32, total_size(parts));
    copy_device_to_parts(t, parts, "download");
}

std::vector<float> CudaBackend::download(const Tensor& t) {
    check_not_recording("download");
    if (t.dtype == ScalarType::I32) {
        fail("download: tensor ", shape_string(t.shape), " of int32 elements; float32 or bfloat16 only");
    }
    if (t.dtype == ScalarType::Q8) {
        // The levels and scales, read back as they lie and turned into values here.
        std::vector<char> bytes(static_cast<size_t>(t.n_bytes()));
        activate();
        CUDA_CHECK(cudaMemcpyAsync(bytes.data(), device_data(t, "download"), bytes.size(),
                                   cudaMemcpyDeviceToHost, stream()));
        CUDA_CHECK(cudaStreamSynchronize(stream()));
        const int64_t row = t.shape.back();
        return dequantize_q8_rows(
            reinterpret_cast<const int8_t*>(bytes.data()),
            reinterpret_cast<const float*>(bytes.data() + q8_scales_offset(t.n_elements())),
            t.n_elements() / row, row);
    }
    std::vector<float> values(static_cast<size_t>(t.n_elements()));
    if (t.dtype == ScalarType::F32) {
        const std::span<float> all[] = {values};
        download(t, all);
        return values;
    }
    std::vector<uint16_t> bf16(values.size());
    if (!values.empty()) {
        activate();
        CUDA_CHECK(cudaMemcpyAsync(bf16.data(), device_data(t, "download"), static_cast<size_t>(t.n_bytes()),
                                   cudaMemcpyDeviceToHost, stream()));
    }
    CUDA_CHECK(cudaStreamSynchronize(stream()));
    std::transform(bf16.begin(), bf16.end(), values.begin(), from_bf16);
    return values;
}

Tensor CudaBackend::copy(const Tensor& t) {
    Tensor out = alloc_uninitialized(t.shape, "copy", t.dtype);
    if (t.n_elements() > 0) {
        CUDA_CHECK(cudaMemcpyAsync(out.buffer->data(), device_data(t, "copy"), out.buffer->n_bytes(),
                                   cudaMemcpyDeviceToDevice, stream()));
    }
    return out;
}

ScalarType CudaBackend::kv_dtype(AttentionPrecision precision) const {
    return precision == AttentionPrecision::Bf16 ? ScalarType::BF16 : ScalarType::F32;
}

Tensor CudaBackend::alloc_kv(std::vector<int64_t> shape, ScalarType dtype) {
    check_kv_dtype(name(), dtype, ScalarType::BF16);
    return alloc_zeroed(std::move(shape), "alloc_kv", dtype);
}

Tensor CudaBackend::upload_kv(std::span<const float> values, std::vector<int64_t> shape, ScalarType dtype) {
    check_kv_dtype(name(), dtype, ScalarType::BF16);
    if (dtype != ScalarType::BF16) {
        return Backend::upload_kv(values, std::move(shape), dtype);
    }
    Tensor t = alloc_uninitialized(std::move(shape), "upload_kv", dtype);
    check_upload(t, static_cast<int64_t>(values.size()));
    std::vector<uint16_t> bits(values.size());
    std::transform(values.begin(), values.end(), bits.begin(), to_bf16);
    copy_to_device(t.bf16(), bits.data(), bits.size() * sizeof(uint16_t));
    return t;
}

Tensor CudaBackend::upload_table(std::span<const float> values, std::vector<int64_t> shape,
                                 ScalarType dtype) {
    if (dtype != ScalarType::F32 && dtype != ScalarType::BF16) {
        fail("upload_table: a table of ", dtype_name(dtype), " elements (float32 or bfloat16)");
    }
    Tensor t;
    t.shape = std::move(shape);
    t.dtype = dtype;
    check_shape(t.shape, "upload_table");
    check_upload(t, static_cast<int64_t>(values.size()));
    activate();
    auto buffer = std::make_shared<MappedHostBuffer>(static_cast<size_t>(t.n_bytes()));
    if (dtype == ScalarType::BF16) {
        std::transform(values.begin(), values.end(), static_cast<uint16_t*>(buffer->host()), to_bf16);
    } else {
        std::copy(values.begin(), values.end(), static_cast<float*>(buffer->host()));
    }
    t.buffer = std::move(buffer);
    return t;
}

Weight CudaBackend::alloc_weight(Quantization type, int64_t n_out, int64_t n_in, int64_t group_size) {
    const QuantizedLayout layout = quantized_layout(type, n_out, n_in, group_size);
    activate();
    Weight t;
    t.type = type;
    t.n_out = n_out;
    t.n_in = n_in;
    t.group_size = layout.group_size;
    t.data = std::make_shared<DeviceBuffer>(static_cast<size_t>(layout.n_packed_bytes), pool_, memory_);
    // [n_out * n_in / group_size], none for BF16
    t.scales = alloc_uninitialized({layout.n_scales}, "upload");
    return t;
}

void CudaBackend::write_weight(const Weight& dst, const QuantizedWeights& w) {
    check_write_weight(dst, w);
    activate();
    copy_to_device(dst.data->data(), w.q.data(), w.q.size());
    copy_to_device(dst.scales.f32(), w.scales.data(), w.scales.size() * sizeof(float));
}

MemoryStats CudaBackend::memory_stats() const {
    return {memory_->in_use.load(), memory_->peak.load()};
}

int64_t CudaBackend::total_memory() const {
    activate();
    size_t free = 0, total = 0;
    CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return limit_ ? std::min(limit_->limit, static_cast<int64_t>(total)) : static_cast<int64_t>(total);
}

void CudaBackend::reset_peak() {
    memory_->peak.store(memory_->in_use.load());
}

Tensor CudaBackend::layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, float eps) {
    check_layer_norm(x, w, b);
    const int64_t d = x.row_size();
    Tensor y = alloc_uninitialized(x.shape, "layer_norm");  // as x
    kernels::layer_norm_f32(device_f32(x, "layer_norm"), device_f32(w, "layer_norm"),
                            device_f32(b, "layer_norm"), y.f32(), x.rows(), d, eps, stream());
    return y;
}

Tensor CudaBackend::rms_norm(const Tensor& x, const Tensor& w, float eps) {
    check_rms_norm(x, w);
    const int64_t d = x.row_size();
    Tensor y = alloc_uninitialized(x.shape, "rms_norm");  // as x
    kernels::rms_norm_f32(device_f32(x, "rms_norm"), device_f32(w, "rms_norm"), y.f32(), x.rows(), d, eps,
                          stream());
    return y;
}

void CudaBackend::add(Tensor& x, const Tensor& y) {
    check_same_shape(x, y, "add");
    activate();
    kernels::add_f32(device_f32(x, "add"), device_f32(y, "add"), x.n_elements(), stream());
}

void CudaBackend::gelu_tanh(Tensor& x) {
    activate();
    kernels::gelu_tanh_f32(device_f32(x, "gelu_tanh"), x.n_elements(), stream());
}

void CudaBackend::gelu_erf(Tensor& x) {
    activate();
    kernels::gelu_erf_f32(device_f32(x, "gelu_erf"), x.n_elements(), stream());
}

Tensor CudaBackend::swiglu(const Tensor& gate_up) {
    check_swiglu(gate_up);
    const int64_t n = gate_up.shape[0], d = gate_up.shape[1] / 2;
    Tensor y = alloc_uninitialized({n, d}, "swiglu");  // [n, d]
    kernels::swiglu_f32(device_f32(gate_up, "swiglu"), y.f32(), n, d, stream());
    return y;
}

void CudaBackend::rope(Tensor& x, const Tensor& cos, const Tensor& sin) {
    check_rope(x, cos, sin);
    activate();
    kernels::rope_f32(device_f32(x, "rope"), device_f32(cos, "rope"), device_f32(sin, "rope"), x.shape[0],
                      x.shape[1], x.shape[2], stream());
}

Tensor CudaBackend::rope_qkv_to_cache(const Tensor& qkv, const Tensor& positions, const Tensor& slots,
                                      const RopeParams& rope, Tensor& k_cache, Tensor& v_cache) {
    check_rope_qkv_to_cache(qkv.shape, positions, slots, rope, k_cache, v_cache);
    const char* op = "rope_qkv_to_cache";
    kernels::RopeCacheArgs args = rope_cache_args(qkv.shape[1], positions, slots, rope, k_cache, v_cache, op);
    Tensor q = alloc_uninitialized({qkv.shape[0], args.n_head, args.head_dim}, op);  // [n, n_head, head_dim]
    args.q_out = q.f32();
    kernels::rope_qkv_to_cache_f32(device_f32(qkv, op), args, qkv.shape[0], stream());
    return q;
}

void CudaBackend::argmax_rows_to(const Tensor& x, Tensor& out) {
    check_argmax_rows(x);
    check_i32(out, {x.rows()}, "argmax_rows", "out");
    if (x.rows() == 0) {
        return;
    }
    const Tensor scratch = alloc_uninitialized({kernels::argmax_scratch_floats(x.rows(), x.row_size())},
                                               "argmax_rows");  // chunk bests
    kernels::argmax_rows_f32(device_f32(x, "argmax_rows"), device_i32(out, "argmax_rows"), scratch.f32(),
                             x.rows(), x.row_size(), stream());
}

void CudaBackend::sample_rows_to(const Tensor& logits, std::span<const RowSampling> rows,
                                 std::span<const int32_t> history, Tensor& out) {
    check_sample_rows(logits, rows, history);
    check_i32(out, {logits.rows()}, "sample_rows", "out");
    if (rows.empty()) {
        return;
    }
    std::vector<kernels::SampleRow> params;
    for (const RowSampling& r : rows) {
        params.push_back({r.temperature, r.top_k, r.top_p, r.repetition_penalty, r.uniform, r.history_begin,
                          r.history_count});
    }
    const Tensor scratch = alloc_uninitialized(logits.shape, "sample_rows");  // [n, vocab]
    const auto staged = stage({std::as_bytes(std::span(params)), std::as_bytes(history)});
    kernels::sample_rows_f32(device_f32(logits, "sample_rows"),
                             static_cast<const kernels::SampleRow*>(staged[0]),
                             static_cast<const int32_t*>(staged[1]), scratch.f32(),
                             device_i32(out, "sample_rows"), logits.rows(), logits.row_size(), stream());
}

std::unique_ptr<TokenReadback> CudaBackend::read_back(const Tensor& values) {
    check_not_recording("read_back");
    check_i32(values, {values.n_elements()}, "read_back", "values");
    activate();
    return readbacks_.read_back(device_i32(values, "read_back"), values.n_elements(), stream());
}

Tensor CudaBackend::gather_rows(const Tensor& src, std::span<const int64_t> rows) {
    check_gather_rows(src, rows);
    std::vector<int64_t> shape{static_cast<int64_t>(rows.size())};  // src's shape with rows.size() rows
    shape.insert(shape.end(), src.shape.begin() + 1, src.shape.end());
    Tensor out = alloc_uninitialized(shape, "gather_rows");  // [rows.size(), ...]
    const auto staged = stage({std::as_bytes(rows)});
    const auto* indices = static_cast<const int64_t*>(staged[0]);
    const auto n = static_cast<int64_t>(rows.size());
    if (src.dtype == ScalarType::BF16) {
        kernels::gather_rows_bf16(static_cast<const uint16_t*>(device_data(src, "gather_rows")), indices,
                                  out.f32(), n, src.row_size(), stream());
    } else {
        kernels::gather_rows_f32(device_f32(src, "gather_rows"), indices, out.f32(), n, src.row_size(),
                                 stream());
    }
    return out;
}

Tensor CudaBackend::gather_rows(const Tensor& src, const Tensor& rows) {
    check_gather_rows(src, rows);
    std::vector<int64_t> shape{rows.n_elements()};  // src's shape with rows.n_elements() rows
    shape.insert(shape.end(), src.shape.begin() + 1, src.shape.end());
    Tensor out = alloc_uninitialized(shape, "gather_rows");  // [n_rows, ...]
    if (src.dtype == ScalarType::BF16) {
        kernels::gather_rows_i32_bf16(static_cast<const uint16_t*>(device_data(src, "gather_rows")),
                                      device_i32(rows, "gather_rows"), out.f32(), rows.n_elements(),
                                      src.row_size(), src.rows(), nullptr, 0, stream());
    } else {
        kernels::gather_rows_i32_f32(device_f32(src, "gather_rows"), device_i32(rows, "gather_rows"),
                                     out.f32(), rows.n_elements(), src.row_size(), src.rows(), nullptr, 0,
                                     stream());
    }
    return out;
}

Tensor CudaBackend::gather_token_rows(const Tensor& table, const Tensor& ids, const Tensor& pending) {
    const char* op = "gather_token_rows";
    check_gather_token_rows(table, ids, pending);
    Tensor out = alloc_uninitialized({ids.n_elements(), table.row_size()}, op);  // [n, d]
    if (table.dtype == ScalarType::BF16) {
        kernels::gather_rows_i32_bf16(static_cast<const uint16_t*>(device_data(table, op)),
                                      device_i32(ids, op), out.f32(), ids.n_elements(), table.row_size(),
                                      table.rows(), device_i32(pending, op), pending.n_elements(), stream());
    } else {
        kernels::gather_rows_i32_f32(device_f32(table, op), device_i32(ids, op), out.f32(), ids.n_elements(),
                                     table.row_size(), table.rows(), device_i32(pending, op),
                                     pending.n_elements(), stream());
    }
    return out;
}

std::unique_ptr<QueueMark> CudaBackend::mark_queue() {
    check_not_recording("mark_queue");
    activate();
    return std::make_unique<CudaQueueMark>(stream(), device_);
}

bool CudaBackend::can_record() const {
    return true;
}

void CudaBackend::begin_recording() {
    check_not_recording("begin_recording");
    activate();
    CUDA_CHECK(cudaStreamSynchronize(stream()));
    // Relaxed: the recording pool may cudaMalloc while the stream records.
    CUDA_CHECK(cudaStreamBeginCapture(stream(), cudaStreamCaptureModeRelaxed));
    recording_ = true;
}

std::unique_ptr<RecordedWork> CudaBackend::end_recording() {
    if (!recording_) {
        fail("end_recording: the cuda backend is not recording");
    }
    recording_ = false;
    activate();
    cudaGraph_t captured = nullptr;
    CUDA_CHECK(cudaStreamEndCapture(stream(), &captured));
    const std::unique_ptr<CUgraph_st, GraphDestroy> graph(captured);
    cudaGraphExec_t exec = nullptr;
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph.get(), 0));
    return std::make_unique<CudaRecordedWork>(exec, stream(), device_, recording_pool_);
}

void CudaBackend::add_weighted_rows(Tensor& x, const Tensor& src, std::span<const int64_t> rows,
                                    std::span<const float> weights) {
    const int64_t n_taps = check_add_weighted_rows(x, src, rows, weights);
    const char* op = "add_weighted_rows";
    activate();
    const auto staged = stage({std::as_bytes(rows), std::as_bytes(weights)});
    kernels::add_weighted_rows_f32(
        device_f32(x, op), device_f32(src, op), static_cast<const int64_t*>(staged[0]),
        static_cast<const float*>(staged[1]), x.rows(), n_taps, x.row_size(), stream());
}

void CudaBackend::scatter_rows(Tensor& dst, std::span<const int64_t> rows, const Tensor& src) {
    check_scatter_rows(dst, rows, src);
    const int64_t d = dst.row_size();
    activate();
    // A row written more than once keeps the last source row, as in the CPU backend's sequential copies.
    std::unordered_map<int64_t, int64_t> last_source;
    for (size_t i = 0; i < rows.size(); ++i) {
        last_source[rows[i]] = static_cast<int64_t>(i);
    }
    if (last_source.size() == rows.size()) {
        const auto staged = stage({std::as_bytes(rows)});
        kernels::scatter_rows_f32(device_f32(dst, "scatter_rows"), static_cast<const int64_t*>(staged[0]),
                                  device_f32(src, "scatter_rows"), nullptr, static_cast<int64_t>(rows.size()),
                                  d, stream());
        return;
    }
    std::vector<int64_t> dst_rows, src_rows;
    for (const auto& [row, source] : last_source) {
        dst_rows.push_back(row);
        src_rows.push_back(source);
    }
    const auto staged = stage({std::as_bytes(std::span(dst_rows)), std::as_bytes(std::span(src_rows))});
    kernels::scatter_rows_f32(device_f32(dst, "scatter_rows"), static_cast<const int64_t*>(staged[0]),
                              device_f32(src, "scatter_rows"), static_cast<const int64_t*>(staged[1]),
                              static_cast<int64_t>(dst_rows.size()), d, stream());
}

void CudaBackend::scatter_rows(Tensor& dst, const Tensor& rows, const Tensor& src) {
    check_scatter_rows(dst, rows, src);
    activate();
    kernels::scatter_rows_i32_f32(device_f32(dst, "scatter_rows"), device_i32(rows, "scatter_rows"),
                                  device_f32(src, "scatter_rows"), rows.n_elements(), dst.row_size(),
                                  dst.rows(), stream());
}

Tensor CudaBackend::alloc_uninitialized(std::vector<int64_t> shape, const char* op, ScalarType dtype) {
    Tensor t;
    t.shape = std::move(shape);
    t.dtype = dtype;
    check_shape(t.shape, op);
    activate();
    t.buffer = std::make_shared<DeviceBuffer>(static_cast<size_t>(t.n_bytes()),
                                              recording_ ? recording_pool_ : pool_, memory_);
    if (poison_ && t.n_elements() > 0) {
        CUDA_CHECK(cudaMemsetAsync(t.buffer->data(), 0xff, t.buffer->n_bytes(), stream()));
    }
    return t;
}

Tensor CudaBackend::alloc_zeroed(std::vector<int64_t> shape, const char* op, ScalarType dtype) {
    Tensor t = alloc_uninitialized(std::move(shape), op, dtype);
    if (t.n_elements() > 0) {
        CUDA_CHECK(cudaMemsetAsync(t.buffer->data(), 0, t.buffer->n_bytes(), stream()));
    }
    return t;
}

template <typename T>
void CudaBackend::copy_parts_to_device(std::span<const std::span<const T>> parts, std::byte* dst) {
    check_not_recording("upload");
    std::vector<std::span<const std::byte>> bytes;
    bytes.reserve(parts.size());
    for (const std::span<const T> part : parts) {
        bytes.push_back(std::as_bytes(part));
    }
    if (!host_staging_.copy(bytes, dst, stream())) {
        for (const std::span<const std::byte> part : bytes) {
            if (!part.empty()) {
                CUDA_CHECK(cudaMemcpyAsync(dst, part.data(), part.size(), cudaMemcpyHostToDevice, stream()));
            }
            dst += part.size();
        }
    }
}

template <typename T>
void CudaBackend::copy_device_to_parts(const Tensor& t, std::span<const std::span<T>> parts, const char* op) {
    // Below this a copy through the driver's own staging costs less than handing chunks to threads.
    constexpr size_t kStagedBytes = size_t{1} << 20;
    std::vector<std::span<std::byte>> bytes;
    bytes.reserve(parts.size());
    size_t n_bytes = 0;
    for (const std::span<T> part : parts) {
        bytes.push_back(std::as_writable_bytes(part));
        n_bytes += bytes.back().size();
    }
    activate();
    if (n_bytes == 0) {
        CUDA_CHECK(cudaStreamSynchronize(stream()));
        return;
    }
    const auto* from = static_cast<const std::byte*>(device_data(t, op));
    if (n_bytes < kStagedBytes || !host_staging_.copy_back(from, bytes, stream())) {
        for (const std::span<std::byte> part : bytes) {
            if (!part.empty()) {
                CUDA_CHECK(cudaMemcpyAsync(part.data(), from, part.size(), cudaMemcpyDeviceToHost, stream()));
            }
            from += part.size();
        }
        CUDA_CHECK(cudaStreamSynchronize(stream()));
    }
}

void CudaBackend::copy_to_device(void* dst, const void* src, size_t n_bytes) {
    const std::span<const std::byte> part(static_cast<const std::byte*>(src), n_bytes);
    copy_parts_to_device(std::span(&part, 1), static_cast<std::byte*>(dst));
}

void CudaBackend::store_words(std::span<const int32_t> values, int32_t* dst) {
    if (static_cast<int64_t>(values.size()) <= kernels::kStoreWordsMax) {
        check_not_recording("upload");
        kernels::store_words(values.data(), static_cast<int64_t>(values.size()), dst, stream());
    } else {
        copy_to_device(dst, values.data(), values.size_bytes());
    }
}

std::vector<const void*> CudaBackend::stage(std::initializer_list<std::span<const std::byte>> arrays) {
    check_not_recording("staging host arrays");
    constexpr size_t kAlign = 256;
    size_t total = 0;
    for (const auto& a : arrays) {
        total += (a.size() + kAlign - 1) / kAlign * kAlign;
    }
    activate();
    if (total > staging_bytes_) {
        CUDA_CHECK(cudaStreamSynchronize(stream()));  // work still reading the old staging memory
        staging_.reset();
        staging_bytes_ = std::max(total, 2 * staging_bytes_);
        void* p = try_cuda_malloc(staging_bytes_);
        if (p == nullptr) {
            pool_->release_cached();
            p = try_cuda_malloc(staging_bytes_);
        }
        if (p == nullptr) {
            fail_out_of_memory(staging_bytes_, device_);
        }
        staging_.reset(p);
    }
    std::vector<const void*> addresses;
    size_t offset = 0;
    for (const auto& a : arrays) {
        auto* dst = static_cast<std::byte*>(staging_.get()) + offset;
        copy_to_device(dst, a.data(), a.size());
        addresses.push_back(a.empty() ? nullptr : dst);
        offset += (a.size() + kAlign - 1) / kAlign * kAlign;
    }
    return addresses;
}

void CudaBackend::check_not_recording(const char* what) const {
    if (recording_) {
        fail("cuda: ", what, " while recording work; inputs of recorded work are written before replay");
    }
}

Tensor CudaBackend::alloc_bytes(int64_t n_bytes, const char* op) {
    return n_bytes > 0 ? alloc_uninitialized({(n_bytes + 3) / 4}, op) : Tensor{};
}

}  // namespace cuda

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options) {
    return std::make_unique<cuda::CudaBackend>(options);
}

std::unique_ptr<Backend> make_cuda_backend(int device) {
    return make_cuda_backend(CudaBackendOptions{device, false});
}

void* cuda_backend_stream(Backend& backend) {
    auto* cuda = dynamic_cast<cuda::CudaBackend*>(&backend);
    if (cuda == nullptr) {
        fail("the ", backend.name(), " backend has no CUDA stream");
    }
    return cuda->work_stream();
}

}  // namespace folio
