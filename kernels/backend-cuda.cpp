// The CUDA backend: every operation checks its arguments on the host as the CPU backend does, then enqueues
// kernels on the backend's stream; download() is the only call that waits for the device.
#include "backend-cuda.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "attention.h"
#include "backend-checks.h"
#include "cuda-check.h"
#include "decode-attention.h"
#include "elementwise.h"
#include "error.h"
#include "flash-attention.h"
#include "gemm-lt.h"
#include "host-readback.h"
#include "host-staging.h"
#include "norm.h"
#include "quantized-linear.h"
#include "rotary.h"
#include "rows.h"
#include "token-sampling.h"
#include "transfer.h"

namespace folio {

namespace {

// cudaMalloc; null when the device is out of memory.
void* try_cuda_malloc(size_t n_bytes) {
    void* p = nullptr;
    const cudaError_t status = cudaMalloc(&p, n_bytes);
    if (status == cudaErrorMemoryAllocation) {
        cudaGetLastError();  // not sticky: clear it so that later launches do not report it
        return nullptr;
    }
    CUDA_CHECK(status);
    return p;
}

[[noreturn]] void fail_out_of_memory(size_t n_bytes, int device) {
    size_t free = 0, total = 0;
    cudaMemGetInfo(&free, &total);
    fail("cuda: out of memory allocating ", n_bytes, " bytes on device ", device, " (", free,
         " bytes free of ", total, ")");
}

// The device memory of one backend: cudaMalloc'd blocks, kept for reuse when their tensors go, since a
// cudaMalloc and cudaFree pair costs tens of microseconds and cudaFree waits for the device. All work of the
// backend runs on its one stream, so a block handed out again is written only after the work that read it.
// Shared with the buffers, which may outlive the backend.
class DevicePool {
public:
    // A pool that is not releasable keeps its cached blocks until it goes: recorded work reuses them.
    DevicePool(int device, bool releasable) : device_(device), releasable_(releasable) {}
    ~DevicePool() { free_cached(); }
    DevicePool(const DevicePool&) = delete;
    DevicePool& operator=(const DevicePool&) = delete;

    struct Block {
        void* ptr = nullptr;
        size_t size = 0;
    };

    // A block of at least n_bytes (> 0): the smallest cached block that holds them without wasting more than
    // they take, else a new one. When the device is full the cached blocks are freed and cudaMalloc tried
    // again; after that, throws folio::Error naming the request and the device's free memory.
    Block take(size_t n_bytes) {
        const size_t size = block_size(n_bytes);
        {
            const std::lock_guard lock(mutex_);
            const auto it = cached_.lower_bound(size);
            if (it != cached_.end() && it->first <= 2 * size) {
                const Block block{it->second, it->first};
                cached_.erase(it);
                return block;
            }
        }
        void* p = try_cuda_malloc(size);
        if (p == nullptr && releasable_) {
            release_cached();
            p = try_cuda_malloc(size);
        }
        if (p == nullptr) {
            fail_out_of_memory(n_bytes, device_);
        }
        return {p, size};
    }

    // Takes back a block that take() returned.
    void give(const Block& block) {
        const std::lock_guard lock(mutex_);
        cached_.emplace(block.size, block.ptr);
    }

    // Frees the cached blocks of a releasable pool; cudaFree waits for the work that may still use them.
    void release_cached() {
        if (releasable_) {
            free_cached();
        }
    }

private:
    // Requests round up to 512 bytes below 1 MiB and to whole MiB above, so that blocks are reused across
    // tensors of nearly the same size.
    static size_t block_size(size_t n_bytes) {
        constexpr size_t kSmall = 512, kLarge = size_t{1} << 20;
        const size_t unit = n_bytes < kLarge ? kSmall : kLarge;
        return (n_bytes + unit - 1) / unit * unit;
    }

    void free_cached() {
        const std::lock_guard lock(mutex_);
        for (const auto& [size, p] : cached_) {
            cudaFree(p);
        }
        cached_.clear();
    }

    int device_;
    bool releasable_;
    std::mutex mutex_;
    std::multimap<size_t, void*> cached_;  // free blocks by size
};

struct DeviceBuffer final : Buffer {
    DeviceBuffer(size_t n_bytes, std::shared_ptr<DevicePool> pool, std::shared_ptr<MemoryCounter> counter)
        : block_(n_bytes > 0 ? pool->take(n_bytes) : DevicePool::Block{}),
          n_bytes_(n_bytes),
          pool_(std::move(pool)),
          counter_(std::move(counter)) {
        counter_->add(static_cast<int64_t>(n_bytes_));
    }
    ~DeviceBuffer() override {
        if (block_.ptr != nullptr) {
            pool_->give(block_);
        }
        counter_->add(-static_cast<int64_t>(n_bytes_));
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    void* data() override { return block_.ptr; }
    size_t n_bytes() const override { return n_bytes_; }

private:
    DevicePool::Block block_;
    size_t n_bytes_;
    std::shared_ptr<DevicePool> pool_;
    std::shared_ptr<MemoryCounter> counter_;
};

struct CudaFree {
    void operator()(void* p) const { cudaFree(p); }
};
using DevicePtr = std::unique_ptr<void, CudaFree>;

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

struct StreamDestroy {
    void operator()(cudaStream_t s) const { cudaStreamDestroy(s); }
};
struct CublasDestroy {
    void operator()(cublasHandle_t h) const { cublasDestroy(h); }
};

// The query rows of an attention call, as the kernels take them: the rows of short runs (decoding) one by
// one, longer runs (prefill) in tiles of up to tile_rows rows.
struct AttentionSpans {
    // Runs of fewer rows than this go row by row.
    static constexpr int64_t kMinTiledRows = 8;

    explicit AttentionSpans(int64_t rows_per_tile) : tile_rows(rows_per_tile) {}

    int64_t tile_rows;
    std::vector<kernels::AttentionSpan> rows;
    std::vector<kernels::AttentionSpan> tiles;
    int64_t max_row_visible = 0;  // the most keys a row of `rows` sees

    // Rows [q_begin, q_begin + n_q); row i sees clamp(first_visible + step * i, 0, max_visible) keys.
    void add(int64_t q_begin, int64_t n_q, int64_t kv_start, int64_t first_visible, int64_t step,
             int64_t max_visible) {
        const int64_t tile = n_q >= kMinTiledRows ? tile_rows : 1;
        for (int64_t i = 0; i < n_q; i += tile) {
            (tile == 1 ? rows : tiles)
                .push_back({q_begin + i, std::min(tile, n_q - i), kv_start, first_visible + step * i, step,
                            max_visible});
            if (tile == 1) {
                max_row_visible = std::max(max_row_visible, std::min(max_visible, first_visible + step * i));
            }
        }
    }
};

// The flash kernel's tiles where every segment is bidirectional and long enough to go in tiles (each row
// sees its whole segment); nothing otherwise.
std::optional<std::vector<kernels::AttentionSpan>> bidirectional_tiles(
    std::span<const AttentionSegment> segments) {
    const bool tiled = std::all_of(segments.begin(), segments.end(), [](const AttentionSegment& s) {
        return !s.causal && s.n_q >= AttentionSpans::kMinTiledRows;
    });
    if (!tiled) {
        return std::nullopt;
    }
    AttentionSpans spans(kernels::kFlashTileRows);
    for (const AttentionSegment& seg : segments) {
        spans.add(seg.q_begin, seg.n_q, seg.kv_begin, seg.n_kv, 0, seg.n_kv);
    }
    return std::move(spans.tiles);
}

// The tiled sequences of a paged call on the tensor cores, whose keys are gathered into bfloat16 rows first:
// in groups whose keys together fit max_rows rows (a sequence with more goes alone), every group's runs of
// keys and tiles of query rows one after another, a tile's kv_start being its run's first row in the group.
struct PagedFlashGroups {
    struct Group {
        size_t first_run = 0, n_runs = 0, first_tile = 0, n_tiles = 0;
        int64_t n_rows = 0;   // keys gathered
        int64_t max_run = 0;  // keys of the longest run
    };
    std::vector<kernels::PagedKeyRun> runs;
    std::vector<kernels::AttentionSpan> tiles;
    std::vector<Group> groups;

    PagedFlashGroups(std::span<const PagedSequence> seqs, int64_t max_rows) {
        AttentionSpans spans(kernels::kFlashTileRows);
        for (const PagedSequence& s : seqs) {
            if (s.n_q < AttentionSpans::kMinTiledRows) {
                continue;  // row by row in paged_attention_f32
            }
            if (groups.empty() || groups.back().n_rows + s.n_kv > max_rows) {
                groups.push_back({runs.size(), 0, spans.tiles.size(), 0, 0, 0});
            }
            Group& g = groups.back();
            runs.push_back({s.table_begin, s.n_kv, g.n_rows});
            spans.add(s.q_begin, s.n_q, g.n_rows, s.n_kv - s.n_q + 1, 1, s.n_kv);
            g.n_runs += 1;
            g.n_tiles = spans.tiles.size() - g.first_tile;
            g.n_rows += s.n_kv;
            g.max_run = std::max(g.max_run, s.n_kv);
        }
        tiles = std::move(spans.tiles);
    }
};

// Whether t is a tensor of this backend whose buffer holds its shape.
bool on_device(const Tensor& t) {
    return dynamic_cast<const DeviceBuffer*>(t.buffer.get()) != nullptr && t.fits_buffer();
}

// The device address of a tensor of this backend, after checking that it is one and holds its shape.
void* device_data(const Tensor& t, const char* op) {
    if (!on_device(t)) {
        fail(op, ": tensor ", shape_string(t.shape), " of ", dtype_name(t.dtype),
             " is not in this backend's device memory");
    }
    return static_cast<std::byte*>(t.buffer->data()) + t.offset * element_size(t.dtype);
}

// The same for a float32 tensor.
float* device_f32(const Tensor& t, const char* op) {
    if (!on_device(t) || t.dtype != ScalarType::F32) {
        fail(op, ": tensor ", shape_string(t.shape), " is not float32 in this backend's device memory");
    }
    return t.f32();
}

int32_t* device_i32(const Tensor& t, const char* op) {
    if (!on_device(t) || t.dtype != ScalarType::I32) {
        fail(op, ": tensor ", shape_string(t.shape), " is not int32 in this backend's device memory");
    }
    return t.i32();
}

// A layer's caches of this backend (as check_kv_caches holds them) and their block tables.
kernels::PagedCache paged_cache(const Tensor& k_cache, const Tensor& v_cache, const int32_t* block_tables,
                                int64_t block_size, const char* op) {
    kernels::PagedCache c;
    c.k = device_data(k_cache, op);
    c.v = device_data(v_cache, op);
    c.element = k_cache.dtype == ScalarType::BF16 ? kernels::KvElement::Bf16 : kernels::KvElement::F32;
    c.block_tables = block_tables;
    c.block_size = block_size;
    c.n_blocks = k_cache.shape[0] / block_size;
    return c;
}

// What a product multiplies: x, or x transformed first (kernels::LinearInput).
struct LinearInputSpec {
    kernels::LinearInput input = kernels::LinearInput::Plain;
    const float* norm_w = nullptr;  // [n_in], for RmsNorm and LayerNorm
    float eps = 0.0f;
    const float* norm_b = nullptr;  // [n_in], for LayerNorm
};

// What a product's rows become (kernels::LinearOutput), with where the heads go for RopeToCache.
struct LinearOutputSpec {
    kernels::LinearOutput output = kernels::LinearOutput::Plain;
    kernels::RopeCacheArgs rope;
};

class CudaBackend final : public Backend {
public:
    explicit CudaBackend(const CudaBackendOptions& options)
        : device_(options.device), poison_(options.poison_allocations) {
        const int n_devices = kernels::device_count();
        if (n_devices == 0) {
            fail("cuda: no CUDA device");
        }
        if (device_ < 0 || device_ >= n_devices) {
            fail("cuda: no device ", device_, " (", n_devices, " present)");
        }
        CUDA_CHECK(cudaSetDevice(device_));
        cudaDeviceProp props{};
        CUDA_CHECK(cudaGetDeviceProperties(&props, device_));
        device_name_ = props.name;
        n_multiprocessors_ = props.multiProcessorCount;
        compute_capability_major_ = props.major;
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
    }

    ~CudaBackend() override {
        if (recording_) {
            cudaGraph_t graph = nullptr;
            cudaStreamEndCapture(stream_.get(), &graph);
            cudaGraphDestroy(graph);
        }
        cudaStreamSynchronize(stream_.get());
    }
    CudaBackend(const CudaBackend&) = delete;
    CudaBackend& operator=(const CudaBackend&) = delete;

    std::string name() const override { return "cuda (" + device_name_ + ")"; }

    // Zero-filled, as the CPU backend's tensors are.
    Tensor alloc(std::vector<int64_t> shape) override { return alloc_zeroed(std::move(shape), "alloc"); }

    Tensor upload(std::span<const float> values, std::vector<int64_t> shape) override {
        Tensor t = alloc_uninitialized(std::move(shape), "upload");
        check_upload(t, static_cast<int64_t>(values.size()));
        copy_to_device(t.f32(), values.data(), values.size_bytes());
        return t;
    }

    // Through page-locked memory (copy_parts_to_device).
    Tensor upload(std::span<const std::span<const float>> parts, std::vector<int64_t> shape) override {
        Tensor t = alloc_uninitialized(std::move(shape), "upload");
        check_upload(t, total_size(parts));
        copy_parts_to_device(parts, reinterpret_cast<std::byte*>(t.f32()));
        return t;
    }

    // The levels go through page-locked memory as upload() does, into scratch that a kernel expands.
    Tensor upload_levels(std::span<const std::span<const uint8_t>> parts, std::span<const float> table,
                         int64_t channel_size, std::vector<int64_t> shape) override {
        const char* op = "upload_levels";
        Tensor t = alloc_uninitialized(std::move(shape), op);
        check_upload_levels(t, total_size(parts), static_cast<int64_t>(table.size()), channel_size);
        if (t.n_elements() == 0) {
            return t;
        }
        const Tensor table_d = upload(table, {static_cast<int64_t>(table.size())});  // [n_channels * 256]
        const Tensor levels = alloc_bytes(t.n_elements(), op);                       // [n] bytes
        copy_parts_to_device(parts, reinterpret_cast<std::byte*>(levels.f32()));
        kernels::expand_levels(reinterpret_cast<const uint8_t*>(levels.f32()), table_d.f32(), t.f32(),
                               t.n_elements(), static_cast<int>(t.row_size()), static_cast<int>(channel_size),
                               stream());
        return t;
    }

    Tensor upload_i32(std::span<const int32_t> values, std::vector<int64_t> shape) override {
        Tensor t = alloc_uninitialized(std::move(shape), "upload_i32");
        t.dtype = ScalarType::I32;
        check_update(t, values);
        store_words(values, t.i32());
        return t;
    }

    void update(Tensor& t, std::span<const int32_t> values) override {
        check_update(t, values);
        activate();
        store_words(values, device_i32(t, "update"));
    }

    std::vector<float> download(const Tensor& t) override {
        check_not_recording("download");
        if (t.dtype == ScalarType::I32) {
            fail("download: tensor ", shape_string(t.shape), " of int32 elements; float32 or bfloat16 only");
        }
        std::vector<float> values(static_cast<size_t>(t.n_elements()));
        std::vector<uint16_t> bf16(t.dtype == ScalarType::BF16 ? values.size() : 0);
        if (!values.empty()) {
            activate();
            void* dst = bf16.empty() ? static_cast<void*>(values.data()) : bf16.data();
            CUDA_CHECK(cudaMemcpyAsync(dst, device_data(t, "download"), static_cast<size_t>(t.n_bytes()),
                                       cudaMemcpyDeviceToHost, stream()));
        }
        CUDA_CHECK(cudaStreamSynchronize(stream()));
        std::transform(bf16.begin(), bf16.end(), values.begin(), from_bf16);
        return values;
    }

    Tensor copy(const Tensor& t) override {
        Tensor out = alloc_uninitialized(t.shape, "copy", t.dtype);
        if (t.n_elements() > 0) {
            CUDA_CHECK(cudaMemcpyAsync(out.buffer->data(), device_data(t, "copy"), out.buffer->n_bytes(),
                                       cudaMemcpyDeviceToDevice, stream()));
        }
        return out;
    }

    // bfloat16 at Bf16: the attention kernels read either, and a decoding step's keys and values take half
    // the bytes.
    ScalarType kv_dtype(AttentionPrecision precision) const override {
        return precision == AttentionPrecision::Bf16 ? ScalarType::BF16 : ScalarType::F32;
    }

    Tensor alloc_kv(std::vector<int64_t> shape, ScalarType dtype) override {
        check_kv_dtype(name(), dtype, ScalarType::BF16);
        return alloc_zeroed(std::move(shape), "alloc_kv", dtype);
    }

    Tensor upload_kv(std::span<const float> values, std::vector<int64_t> shape, ScalarType dtype) override {
        check_kv_dtype(name(), dtype, ScalarType::BF16);
        if (dtype == ScalarType::F32) {
            return upload(values, std::move(shape));
        }
        Tensor t = alloc_uninitialized(std::move(shape), "upload_kv", dtype);
        check_upload(t, static_cast<int64_t>(values.size()));
        std::vector<uint16_t> bits(values.size());
        std::transform(values.begin(), values.end(), bits.begin(), to_bf16);
        copy_to_device(t.bf16(), bits.data(), bits.size() * sizeof(uint16_t));
        return t;
    }

    QuantizedTensor upload(const QuantizedWeights& w) override {
        validate(w);
        activate();
        QuantizedTensor t;
        t.type = w.type;
        t.n_out = w.n_out;
        t.n_in = w.n_in;
        t.group_size = w.group_size;
        t.data = std::make_shared<DeviceBuffer>(w.q.size(), pool_, memory_);
        copy_to_device(t.data->data(), w.q.data(), w.q.size());
        t.scales = upload(
            w.scales, {static_cast<int64_t>(w.scales.size())});  // [n_out * n_in / group_size], none for BF16
        return t;
    }

    MemoryStats memory_stats() const override { return {memory_->in_use.load(), memory_->peak.load()}; }

    int64_t total_memory() const override {
        activate();
        size_t free = 0, total = 0;
        CUDA_CHECK(cudaMemGetInfo(&free, &total));
        return static_cast<int64_t>(total);
    }

    void reset_peak() override { memory_->peak.store(memory_->in_use.load()); }

    Tensor linear(const Tensor& x, const Tensor& w, const Tensor* b) override {
        check_linear(x, w, b);
        const int64_t n = x.rows(), in = x.row_size(), out = w.rows();
        Tensor y = alloc_uninitialized({n, out}, "linear");  // [n, out]
        kernels::linear_f32(cublas_.get(), device_f32(x, "linear"), device_f32(w, "linear"),
                            b ? device_f32(*b, "linear") : nullptr, y.f32(), n, in, out, stream());
        return y;
    }

    Tensor linear(const Tensor& x, const QuantizedTensor& w, const Tensor* b) override {
        check_linear(x, w, b);
        Tensor y = alloc_uninitialized({x.rows(), w.n_out}, "linear");  // [n, out]
        quantized_linear(x, w, b, y, kernels::LinearEpilogue::Store);
        return y;
    }

    Tensor linear_gelu_tanh(const Tensor& x, const QuantizedTensor& w, const Tensor* b) override {
        check_linear(x, w, b);
        Tensor y = alloc_uninitialized({x.rows(), w.n_out}, "linear_gelu_tanh");  // [n, out]
        quantized_linear(x, w, b, y, kernels::LinearEpilogue::GeluTanh);
        return y;
    }

    void linear_add(Tensor& y, const Tensor& x, const QuantizedTensor& w, const Tensor* b) override {
        check_linear_add(y, x, w, b);
        device_f32(y, "linear_add");
        quantized_linear(x, w, b, y, kernels::LinearEpilogue::Accumulate);
    }

    Tensor linear_layer_norm(const Tensor& x, const Tensor& norm_w, const Tensor& norm_b, float eps,
                             const QuantizedTensor& w, const Tensor* b) override {
        return layer_normed_linear(x, norm_w, norm_b, eps, w, b, kernels::LinearEpilogue::Store,
                                   "linear_layer_norm");
    }

    Tensor linear_layer_norm_gelu_tanh(const Tensor& x, const Tensor& norm_w, const Tensor& norm_b, float eps,
                                       const QuantizedTensor& w, const Tensor* b) override {
        return layer_normed_linear(x, norm_w, norm_b, eps, w, b, kernels::LinearEpilogue::GeluTanh,
                                   "linear_layer_norm_gelu_tanh");
    }

    // Above the GEMV's rows and with bfloat16 weights: the norm and the hidden values in bfloat16, both
    // products on the tensor cores with GELU and the residual add in their epilogues (the first bias rounded
    // to bfloat16, as cuBLASLt takes it beside a bfloat16 output). As the default does otherwise.
    void layer_norm_mlp_add(Tensor& x, const Tensor& norm_w, const Tensor& norm_b, float eps,
                            const QuantizedTensor& w1, const Tensor* b1, const QuantizedTensor& w2,
                            const Tensor* b2) override {
        check_layer_norm_mlp(x, norm_w, norm_b, w1, b1, w2, b2);
        const int64_t n = x.rows(), d = x.row_size(), d_ff = w1.n_out;
        if (n <= kernels::kQuantizedGemvMaxRows || w1.type != Quantization::Bf16 ||
            w2.type != Quantization::Bf16) {
            Backend::layer_norm_mlp_add(x, norm_w, norm_b, eps, w1, b1, w2, b2);
            return;
        }
        const char* op = "layer_norm_mlp_add";
        activate();
        // bfloat16 pieces of scratch: the hidden values [n, d_ff], the normed input [n, d] and the first bias
        // [d_ff]
        const auto aligned = scratch_piece_bytes;
        const Tensor scratch =
            alloc_bytes(aligned(2 * n * d_ff) + aligned(2 * n * d) + aligned(2 * d_ff), op);
        auto* hidden = reinterpret_cast<uint16_t*>(scratch.f32());
        uint16_t* normed = hidden + aligned(2 * n * d_ff) / 2;
        uint16_t* bias = normed + aligned(2 * n * d) / 2;
        if (b1) {
            kernels::round_to_bf16(device_f32(*b1, op), bias, d_ff, stream());
        }
        kernels::layer_norm_bf16(device_f32(x, op), device_f32(norm_w, op), device_f32(norm_b, op), normed, n,
                                 d, eps, stream());
        kernels::LtLinearArgs up = lt_linear_args(normed, w1, n, kernels::LinearEpilogue::GeluTanh, op);
        up.b_bf16 = b1 ? bias : nullptr;
        up.y_bf16 = hidden;
        gemm_->linear_bf16(up, stream());
        kernels::LtLinearArgs down = lt_linear_args(hidden, w2, n, kernels::LinearEpilogue::Accumulate, op);
        down.b = b2 ? device_f32(*b2, op) : nullptr;
        down.y = x.f32();
        gemm_->linear_bf16(down, stream());
    }

    // Above the GEMV's rows, with bfloat16 weights and every segment in tiles on the tensor cores: q, k and v
    // come out of their product in bfloat16 (its bias rounded to bfloat16 beside that output), are turned and
    // padded from there, and the attention output is written in bfloat16 for the output product, which adds
    // it and its bias to x in its epilogue. As the default does otherwise.
    void layer_norm_attention_add(Tensor& x, const NormAttentionWeights& w, const Tensor& cos,
                                  const Tensor& sin, std::span<const AttentionSegment> segments, float scale,
                                  AttentionPrecision precision) override {
        check_layer_norm_attention(x, w, cos, sin, segments);
        const int64_t n = x.rows(), d = x.row_size(), n_head = w.n_head, head_dim = d / n_head;
        const auto tiles = bidirectional_tiles(segments);
        if (n <= kernels::kQuantizedGemvMaxRows || w.qkv.type != Quantization::Bf16 ||
            w.out.type != Quantization::Bf16 || !tiles || !use_flash(head_dim, scale, precision)) {
            Backend::layer_norm_attention_add(x, w, cos, sin, segments, scale, precision);
            return;
        }
        const char* op = "layer_norm_attention_add";
        activate();
        // Pieces of scratch: in bfloat16 the normed input [n, d], q, k and v [n, 3 d] with their bias [3 d],
        // and the attention output [n, d]; the padded heads the flash kernel reads.
        const auto aligned = scratch_piece_bytes;
        const int64_t padded_bytes = kernels::rope_flash_scratch_bytes(n, n_head, head_dim);
        const Tensor scratch = alloc_bytes(
            aligned(2 * n * d) + aligned(6 * n * d) + aligned(6 * d) + aligned(2 * n * d) + padded_bytes, op);
        auto* normed = reinterpret_cast<uint16_t*>(scratch.f32());
        uint16_t* qkv = normed + aligned(2 * n * d) / 2;
        uint16_t* qkv_bias = qkv + aligned(6 * n * d) / 2;
        uint16_t* attended = qkv_bias + aligned(6 * d) / 2;
        uint16_t* padded = attended + aligned(2 * n * d) / 2;
        if (!covers_rows(segments, n)) {  // rows outside every segment attend to nothing
            CUDA_CHECK(cudaMemsetAsync(attended, 0, 2 * n * d, stream()));
        }
        if (w.qkv_b) {
            kernels::round_to_bf16(device_f32(*w.qkv_b, op), qkv_bias, 3 * d, stream());
        }
        kernels::layer_norm_bf16(device_f32(x, op), device_f32(w.norm_w, op), device_f32(w.norm_b, op),
                                 normed, n, d, w.eps, stream());
        kernels::LtLinearArgs qkv_args = lt_linear_args(normed, w.qkv, n, kernels::LinearEpilogue::Store, op);
        qkv_args.b_bf16 = w.qkv_b ? qkv_bias : nullptr;
        qkv_args.y_bf16 = qkv;
        gemm_->linear_bf16(qkv_args, stream());
        if (!tiles->empty()) {
            const auto staged = stage({std::as_bytes(std::span(*tiles))});
            kernels::rope_flash_attention_bf16(qkv, device_f32(cos, op), device_f32(sin, op), attended,
                                               static_cast<const kernels::AttentionSpan*>(staged[0]),
                                               static_cast<int64_t>(tiles->size()), n, n_head, head_dim,
                                               scale, padded, stream());
        }
        kernels::LtLinearArgs out_args =
            lt_linear_args(attended, w.out, n, kernels::LinearEpilogue::Accumulate, op);
        out_args.b = w.out_b ? device_f32(*w.out_b, op) : nullptr;
        out_args.y = x.f32();
        gemm_->linear_bf16(out_args, stream());
    }

    // Whether every row of [0, n_rows) lies in the queries of some segment.
    static bool covers_rows(std::span<const AttentionSegment> segments, int64_t n_rows) {
        std::vector<std::pair<int64_t, int64_t>> ranges;
        for (const AttentionSegment& s : segments) {
            ranges.emplace_back(s.q_begin, s.q_begin + s.n_q);
        }
        std::sort(ranges.begin(), ranges.end());
        int64_t covered = 0;
        for (const auto& [begin, end] : ranges) {
            if (begin > covered) {
                return false;
            }
            covered = std::max(covered, end);
        }
        return covered >= n_rows;
    }

    // Bytes of a piece of one scratch allocation, rounded up so that the next piece starts 256-byte aligned.
    static int64_t scratch_piece_bytes(int64_t n_bytes) {
        constexpr int64_t kAlign = 256;
        return (n_bytes + kAlign - 1) / kAlign * kAlign;
    }

    // The product of n rows of bfloat16 x with bfloat16 w, into rows of w.n_out; bias and output to be set.
    static kernels::LtLinearArgs lt_linear_args(const uint16_t* x, const QuantizedTensor& w, int64_t n,
                                                kernels::LinearEpilogue epilogue, const char* op) {
        kernels::LtLinearArgs a;
        a.x = x;
        a.w = static_cast<const uint16_t*>(device_weights(w, op));
        a.n = n;
        a.n_in = w.n_in;
        a.n_out = w.n_out;
        a.ld_y = w.n_out;
        a.epilogue = epilogue;
        return a;
    }

    Tensor linear_rms_norm(const Tensor& x, const Tensor& norm_w, float eps, const QuantizedTensor& w,
                           const Tensor* b) override {
        check_rms_norm(x, norm_w);
        check_linear(x, w, b);
        Tensor y = alloc_uninitialized({x.rows(), w.n_out}, "linear_rms_norm");  // [n, out]
        quantized_linear(x, w, b, y, kernels::LinearEpilogue::Store,
                         {kernels::LinearInput::RmsNorm, device_f32(norm_w, "linear_rms_norm"), eps});
        return y;
    }

    Tensor linear_rms_norm_swiglu(const Tensor& x, const Tensor& norm_w, float eps, const QuantizedTensor& w,
                                  const Tensor* b) override {
        check_rms_norm(x, norm_w);
        check_linear_swiglu(x, w, b);
        Tensor y = alloc_uninitialized({x.rows(), w.n_out / 2}, "linear_rms_norm_swiglu");  // [n, out / 2]
        quantized_linear(x, w, b, y, kernels::LinearEpilogue::Store,
                         {kernels::LinearInput::RmsNorm, device_f32(norm_w, "linear_rms_norm_swiglu"), eps},
                         {kernels::LinearOutput::Swiglu, {}});
        return y;
    }

    // Above the GEMV's rows and without a bias on the gate and up rows: the first product's output in
    // bfloat16 (as cuBLASLt writes it), gated into bfloat16 values that the second product reads as they
    // are, adding to x in its epilogue. As the default does otherwise.
    void rms_norm_mlp_add(Tensor& x, const Tensor& norm_w, float eps, const QuantizedTensor& w1,
                          const Tensor* b1, const QuantizedTensor& w2, const Tensor* b2) override {
        check_rms_norm_mlp(x, norm_w, w1, b1, w2, b2);
        const int64_t n = x.rows();
        if (n <= kernels::kQuantizedGemvMaxRows || b1 != nullptr) {
            Backend::rms_norm_mlp_add(x, norm_w, eps, w1, b1, w2, b2);
            return;
        }
        const char* op = "rms_norm_mlp_add";
        activate();
        const Tensor hidden = alloc_bytes(2 * n * (w1.n_out / 2), op);  // [n, d_ff] bfloat16
        auto* hidden_bf16 = reinterpret_cast<uint16_t*>(hidden.f32());
        kernels::QuantizedLinearArgs up =
            linear_args(w1, nullptr, n, kernels::LinearEpilogue::Store,
                        {kernels::LinearInput::RmsNorm, device_f32(norm_w, op), eps},
                        {kernels::LinearOutput::Swiglu, {}});
        up.x = device_f32(x, op);
        up.y_bf16 = hidden_bf16;
        run_linear(up);
        kernels::QuantizedLinearArgs down = linear_args(w2, b2, n, kernels::LinearEpilogue::Accumulate);
        down.x_bf16 = hidden_bf16;
        down.y = x.f32();
        run_linear(down);
    }

    Tensor linear_rms_norm_rope_qkv_to_cache(const Tensor& x, const Tensor& norm_w, float eps,
                                             const QuantizedTensor& w, const Tensor* b,
                                             const Tensor& positions, const Tensor& slots,
                                             const MropeParams& rope, Tensor& k_cache,
                                             Tensor& v_cache) override {
        check_rms_norm(x, norm_w);
        check_linear(x, w, b);
        check_rope_qkv_to_cache({x.rows(), w.n_out}, positions, slots, rope, k_cache, v_cache);
        const char* op = "linear_rms_norm_rope_qkv_to_cache";
        LinearOutputSpec output{kernels::LinearOutput::RopeToCache,
                                rope_cache_args(w.n_out, positions, slots, rope, k_cache, v_cache, op)};
        // [n, n_head, head_dim]
        Tensor q = alloc_uninitialized({x.rows(), output.rope.n_head, output.rope.head_dim}, op);
        output.rope.q_out = q.f32();
        quantized_linear(x, w, b, q, kernels::LinearEpilogue::Store,
                         {kernels::LinearInput::RmsNorm, device_f32(norm_w, op), eps}, output);
        return q;
    }

    Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, float eps) override {
        check_layer_norm(x, w, b);
        const int64_t d = x.row_size();
        Tensor y = alloc_uninitialized(x.shape, "layer_norm");  // as x
        kernels::layer_norm_f32(device_f32(x, "layer_norm"), device_f32(w, "layer_norm"),
                                device_f32(b, "layer_norm"), y.f32(), x.rows(), d, eps, stream());
        return y;
    }

    Tensor rms_norm(const Tensor& x, const Tensor& w, float eps) override {
        check_rms_norm(x, w);
        const int64_t d = x.row_size();
        Tensor y = alloc_uninitialized(x.shape, "rms_norm");  // as x
        kernels::rms_norm_f32(device_f32(x, "rms_norm"), device_f32(w, "rms_norm"), y.f32(), x.rows(), d, eps,
                              stream());
        return y;
    }

    void add(Tensor& x, const Tensor& y) override {
        check_same_shape(x, y, "add");
        activate();
        kernels::add_f32(device_f32(x, "add"), device_f32(y, "add"), x.n_elements(), stream());
    }

    void gelu_tanh(Tensor& x) override {
        activate();
        kernels::gelu_tanh_f32(device_f32(x, "gelu_tanh"), x.n_elements(), stream());
    }

    void gelu_erf(Tensor& x) override {
        activate();
        kernels::gelu_erf_f32(device_f32(x, "gelu_erf"), x.n_elements(), stream());
    }

    Tensor swiglu(const Tensor& gate_up) override {
        check_swiglu(gate_up);
        const int64_t n = gate_up.shape[0], d = gate_up.shape[1] / 2;
        Tensor y = alloc_uninitialized({n, d}, "swiglu");  // [n, d]
        kernels::swiglu_f32(device_f32(gate_up, "swiglu"), y.f32(), n, d, stream());
        return y;
    }

    void rope(Tensor& x, const Tensor& cos, const Tensor& sin) override {
        check_rope(x, cos, sin);
        activate();
        kernels::rope_f32(device_f32(x, "rope"), device_f32(cos, "rope"), device_f32(sin, "rope"), x.shape[0],
                          x.shape[1], x.shape[2], stream());
    }

    Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v,
                     std::span<const AttentionSegment> segments, float scale,
                     AttentionPrecision precision) override {
        check_attention(q, k, v, segments);
        check_head_dim(q, "attention");
        const bool flash = use_flash(q.shape[2], scale, precision);
        const bool bidirectional = std::none_of(segments.begin(), segments.end(),
                                                [](const AttentionSegment& s) { return s.causal; });
        if (!flash && bidirectional && k.shape[1] == q.shape[1]) {
            return segment_attention(q, k, v, segments, scale);
        }
        AttentionSpans spans(flash ? kernels::kFlashTileRows : kernels::kAttentionTileRows);
        for (const auto& seg : segments) {
            spans.add(seg.q_begin, seg.n_q, seg.kv_begin, seg.causal ? seg.q_pos_offset + 1 : seg.n_kv,
                      seg.causal ? 1 : 0, seg.n_kv);
        }
        const char* op = "attention";
        // [n_q_total, n_head, head_dim]; rows outside every segment stay zero
        Tensor out = alloc_zeroed(q.shape, op);
        const Splits splits = attention_splits(static_cast<int64_t>(spans.rows.size()), q.shape[1],
                                               k.shape[1], q.shape[2], spans.max_row_visible, op, false);
        const auto staged =
            stage({std::as_bytes(std::span(spans.rows)), std::as_bytes(std::span(spans.tiles))});
        const auto* row_spans = static_cast<const kernels::AttentionSpan*>(staged[0]);
        const auto* tile_spans = static_cast<const kernels::AttentionSpan*>(staged[1]);
        const auto n_rows = static_cast<int64_t>(spans.rows.size());
        const auto n_tiles = static_cast<int64_t>(spans.tiles.size());
        kernels::attention_f32(device_f32(q, op), device_f32(k, op), device_f32(v, op), out.f32(), row_spans,
                               n_rows, splits.kernel_splits, tile_spans, flash ? 0 : n_tiles, q.shape[1],
                               k.shape[1], q.shape[2], scale, stream());
        if (flash && n_tiles > 0) {
            const Tensor scratch = alloc_bytes(
                kernels::flash_scratch_bytes(q.shape[0], q.shape[1], k.shape[0], k.shape[1], k.shape[2]),
                op);  // Q, K and V in bfloat16
            kernels::flash_attention_bf16(device_f32(q, op), device_f32(k, op), device_f32(v, op), out.f32(),
                                          tile_spans, n_tiles, q.shape[0], k.shape[0], q.shape[1], k.shape[1],
                                          q.shape[2], scale, scratch.empty() ? nullptr : scratch.f32(),
                                          stream());
        }
        return out;
    }

    // On the tensor cores in one pass that turns and rounds q, k and v where every segment is bidirectional
    // and long enough to go in tiles; as the default does otherwise.
    Tensor rope_attention(const Tensor& qkv, const Tensor& cos, const Tensor& sin,
                          std::span<const AttentionSegment> segments, float scale,
                          AttentionPrecision precision) override {
        check_rope_attention(qkv, cos, sin, segments);
        const int64_t n = qkv.shape[0], n_head = qkv.shape[2], head_dim = qkv.shape[3];
        const auto tiles = bidirectional_tiles(segments);
        if (!tiles || !use_flash(head_dim, scale, precision)) {
            return Backend::rope_attention(qkv, cos, sin, segments, scale, precision);
        }
        const char* op = "rope_attention";
        Tensor out = alloc_zeroed({n, n_head, head_dim}, op);  // rows outside every segment stay zero
        if (tiles->empty()) {
            return out;
        }
        const auto staged = stage({std::as_bytes(std::span(*tiles))});
        const Tensor scratch = alloc_bytes(kernels::rope_flash_scratch_bytes(n, n_head, head_dim), op);
        kernels::rope_flash_attention_bf16(device_f32(qkv, op), device_f32(cos, op), device_f32(sin, op),
                                           out.f32(), static_cast<const kernels::AttentionSpan*>(staged[0]),
                                           static_cast<int64_t>(tiles->size()), n, n_head, head_dim, scale,
                                           scratch.f32(), stream());
        return out;
    }

    // Bidirectional attention without grouped heads (the vision encoder): the scores of every image and head
    // as whole matrices through batched cuBLAS calls, images of one size together, many times faster than the
    // tile kernel, which stays for causal prefill.
    Tensor segment_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                             std::span<const AttentionSegment> segments, float scale) {
        const char* op = "attention";
        const int64_t n_head = q.shape[1], head_dim = q.shape[2], ld = n_head * head_dim;
        Tensor out = alloc_zeroed(q.shape, op);  // [n_q_total, n_head, head_dim]; rows outside stay zero
        std::map<std::pair<int64_t, int64_t>, std::vector<const AttentionSegment*>> by_shape;
        for (const AttentionSegment& s : segments) {
            if (s.n_q > 0 && s.n_kv > 0) {
                by_shape[{s.n_q, s.n_kv}].push_back(&s);
            }
        }
        const float* qd = device_f32(q, op);
        const float* kd = device_f32(k, op);
        const float* vd = device_f32(v, op);
        for (const auto& [shape, group] : by_shape) {
            const auto [n_q, n_kv] = shape;
            // Entries (segment, head) per call, so that their scores fit kMaxBatchedScoreFloats.
            const int64_t per_call = std::max<int64_t>(kernels::kMaxBatchedScoreFloats / (n_q * n_kv), 1);
            const int64_t n_entries = static_cast<int64_t>(group.size()) * n_head;
            const Tensor scores = alloc_uninitialized({std::min(per_call, n_entries) * n_q * n_kv},
                                                      op);  // [entries, n_q, n_kv]
            for (int64_t first = 0; first < n_entries; first += per_call) {
                const int64_t n_batch = std::min(per_call, n_entries - first);
                std::vector<const float*> qp, kp, vp;
                std::vector<float*> sp, op_out;
                for (int64_t e = first; e < first + n_batch; ++e) {
                    const AttentionSegment& s = *group[static_cast<size_t>(e / n_head)];
                    const int64_t h = e % n_head;
                    qp.push_back(qd + s.q_begin * ld + h * head_dim);
                    kp.push_back(kd + s.kv_begin * ld + h * head_dim);
                    vp.push_back(vd + s.kv_begin * ld + h * head_dim);
                    sp.push_back(scores.f32() + (e - first) * n_q * n_kv);
                    op_out.push_back(out.f32() + s.q_begin * ld + h * head_dim);
                }
                const auto staged = stage({std::as_bytes(std::span(qp)), std::as_bytes(std::span(kp)),
                                           std::as_bytes(std::span(vp)), std::as_bytes(std::span(sp)),
                                           std::as_bytes(std::span(op_out))});
                kernels::batched_attention_f32(
                    cublas_.get(), static_cast<const float* const*>(staged[0]),
                    static_cast<const float* const*>(staged[1]), static_cast<const float* const*>(staged[2]),
                    static_cast<float* const*>(staged[3]), static_cast<float* const*>(staged[4]),
                    scores.f32(), n_batch, n_q, n_kv, head_dim, ld, scale, stream());
            }
        }
        return out;
    }

    Tensor paged_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                           std::span<const PagedSequence> seqs, std::span<const int32_t> block_tables,
                           int64_t block_size, float scale, AttentionPrecision precision) override {
        check_paged_attention(q, k_cache, v_cache, seqs, block_tables, block_size);
        const char* op = "paged_attention";
        check_head_dim(q, op);
        const bool flash = use_flash(q.shape[2], scale, precision);
        AttentionSpans spans(kernels::kAttentionTileRows);
        for (const PagedSequence& s : seqs) {
            spans.add(s.q_begin, s.n_q, s.table_begin, s.n_kv - s.n_q + 1, 1, s.n_kv);
        }
        // The scratch of the gathered keys stays within what a prefill of the call's rows takes.
        constexpr int64_t kMinGatherRows = 8192;
        const PagedFlashGroups groups(flash ? seqs : std::span<const PagedSequence>{},
                                      std::max(q.shape[0], kMinGatherRows));
        // [n_tokens, n_head, head_dim]; rows outside every sequence stay zero
        Tensor out = alloc_zeroed(q.shape, op);
        const Splits splits =
            attention_splits(static_cast<int64_t>(spans.rows.size()), q.shape[1], k_cache.shape[1],
                             q.shape[2], spans.max_row_visible, op, false);
        const auto staged =
            stage({std::as_bytes(std::span(spans.rows)), std::as_bytes(std::span(spans.tiles)),
                   std::as_bytes(block_tables), std::as_bytes(std::span(groups.runs)),
                   std::as_bytes(std::span(groups.tiles))});
        const auto* row_spans = static_cast<const kernels::AttentionSpan*>(staged[0]);
        const auto* tile_spans = static_cast<const kernels::AttentionSpan*>(staged[1]);
        const auto* tables = static_cast<const int32_t*>(staged[2]);
        const auto n_rows = static_cast<int64_t>(spans.rows.size());
        const auto n_tiles = static_cast<int64_t>(spans.tiles.size());
        const kernels::PagedCache cache = paged_cache(k_cache, v_cache, tables, block_size, op);
        kernels::paged_attention_f32(device_f32(q, op), cache, out.f32(), row_spans, n_rows,
                                     spans.max_row_visible, splits.kernel_splits, tile_spans,
                                     flash ? 0 : n_tiles, q.shape[1], k_cache.shape[1], q.shape[2], scale,
                                     stream(), precision == AttentionPrecision::Bf16);
        if (groups.groups.empty()) {
            return out;
        }
        const int64_t n_head = q.shape[1], n_kv_head = k_cache.shape[1], head_dim = q.shape[2];
        const Tensor q_bf16 = alloc_bytes(kernels::padded_rows_bytes(q.shape[0] * n_head, head_dim), op);
        kernels::round_rows_bf16(device_f32(q, op), reinterpret_cast<uint16_t*>(q_bf16.f32()),
                                 q.shape[0] * n_head, head_dim, stream());
        const auto* runs = static_cast<const kernels::PagedKeyRun*>(staged[3]);
        const auto* flash_tiles = static_cast<const kernels::AttentionSpan*>(staged[4]);
        for (const PagedFlashGroups::Group& g : groups.groups) {
            const Tensor scratch =
                alloc_bytes(2 * kernels::padded_rows_bytes(g.n_rows * n_kv_head, head_dim), op);
            kernels::paged_flash_attention_bf16(
                reinterpret_cast<const uint16_t*>(q_bf16.f32()), cache, out.f32(), flash_tiles + g.first_tile,
                static_cast<int64_t>(g.n_tiles), runs + g.first_run, static_cast<int64_t>(g.n_runs),
                g.max_run, n_head, n_kv_head, head_dim, scale, scratch.f32(), g.n_rows, stream());
        }
        return out;
    }

    Tensor rope_qkv_to_cache(const Tensor& qkv, const Tensor& positions, const Tensor& slots,
                             const MropeParams& rope, Tensor& k_cache, Tensor& v_cache) override {
        check_rope_qkv_to_cache(qkv.shape, positions, slots, rope, k_cache, v_cache);
        const char* op = "rope_qkv_to_cache";
        kernels::RopeCacheArgs args =
            rope_cache_args(qkv.shape[1], positions, slots, rope, k_cache, v_cache, op);
        Tensor q =
            alloc_uninitialized({qkv.shape[0], args.n_head, args.head_dim}, op);  // [n, n_head, head_dim]
        args.q_out = q.f32();
        kernels::rope_qkv_to_cache_f32(device_f32(qkv, op), args, qkv.shape[0], stream());
        return q;
    }

    Tensor paged_decode_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                                  const Tensor& seq_lens, const Tensor& block_tables, int64_t block_size,
                                  float scale, AttentionPrecision precision) override {
        check_paged_decode_attention(q, k_cache, v_cache, seq_lens, block_tables, block_size);
        const char* op = "paged_decode_attention";
        check_head_dim(q, op);
        const int64_t n = q.shape[0], n_head = q.shape[1], max_blocks = block_tables.shape[1];
        const kernels::PagedCache cache =
            paged_cache(k_cache, v_cache, device_i32(block_tables, op), block_size, op);
        const float* q_data = device_f32(q, op);
        // Above the GEMV's rows the output projection reads bfloat16 rows, so decode_attention_bf16 rounds
        // them as it stores them, and no pass rounds them after it.
        if (precision == AttentionPrecision::Bf16 && n > kernels::kQuantizedGemvMaxRows) {
            Tensor out = alloc_uninitialized(q.shape, op, ScalarType::BF16);  // [n, n_head, head_dim]
            auto* out_bf16 = static_cast<uint16_t*>(device_data(out, op));
            if (kernels::decode_attention_bf16_takes(q_data, out_bf16, cache, max_blocks * block_size, n_head,
                                                     k_cache.shape[1], q.shape[2])) {
                const Splits splits = attention_splits(n, n_head, k_cache.shape[1], q.shape[2],
                                                       max_blocks * block_size, op, false);
                kernels::decode_attention_bf16(q_data, cache, out_bf16, device_i32(seq_lens, op), n,
                                               max_blocks, splits.kernel_splits, n_head, k_cache.shape[1],
                                               scale, stream());
                return out;
            }
        }
        Tensor out = alloc_uninitialized(q.shape, op);  // [n, n_head, head_dim]
        // The split of the keys is fixed by the most keys a row can see, so that recorded work fits any
        // sequence lengths; splits past a row's keys end at once. At bfloat16 precision the calls that
        // decode_attention_bf16 does not take go to the split-row kernel's tensor cores.
        const bool bf16_products = precision == AttentionPrecision::Bf16;
        const bool split_row_tensor_cores =
            bf16_products &&
            !kernels::decode_attention_bf16_takes(q_data, out.f32(), cache, max_blocks * block_size, n_head,
                                                  k_cache.shape[1], q.shape[2]);
        const Splits splits = attention_splits(n, n_head, k_cache.shape[1], q.shape[2],
                                               max_blocks * block_size, op, split_row_tensor_cores);
        kernels::paged_decode_attention_f32(q_data, cache, out.f32(), device_i32(seq_lens, op), n, max_blocks,
                                            splits.kernel_splits, n_head, k_cache.shape[1], q.shape[2], scale,
                                            stream(), bf16_products);
        return out;
    }

    void argmax_rows_to(const Tensor& x, Tensor& out) override {
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

    void sample_rows_to(const Tensor& logits, std::span<const RowSampling> rows,
                        std::span<const int32_t> history, Tensor& out) override {
        check_sample_rows(logits, rows, history);
        check_i32(out, {logits.rows()}, "sample_rows", "out");
        if (rows.empty()) {
            return;
        }
        std::vector<kernels::SampleRow> params;
        for (const RowSampling& r : rows) {
            params.push_back({r.temperature, r.top_k, r.top_p, r.repetition_penalty, r.uniform,
                              r.history_begin, r.history_count});
        }
        const Tensor scratch = alloc_uninitialized(logits.shape, "sample_rows");  // [n, vocab]
        const auto staged = stage({std::as_bytes(std::span(params)), std::as_bytes(history)});
        kernels::sample_rows_f32(device_f32(logits, "sample_rows"),
                                 static_cast<const kernels::SampleRow*>(staged[0]),
                                 static_cast<const int32_t*>(staged[1]), scratch.f32(),
                                 device_i32(out, "sample_rows"), logits.rows(), logits.row_size(), stream());
    }

    std::unique_ptr<TokenReadback> read_back(const Tensor& values) override {
        check_not_recording("read_back");
        check_i32(values, {values.n_elements()}, "read_back", "values");
        activate();
        return readbacks_.read_back(device_i32(values, "read_back"), values.n_elements(), stream());
    }

    Tensor gather_rows(const Tensor& src, std::span<const int64_t> rows) override {
        check_gather_rows(src, rows);
        std::vector<int64_t> shape{static_cast<int64_t>(rows.size())};  // src's shape with rows.size() rows
        shape.insert(shape.end(), src.shape.begin() + 1, src.shape.end());
        Tensor out = alloc_uninitialized(shape, "gather_rows");  // [rows.size(), ...]
        const auto staged = stage({std::as_bytes(rows)});
        kernels::gather_rows_f32(device_f32(src, "gather_rows"), static_cast<const int64_t*>(staged[0]),
                                 out.f32(), static_cast<int64_t>(rows.size()), src.row_size(), stream());
        return out;
    }

    Tensor gather_rows(const Tensor& src, const Tensor& rows) override {
        check_gather_rows(src, rows);
        std::vector<int64_t> shape{rows.n_elements()};  // src's shape with rows.n_elements() rows
        shape.insert(shape.end(), src.shape.begin() + 1, src.shape.end());
        Tensor out = alloc_uninitialized(shape, "gather_rows");  // [n_rows, ...]
        kernels::gather_rows_i32_f32(device_f32(src, "gather_rows"), device_i32(rows, "gather_rows"),
                                     out.f32(), rows.n_elements(), src.row_size(), src.rows(), nullptr, 0,
                                     stream());
        return out;
    }

    Tensor gather_token_rows(const Tensor& table, const Tensor& ids, const Tensor& pending) override {
        const char* op = "gather_token_rows";
        check_gather_token_rows(table, ids, pending);
        Tensor out = alloc_uninitialized({ids.n_elements(), table.row_size()}, op);  // [n, d]
        kernels::gather_rows_i32_f32(device_f32(table, op), device_i32(ids, op), out.f32(), ids.n_elements(),
                                     table.row_size(), table.rows(), device_i32(pending, op),
                                     pending.n_elements(), stream());
        return out;
    }

    bool can_record() const override { return true; }

    void begin_recording() override {
        check_not_recording("begin_recording");
        activate();
        CUDA_CHECK(cudaStreamSynchronize(stream()));
        // Relaxed: the recording pool may cudaMalloc while the stream records.
        CUDA_CHECK(cudaStreamBeginCapture(stream(), cudaStreamCaptureModeRelaxed));
        recording_ = true;
    }

    std::unique_ptr<RecordedWork> end_recording() override {
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

    void add_weighted_rows(Tensor& x, const Tensor& src, std::span<const int64_t> rows,
                           std::span<const float> weights) override {
        const int64_t n_taps = check_add_weighted_rows(x, src, rows, weights);
        const char* op = "add_weighted_rows";
        activate();
        const auto staged = stage({std::as_bytes(rows), std::as_bytes(weights)});
        kernels::add_weighted_rows_f32(
            device_f32(x, op), device_f32(src, op), static_cast<const int64_t*>(staged[0]),
            static_cast<const float*>(staged[1]), x.rows(), n_taps, x.row_size(), stream());
    }

    void scatter_rows(Tensor& dst, std::span<const int64_t> rows, const Tensor& src) override {
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
                                      device_f32(src, "scatter_rows"), nullptr,
                                      static_cast<int64_t>(rows.size()), d, stream());
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

private:
    cudaStream_t stream() const { return stream_.get(); }

    // CUDA's current device is per host thread: the backend may be driven from another thread than the one
    // that made it.
    void activate() const { CUDA_CHECK(cudaSetDevice(device_)); }

    // A tensor whose contents are unspecified (NaN with poison_allocations); the operation writes all of it.
    Tensor alloc_uninitialized(std::vector<int64_t> shape, const char* op,
                               ScalarType dtype = ScalarType::F32) {
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

    Tensor alloc_zeroed(std::vector<int64_t> shape, const char* op, ScalarType dtype = ScalarType::F32) {
        Tensor t = alloc_uninitialized(std::move(shape), op, dtype);
        if (t.n_elements() > 0) {
            CUDA_CHECK(cudaMemsetAsync(t.buffer->data(), 0, t.buffer->n_bytes(), stream()));
        }
        return t;
    }

    // Enqueues a copy of the parts, one after another, to dst: through page-locked memory, so that the host
    // goes on while the copy runs, or part by part through the driver's own staging when no page-locked
    // memory can be had. The parts may be reused as soon as this returns.
    template <typename T>
    void copy_parts_to_device(std::span<const std::span<const T>> parts, std::byte* dst) {
        check_not_recording("upload");
        std::vector<std::span<const std::byte>> bytes;
        bytes.reserve(parts.size());
        for (const std::span<const T> part : parts) {
            bytes.push_back(std::as_bytes(part));
        }
        if (!host_staging_.copy(bytes, dst, stream())) {
            for (const std::span<const std::byte> part : bytes) {
                if (!part.empty()) {
                    CUDA_CHECK(
                        cudaMemcpyAsync(dst, part.data(), part.size(), cudaMemcpyHostToDevice, stream()));
                }
                dst += part.size();
            }
        }
    }

    // Enqueues a copy of host memory that the caller may reuse as soon as this returns, as
    // copy_parts_to_device does.
    void copy_to_device(void* dst, const void* src, size_t n_bytes) {
        const std::span<const std::byte> part(static_cast<const std::byte*>(src), n_bytes);
        copy_parts_to_device(std::span(&part, 1), static_cast<std::byte*>(dst));
    }

    // Enqueues dst[i] = values[i]: a few words in a kernel's launch (transfer.h), more through
    // copy_to_device.
    void store_words(std::span<const int32_t> values, int32_t* dst) {
        if (static_cast<int64_t>(values.size()) <= kernels::kStoreWordsMax) {
            check_not_recording("upload");
            kernels::store_words(values.data(), static_cast<int64_t>(values.size()), dst, stream());
        } else {
            copy_to_device(dst, values.data(), values.size_bytes());
        }
    }

    // Copies small host arrays (row lists, block tables) into the backend's staging memory, each at an
    // aligned offset, and returns their device addresses. The staging memory is reused by the next call:
    // the work enqueued in between reads it in stream order.
    std::vector<const void*> stage(std::initializer_list<std::span<const std::byte>> arrays) {
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

    // How the keys of an attention call's row spans are split, with the partials buffer several splits need.
    struct Splits {
        kernels::AttentionSplits kernel_splits;
        Tensor partials;  // [kernels::attention_partials_floats(...)] or empty
    };

    // n_rows rows of q [.., n_head, head_dim] seeing at most max_visible keys of n_kv_head heads;
    // split_row_tensor_cores as kernels::attention_splits takes it.
    Splits attention_splits(int64_t n_rows, int64_t n_head, int64_t n_kv_head, int64_t head_dim,
                            int64_t max_visible, const char* op, bool split_row_tensor_cores) {
        Splits splits;
        kernels::AttentionSplits& s = splits.kernel_splits;
        s.n_splits = kernels::attention_splits(n_rows, n_head, n_kv_head, head_dim, max_visible,
                                               n_multiprocessors_, split_row_tensor_cores);
        if (s.n_splits > 1) {
            splits.partials = alloc_uninitialized(
                {kernels::attention_partials_floats(n_rows, n_head, s.n_splits, head_dim)}, op);
            s.partials = splits.partials.f32();
            s.counters = static_cast<int32_t*>(split_counters_.get());
            s.n_counters = kernels::kAttentionSplitCounters;
        }
        return splits;
    }

    // Where the heads of a qkv of n_qkv columns go, but for q_out.
    kernels::RopeCacheArgs rope_cache_args(int64_t n_qkv, const Tensor& positions, const Tensor& slots,
                                           const MropeParams& rope, Tensor& k_cache, Tensor& v_cache,
                                           const char* op) {
        kernels::RopeCacheArgs a;
        a.positions = device_i32(positions, op);
        a.slots = device_i32(slots, op);
        a.inv_freq = device_f32(rope.inv_freq, op);
        a.section0 = rope.section[0];
        a.section01 = rope.section[0] + rope.section[1];
        a.k_cache = device_data(k_cache, op);
        a.v_cache = device_data(v_cache, op);
        a.bf16_cache = k_cache.dtype == ScalarType::BF16;
        a.n_kv_head = k_cache.shape[1];
        a.head_dim = k_cache.shape[2];
        a.n_head = n_qkv / a.head_dim - 2 * a.n_kv_head;
        a.n_slots = k_cache.shape[0];
        return a;
    }

    void check_not_recording(const char* what) const {
        if (recording_) {
            fail("cuda: ", what, " while recording work; inputs of recorded work are written before replay");
        }
    }

    // epilogue(layer_norm(x) · wᵀ + b), the arguments checked.  ->  [n, w.n_out]
    Tensor layer_normed_linear(const Tensor& x, const Tensor& norm_w, const Tensor& norm_b, float eps,
                               const QuantizedTensor& w, const Tensor* b, kernels::LinearEpilogue epilogue,
                               const char* op) {
        check_layer_norm(x, norm_w, norm_b);
        check_linear(x, w, b);
        Tensor y = alloc_uninitialized({x.rows(), w.n_out}, op);  // [n, out]
        quantized_linear(
            x, w, b, y, epilogue,
            {kernels::LinearInput::LayerNorm, device_f32(norm_w, op), eps, device_f32(norm_b, op)});
        return y;
    }

    // The device address of a quantized weight's values, after checking that this backend holds them.
    static const void* device_weights(const QuantizedTensor& w, const char* op) {
        if (dynamic_cast<const DeviceBuffer*>(w.data.get()) == nullptr) {
            fail(op, ": ", quantization_name(w.type), " w [", w.n_out, ", ", w.n_in,
                 "] is not in this backend's device memory");
        }
        return w.data->data();
    }

    // Scratch of at least n_bytes (whole floats), or an empty tensor for none.
    Tensor alloc_bytes(int64_t n_bytes, const char* op) {
        return n_bytes > 0 ? alloc_uninitialized({(n_bytes + 3) / 4}, op) : Tensor{};
    }

    // Whether an attention call's tiles of query rows go to the tensor cores, whose softmax needs a positive
    // scale; other scales go through the float32 kernels.
    bool use_flash(int64_t head_dim, float scale, AttentionPrecision precision) const {
        return precision == AttentionPrecision::Bf16 && head_dim <= kernels::kMaxFlashHeadDim &&
               compute_capability_major_ >= 8 && scale > 0.0f && std::isfinite(scale);
    }

    // y = output(epilogue(input(x) · wᵀ + b)), the arguments checked.  ->  y [n, w.n_out], [n, w.n_out / 2]
    // for a SwiGLU output, or q [n, n_head, head_dim] and the cache rows for RopeToCache
    void quantized_linear(const Tensor& x, const QuantizedTensor& w, const Tensor* b, Tensor& y,
                          kernels::LinearEpilogue epilogue, const LinearInputSpec& input = {},
                          const LinearOutputSpec& output = {}) {
        kernels::QuantizedLinearArgs args = linear_args(w, b, x.rows(), epilogue, input, output);
        if (x.dtype == ScalarType::BF16) {
            args.x_bf16 = static_cast<const uint16_t*>(device_data(x, "linear"));
        } else {
            args.x = device_f32(x, "linear");
        }
        args.y = y.f32();
        run_linear(args);
    }

    // A product of n rows with w, but for where its input and output are.
    static kernels::QuantizedLinearArgs linear_args(const QuantizedTensor& w, const Tensor* b, int64_t n,
                                                    kernels::LinearEpilogue epilogue,
                                                    const LinearInputSpec& input = {},
                                                    const LinearOutputSpec& output = {}) {
        kernels::QuantizedLinearArgs args;
        args.format = w.type == Quantization::Bf16    ? kernels::QuantizedFormat::Bf16
                      : w.type == Quantization::Wint8 ? kernels::QuantizedFormat::Wint8
                                                      : kernels::QuantizedFormat::Wint4;
        args.q = static_cast<const int8_t*>(device_weights(w, "linear"));
        args.scales = device_f32(w.scales, "linear");
        args.b = b ? device_f32(*b, "linear") : nullptr;
        args.n = n;
        args.n_in = w.n_in;
        args.n_out = w.n_out;
        args.group_size = w.group_size;
        args.epilogue = epilogue;
        args.input = input.input;
        args.output = output.output;
        args.rope = output.rope;
        args.norm_w = input.norm_w;
        args.eps = input.eps;
        args.norm_b = input.norm_b;
        return args;
    }

    // Enqueues the product args describes, giving it the scratch it needs.
    void run_linear(kernels::QuantizedLinearArgs& args) {
        // [n_scratch]: the input transformed or in bfloat16, and dequantized weight rows
        const int64_t n_scratch = kernels::quantized_linear_scratch_floats(args);
        Tensor scratch;
        if (n_scratch > 0) {
            scratch = alloc_uninitialized({n_scratch}, "linear");
        }
        kernels::quantized_linear_f32(*gemm_, args, scratch.empty() ? nullptr : scratch.f32(), n_scratch,
                                      stream());
    }

    void check_head_dim(const Tensor& q, const char* op) const {
        if (q.shape[2] > kernels::kMaxAttentionHeadDim) {
            fail(op, ": head_dim ", q.shape[2], " of q ", shape_string(q.shape),
                 " is over the CUDA kernels' ", kernels::kMaxAttentionHeadDim);
        }
    }

    int device_;
    bool poison_;
    std::string device_name_;
    int n_multiprocessors_ = 1;
    int compute_capability_major_ = 0;
    std::unique_ptr<CUstream_st, StreamDestroy> stream_;
    std::unique_ptr<cublasContext, CublasDestroy> cublas_;
    static constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

    DevicePtr cublas_workspace_;
    DevicePtr split_counters_;  // [kernels::kAttentionSplitCounters] int32
    std::unique_ptr<kernels::LtGemm> gemm_;
    DevicePtr staging_;
    size_t staging_bytes_ = 0;
    // Up to four threads fill page-locked memory: with one, the host's part of a vision batch's upload took
    // several times the copy to the device.
    kernels::HostStaging host_staging_{ThreadPool::at_most_hardware(4)};
    kernels::ReadbackPool readbacks_;
    bool recording_ = false;
    std::shared_ptr<MemoryCounter> memory_ = std::make_shared<MemoryCounter>();
    std::shared_ptr<DevicePool> pool_ = std::make_shared<DevicePool>(device_, true);
    // Tensors made while recording: their blocks stay with the pool, for the recorded work that reuses them.
    std::shared_ptr<DevicePool> recording_pool_ = std::make_shared<DevicePool>(device_, false);
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options) {
    return std::make_unique<CudaBackend>(options);
}

std::unique_ptr<Backend> make_cuda_backend(int device) {
    return make_cuda_backend(CudaBackendOptions{device, false});
}

}  // namespace folio
