// The CPU reference backend: float32, multi-threaded, written for clarity first and speed second.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include <unistd.h>

#include "engine/backend/backend-checks.h"
#include "engine/backend/backend-cpu-vision.h"
#include "engine/backend/backend.h"
#include "engine/backend/cpu-products.h"
#include "engine/backend/expert-routing.h"
#include "engine/common/error.h"
#include "engine/common/thread-pool.h"

namespace folio {

namespace {

// Zeroed memory from calloc: large buffers come as fresh zero pages, committed only once they are touched, so
// a KV cache planned for the worst case costs what is used of it.
struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
};

template <typename T>
struct HostBuffer final : Buffer {
    HostBuffer(size_t n, std::shared_ptr<MemoryCounter> counter)
        : values(static_cast<T*>(std::calloc(std::max<size_t>(n, 1), sizeof(T)))),
          n_values(n),
          counter_(std::move(counter)) {
        if (!values) {
            fail("cpu: out of memory allocating ", n * sizeof(T), " bytes");
        }
        counter_->add(static_cast<int64_t>(n_bytes()));
    }
    ~HostBuffer() override { counter_->add(-static_cast<int64_t>(n_bytes())); }
    HostBuffer(const HostBuffer&) = delete;
    HostBuffer& operator=(const HostBuffer&) = delete;

    void* data() override { return values.get(); }
    size_t n_bytes() const override { return n_values * sizeof(T); }

    std::unique_ptr<T[], FreeDeleter> values;
    size_t n_values;

private:
    std::shared_ptr<MemoryCounter> counter_;
};

// Softmax attention of one query row over keys 0..n_visible-1: key_at(j) and value_at(j) give the rows of
// key j (each pointer read before the next call).
template <typename KeyAt, typename ValueAt>
void attend_row_at(const float* qv, const KeyAt& key_at, const ValueAt& value_at, int64_t n_visible,
                   int64_t hd, float scale, std::vector<float>& scores, float* ov) {
    scores.resize(static_cast<size_t>(n_visible));
    float max_score = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < n_visible; ++j) {
        const float* kv = key_at(j);
        float dot = 0.0f;
        for (int64_t d = 0; d < hd; ++d) {
            dot += qv[d] * kv[d];
        }
        scores[j] = dot * scale;
        max_score = std::max(max_score, scores[j]);
    }
    double sum = 0.0;
    for (int64_t j = 0; j < n_visible; ++j) {
        scores[j] = std::exp(scores[j] - max_score);
        sum += scores[j];
    }
    std::fill(ov, ov + hd, 0.0f);
    for (int64_t j = 0; j < n_visible; ++j) {
        const float p = static_cast<float>(scores[j] / sum);
        const float* vv = value_at(j);
        for (int64_t d = 0; d < hd; ++d) {
            ov[d] += p * vv[d];
        }
    }
}

// The same with the rows of key j in k and v starting at offset(j).
template <typename Offset>
void attend_row(const float* qv, const float* k, const float* v, const Offset& offset, int64_t n_visible,
                int64_t hd, float scale, std::vector<float>& scores, float* ov) {
    attend_row_at(
        qv, [&](int64_t j) { return k + offset(j); }, [&](int64_t j) { return v + offset(j); }, n_visible, hd,
        scale, scores, ov);
}

// A row of hd values of a Q8 cache starting at element `at`, turned into floats in row.
const float* q8_row(const Tensor& cache, int64_t at, int64_t hd, std::vector<float>& row) {
    row.resize(static_cast<size_t>(hd));
    const int8_t* levels = cache.q8_levels() + at;
    const float scale = cache.q8_scales()[at / hd];
    for (int64_t d = 0; d < hd; ++d) {
        row[static_cast<size_t>(d)] = static_cast<float>(levels[d]) * scale;
    }
    return row.data();
}

// Copies src's values into the parts one after another.
template <typename T>
void copy_to_parts(const T* src, std::span<const std::span<T>> parts) {
    for (const std::span<T> part : parts) {
        std::copy_n(src, part.size(), part.begin());
        src += part.size();
    }
}

// The vision operations come from CpuVisionBackend (backend-cpu-vision.cpp).
class CpuBackend final : public CpuVisionBackend {
public:
    explicit CpuBackend(int n_threads) : pool_(n_threads) {}

    std::string name() const override { return "cpu (" + std::to_string(pool_.n_threads()) + " threads)"; }

    Tensor alloc(std::vector<int64_t> shape) override {
        Tensor t;
        t.shape = std::move(shape);
        check_shape(t.shape, "alloc");
        t.buffer = std::make_shared<HostBuffer<float>>(static_cast<size_t>(t.n_elements()), memory_);
        return t;
    }

    Weight alloc_weight(Quantization type, int64_t n_out, int64_t n_in, int64_t group_size) override {
        const QuantizedLayout layout = quantized_layout(type, n_out, n_in, group_size);
        Weight t;
        t.type = type;
        t.n_out = n_out;
        t.n_in = n_in;
        t.group_size = layout.group_size;
        t.data = std::make_shared<HostBuffer<int8_t>>(static_cast<size_t>(layout.n_packed_bytes), memory_);
        t.scales = alloc({layout.n_scales});  // [n_out * n_in / group_size], none for BF16
        return t;
    }

    void write_weight(const Weight& dst, const QuantizedWeights& w) override {
        check_write_weight(dst, w);
        std::copy(w.q.begin(), w.q.end(), static_cast<int8_t*>(dst.data->data()));
        std::copy(w.scales.begin(), w.scales.end(), dst.scales.f32());
    }

    MemoryStats memory_stats() const override { return {memory_->in_use.load(), memory_->peak.load()}; }

    int64_t total_memory() const override {
        return static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
    }

    void reset_peak() override { memory_->peak.store(memory_->in_use.load()); }

    Tensor upload(std::span<const float> values, std::vector<int64_t> shape) override {
        Tensor t = alloc(std::move(shape));
        check_upload(t, static_cast<int64_t>(values.size()));
        std::copy(values.begin(), values.end(), t.f32());
        return t;
    }

    Tensor upload(std::span<const std::span<const float>> parts, std::vector<int64_t> shape) override {
        Tensor t = alloc(std::move(shape));
        check_upload(t, total_size(parts));
        float* dst = t.f32();
        for (const std::span<const float> part : parts) {
            dst = std::copy(part.begin(), part.end(), dst);
        }
        return t;
    }

    Tensor upload_levels(std::span<const std::span<const uint8_t>> parts, std::span<const float> table,
                         int64_t channel_size, std::vector<int64_t> shape) override {
        Tensor t = alloc(std::move(shape));
        update_levels(t, parts, table, channel_size);
        return t;
    }

    void update_levels(Tensor& t, std::span<const std::span<const uint8_t>> parts,
                       std::span<const float> table, int64_t channel_size) override {
        check_update_f32(t, t.n_elements());
        check_upload_levels(t, total_size(parts), static_cast<int64_t>(table.size()), channel_size);
        const int64_t row = t.row_size();
        float* dst = t.f32();
        int64_t e = 0;  // element of the row
        for (const std::span<const uint8_t> part : parts) {
            for (const uint8_t level : part) {
                *dst++ = table[static_cast<size_t>(e / channel_size * 256 + level)];
                e = e + 1 == row ? 0 : e + 1;
            }
        }
    }

    Tensor upload_i32(std::span<const int32_t> values, std::vector<int64_t> shape) override {
        Tensor t = alloc(std::move(shape));
        t.dtype = ScalarType::I32;
        update(t, values);
        return t;
    }

    void update(Tensor& t, std::span<const int32_t> values) override {
        check_update(t, values);
        std::copy(values.begin(), values.end(), t.i32());
    }

    void update(Tensor& t, std::span<const std::span<const float>> parts) override {
        check_update_f32(t, total_size(parts));
        float* dst = t.f32();
        for (const std::span<const float> part : parts) {
            dst = std::copy(part.begin(), part.end(), dst);
        }
    }

    std::vector<float> download(const Tensor& t) override {
        if (t.dtype == ScalarType::Q8) {
            const int64_t row = t.shape.back();
            return dequantize_q8_rows(t.q8_levels(), t.q8_scales(), t.n_elements() / row, row);
        }
        return {t.f32(), t.f32() + t.n_elements()};
    }

    std::vector<int32_t> download_i32(const Tensor& t) override {
        check_i32(t, t.shape, "download_i32", "t");
        return {t.i32(), t.i32() + t.n_elements()};
    }

    void download(const Tensor& t, std::span<const std::span<float>> parts) override {
        check_download_parts(t, ScalarType::F32, total_size(parts));
        copy_to_parts<float>(t.f32(), parts);
    }

    void download_i32(const Tensor& t, std::span<const std::span<int32_t>> parts) override {
        check_download_parts(t, ScalarType::I32, total_size(parts));
        copy_to_parts<int32_t>(t.i32(), parts);
    }

    Tensor copy(const Tensor& t) override { return upload(std::span(t.f32(), t.n_elements()), t.shape); }

    using Backend::linear;

    // The product in one pass, everything else as its parts (linear_in_parts).
    Tensor linear(const Tensor& x, const Weight& w, const LinearSpec& spec) override {
        check_linear(x, w, spec);
        if (spec.norm != LinearNorm::None || spec.activation != Activation::None ||
            spec.output != LinearOutputKind::Plain || spec.residual != nullptr) {
            return linear_in_parts(x, w, spec);
        }
        return w.type == Quantization::None ? dense_product(x, w.dense, spec.bias)
                                            : packed_product(x, w, spec.bias);
    }

    Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, float eps) override {
        check_layer_norm(x, w, b);
        const int64_t d = x.row_size();
        Tensor y = alloc(x.shape);
        rows_parallel(x.rows(), [&](int64_t r) {
            const float* xr = x.f32() + r * d;
            float* yr = y.f32() + r * d;
            double mean = 0.0;
            for (int64_t i = 0; i < d; ++i) {
                mean += xr[i];
            }
            mean /= static_cast<double>(d);
            double var = 0.0;
            for (int64_t i = 0; i < d; ++i) {
                var += (xr[i] - mean) * (xr[i] - mean);
            }
            var /= static_cast<double>(d);
            const double inv = 1.0 / std::sqrt(var + eps);
            for (int64_t i = 0; i < d; ++i) {
                yr[i] = static_cast<float>((xr[i] - mean) * inv) * w.f32()[i] + b.f32()[i];
            }
        });
        return y;
    }

    Tensor rms_norm(const Tensor& x, const Tensor& w, float eps) override {
        check_rms_norm(x, w);
        const int64_t d = x.row_size();
        Tensor y = alloc(x.shape);
        rows_parallel(x.rows(), [&](int64_t r) {
            const float* xr = x.f32() + r * d;
            float* yr = y.f32() + r * d;
            double ss = 0.0;
            for (int64_t i = 0; i < d; ++i) {
                ss += static_cast<double>(xr[i]) * xr[i];
            }
            const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(d) + eps));
            for (int64_t i = 0; i < d; ++i) {
                yr[i] = w.f32()[i] * (xr[i] * inv);
            }
        });
        return y;
    }

    void add(Tensor& x, const Tensor& y) override {
        check_same_shape(x, y, "add");
        float* xd = x.f32();
        const float* yd = y.f32();
        pool_.parallel_for(x.n_elements(), 1 << 14, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
                xd[i] += yd[i];
            }
        });
    }

    void gelu_tanh(Tensor& x) override {
        map(x, [](float v) {
            constexpr float k = 0.7978845608028654f;  // sqrt(2 / pi)
            return 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
        });
    }

    void gelu_erf(Tensor& x) override {
        map(x, [](float v) { return 0.5f * v * (1.0f + std::erf(v * 0.7071067811865476f)); });
    }

    Tensor swiglu(const Tensor& gate_up) override {
        check_swiglu(gate_up);
        const int64_t n = gate_up.shape[0], d = gate_up.shape[1] / 2;
        Tensor y = alloc({n, d});
        rows_parallel(n, [&](int64_t r) {
            const float* g = gate_up.f32() + r * 2 * d;  // [d]
            const float* u = g + d;                      // [d]
            float* yr = y.f32() + r * d;                 // [d]
            for (int64_t i = 0; i < d; ++i) {
                yr[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
            }
        });
        return y;
    }

    void rope(Tensor& x, const Tensor& cos, const Tensor& sin) override {
        check_rope(x, cos, sin);
        const int64_t n_head = x.shape[1], hd = x.shape[2], half = hd / 2;
        rows_parallel(x.rows(), [&](int64_t r) {
            const float* c = cos.f32() + r * hd;
            const float* s = sin.f32() + r * hd;
            for (int64_t h = 0; h < n_head; ++h) {
                float* v = x.f32() + (r * n_head + h) * hd;
                for (int64_t i = 0; i < half; ++i) {
                    const float a = v[i], b = v[i + half];
                    v[i] = a * c[i] - b * s[i];
                    v[i + half] = b * c[i + half] + a * s[i + half];
                }
            }
        });
    }

    // Float32 whatever the precision asked for.
    Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v,
                     std::span<const AttentionSegment> segments, float scale, AttentionPrecision) override {
        check_attention(q, k, v, segments);
        const int64_t n_head = q.shape[1], n_kv_head = k.shape[1], hd = q.shape[2];
        const int64_t group = n_head / n_kv_head;
        Tensor out = alloc(q.shape);
        for_each_query_head(
            segments, n_head,
            [&](const AttentionSegment& seg, int64_t qi, int64_t h, std::vector<float>& scores) {
                const int64_t kvh = h / group;
                const int64_t n_visible =
                    seg.causal ? std::clamp<int64_t>(seg.q_pos_offset + qi + 1, 0, seg.n_kv) : seg.n_kv;
                const auto row = [&](int64_t j) { return ((seg.kv_begin + j) * n_kv_head + kvh) * hd; };
                attend_row(q.f32() + ((seg.q_begin + qi) * n_head + h) * hd, k.f32(), v.f32(), row, n_visible,
                           hd, scale, scores, out.f32() + ((seg.q_begin + qi) * n_head + h) * hd);
            });
        return out;
    }

    Tensor paged_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                           std::span<const PagedSequence> seqs, std::span<const int32_t> block_tables,
                           int64_t block_size, float scale, AttentionPrecision) override {
        check_paged_attention(q, k_cache, v_cache, seqs, block_tables, block_size);
        check_kv_dtype(name(), k_cache.dtype, ScalarType::F32);
        const int64_t n_head = q.shape[1], n_kv_head = k_cache.shape[1], hd = q.shape[2];
        const int64_t group = n_head / n_kv_head;
        Tensor out = alloc(q.shape);
        for_each_query_head(
            seqs, n_head, [&](const PagedSequence& s, int64_t qi, int64_t h, std::vector<float>& scores) {
                const int64_t kvh = h / group;
                const int64_t n_visible = s.n_kv - s.n_q + qi + 1;
                const auto row = [&](int64_t pos) {
                    const int64_t slot =
                        static_cast<int64_t>(block_tables[s.table_begin + pos / block_size]) * block_size +
                        pos % block_size;
                    return (slot * n_kv_head + kvh) * hd;
                };
                const float* qv = q.f32() + ((s.q_begin + qi) * n_head + h) * hd;
                float* ov = out.f32() + ((s.q_begin + qi) * n_head + h) * hd;
                if (k_cache.dtype == ScalarType::Q8) {
                    thread_local std::vector<float> key_row, value_row;
                    attend_row_at(
                        qv, [&](int64_t j) { return q8_row(k_cache, row(j), hd, key_row); },
                        [&](int64_t j) { return q8_row(v_cache, row(j), hd, value_row); }, n_visible, hd,
                        scale, scores, ov);
                } else {
                    attend_row(qv, k_cache.f32(), v_cache.f32(), row, n_visible, hd, scale, scores, ov);
                }
            });
        return out;
    }

    Tensor rope_qkv_to_cache(const Tensor& qkv, const Tensor& positions, const Tensor& slots,
                             const RopeParams& rope, Tensor& k_cache, Tensor& v_cache) override {
        check_rope_qkv_to_cache(qkv.shape, positions, slots, rope, k_cache, v_cache);
        check_kv_dtype(name(), k_cache.dtype, ScalarType::F32);
        const int64_t n = qkv.shape[0], n_kv_head = k_cache.shape[1], hd = k_cache.shape[2], half = hd / 2;
        const int64_t n_head = qkv.shape[1] / hd - 2 * n_kv_head, n_slots = k_cache.shape[0];
        for (int64_t r = 0; r < n; ++r) {
            if (slots.i32()[r] >= n_slots) {
                fail("rope_qkv_to_cache: cache row ", slots.i32()[r], " of token ", r,
                     " outside the cache of ", n_slots);
            }
        }
        Tensor q = alloc({n, n_head, hd});
        rows_parallel(n, [&](int64_t r) {
            const float* row = qkv.f32() + r * (n_head + 2 * n_kv_head) * hd;  // [n_head + 2 n_kv_head, hd]
            const int64_t slot = slots.i32()[r];
            std::vector<float> c(static_cast<size_t>(half)), s(static_cast<size_t>(half));
            for (int64_t i = 0; i < half; ++i) {
                const int32_t axis = rope.pair_axis.i32()[i];
                if (axis < 0 || axis >= rope.n_axes) {
                    fail("rope_qkv_to_cache: frequency ", i, " turns with axis ", axis, " of ", rope.n_axes);
                }
                const float angle =
                    static_cast<float>(positions.i32()[r * rope.n_axes + axis]) * rope.inv_freq.f32()[i];
                c[i] = std::cos(angle);
                s[i] = std::sin(angle);
            }
            const bool q8 = k_cache.dtype == ScalarType::Q8;
            std::vector<float> turned(q8 ? static_cast<size_t>(hd) : 0);
            for (int64_t h = 0; h < n_head + n_kv_head; ++h) {
                const int64_t at = (slot * n_kv_head + h - n_head) * hd;  // the key head's cache row
                float* dst = h < n_head ? q.f32() + (r * n_head + h) * hd
                             : slot < 0 ? nullptr
                             : q8       ? turned.data()
                                        : k_cache.f32() + at;
                for (int64_t i = 0; dst != nullptr && i < half; ++i) {
                    const float a = row[h * hd + i], b = row[h * hd + i + half];
                    dst[i] = a * c[i] - b * s[i];
                    dst[i + half] = b * c[i] + a * s[i];
                }
                if (h >= n_head && slot >= 0 && q8) {
                    quantize_q8_rows(turned.data(), 1, hd, k_cache.q8_levels() + at,
                                     k_cache.q8_scales() + at / hd);
                }
            }
            if (slot >= 0 && q8) {
                quantize_q8_rows(row + (n_head + n_kv_head) * hd, n_kv_head, hd,
                                 v_cache.q8_levels() + slot * n_kv_head * hd,
                                 v_cache.q8_scales() + slot * n_kv_head);
            } else if (slot >= 0) {
                std::copy_n(row + (n_head + n_kv_head) * hd, n_kv_head * hd,
                            v_cache.f32() + slot * n_kv_head * hd);
            }
        });
        return q;
    }

    Tensor paged_decode_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                                  const Tensor& seq_lens, const Tensor& block_tables, int64_t block_size,
                                  float scale, AttentionPrecision) override {
        check_paged_decode_attention(q, k_cache, v_cache, seq_lens, block_tables, block_size);
        const int64_t max_blocks = block_tables.shape[1];
        std::vector<PagedSequence> seqs;
        for (int64_t i = 0; i < q.shape[0]; ++i) {
            const int64_t n_kv = seq_lens.i32()[i];
            if (n_kv < 0 || n_kv > max_blocks * block_size) {
                fail("paged_decode_attention: sequence ", i, " of length ", n_kv, " beyond its ", max_blocks,
                     " blocks of ", block_size);
            }
            if (n_kv > 0) {
                seqs.push_back({i, 1, n_kv, i * max_blocks});
            }
        }
        return paged_attention(q, k_cache, v_cache, seqs,
                               std::span<const int32_t>(block_tables.i32(), block_tables.n_elements()),
                               block_size, scale, AttentionPrecision::F32);
    }

    void argmax_rows_to(const Tensor& x, Tensor& out) override {
        check_argmax_rows(x);
        check_i32(out, {x.rows()}, "argmax_rows", "out");
        const int64_t d = x.row_size();
        rows_parallel(x.rows(), [&](int64_t r) {
            const float* row = x.f32() + r * d;
            out.i32()[r] = static_cast<int32_t>(std::max_element(row, row + d) - row);
        });
    }

    void sample_rows_to(const Tensor& logits, std::span<const RowSampling> rows,
                        std::span<const int32_t> history, Tensor& out) override {
        check_sample_rows(logits, rows, history);
        check_i32(out, {logits.rows()}, "sample_rows", "out");
        const int64_t vocab = logits.row_size();
        rows_parallel(logits.rows(), [&](int64_t r) {
            const float* row = logits.f32() + r * vocab;
            std::vector<float> values(row, row + vocab);  // [vocab], penalised and scaled by choose_token
            out.i32()[r] = choose_token(values, rows[r], history);
        });
    }

    std::unique_ptr<TokenReadback> read_back(const Tensor& values) override {
        check_i32(values, {values.n_elements()}, "read_back", "values");
        return ready_readback(std::vector<int32_t>(values.i32(), values.i32() + values.n_elements()));
    }

    Tensor gather_rows(const Tensor& src, std::span<const int64_t> rows) override {
        check_gather_rows(src, rows);
        const int64_t d = src.row_size();
        std::vector<int64_t> shape{static_cast<int64_t>(rows.size())};  // src's shape with rows.size() rows
        shape.insert(shape.end(), src.shape.begin() + 1, src.shape.end());
        Tensor out = alloc(shape);
        for (size_t i = 0; i < rows.size(); ++i) {
            std::memcpy(out.f32() + static_cast<int64_t>(i) * d, src.f32() + rows[i] * d, d * sizeof(float));
        }
        return out;
    }

    Tensor gather_rows(const Tensor& src, const Tensor& rows) override {
        check_gather_rows(src, rows);
        const std::vector<int64_t> indices(rows.i32(), rows.i32() + rows.n_elements());
        return gather_rows(src, indices);
    }

    Tensor gather_token_rows(const Tensor& table, const Tensor& ids, const Tensor& pending) override {
        check_gather_token_rows(table, ids, pending);
        std::vector<int64_t> rows(static_cast<size_t>(ids.n_elements()));
        for (size_t i = 0; i < rows.size(); ++i) {
            int64_t id = ids.i32()[i];
            if (id < 0) {
                if (-id > pending.n_elements()) {
                    fail("gather_token_rows: id ", i, " is ", id, ", a pending token beyond the ",
                         pending.n_elements(), " pending");
                }
                id = pending.i32()[-id - 1];
            }
            if (id < 0 || id >= table.rows()) {
                fail("gather_token_rows: token ", id, " of id ", i, " outside the table's ", table.rows(),
                     " rows");
            }
            rows[i] = id;
        }
        return gather_rows(table, rows);
    }

    void add_weighted_rows(Tensor& x, const Tensor& src, std::span<const int64_t> rows,
                           std::span<const float> weights) override {
        const int64_t n_taps = check_add_weighted_rows(x, src, rows, weights);
        const int64_t d = x.row_size();
        float* xd = x.f32();
        const float* sd = src.f32();
        for (int64_t i = 0; i < x.rows(); ++i) {
            for (int64_t c = 0; c < d; ++c) {
                float sum = 0.0f;
                for (int64_t t = i * n_taps; t < (i + 1) * n_taps; ++t) {
                    sum += weights[t] * sd[rows[t] * d + c];
                }
                xd[i * d + c] += sum;
            }
        }
    }

    ExpertRouting route_experts(const Tensor& logits, const Tensor& score_bias, int k,
                                float norm_min) override {
        check_route_experts(logits, score_bias, k, norm_min);
        const ExpertChoice choice =
            route_top_k(std::span(logits.f32(), logits.n_elements()),
                        std::span(score_bias.f32(), score_bias.n_elements()), k, norm_min);
        const int64_t n = logits.rows();
        return {upload_i32(choice.experts, {n, k}), upload(choice.weights, {n, k})};
    }

    Tensor expert_rows_linear(const Tensor& x, const Weight& w, const Tensor& experts, int64_t n_rows,
                              int64_t x_step, Activation act) override {
        const std::vector<int64_t> shape = check_expert_rows_linear(x, w, experts, n_rows, x_step, act);
        const int64_t m = shape[0], n_out = shape[1], in = w.n_in, n_experts = w.n_out / n_rows;
        for (int64_t r = 0; r < m; ++r) {
            if (experts.i32()[r] < 0 || experts.i32()[r] >= n_experts) {
                fail("expert_rows_linear: expert ", experts.i32()[r], " of row ", r, " outside ", n_experts,
                     " experts");
            }
        }
        Tensor y = alloc(shape);  // [m, n_out]
        pool_.parallel_for(m, 1, [&](int64_t begin, int64_t end) {
            std::vector<float> row(static_cast<size_t>(in)), sums(static_cast<size_t>(n_rows));
            for (int64_t r = begin; r < end; ++r) {
                const int32_t e = experts.i32()[r];
                const float* xr = x.f32() + (r / x_step) * in;
                for (int64_t o = 0; o < n_rows; ++o) {
                    const int64_t wr = e * n_rows + o;
                    const float* wv = w.dense.empty() ? nullptr : w.dense.f32() + wr * in;
                    if (wv == nullptr) {
                        dequantize_row(w.type, static_cast<const int8_t*>(w.data->data()) + w.data_offset,
                                       w.scales.empty() ? nullptr : w.scales.f32(), in, w.group_size, wr,
                                       row.data());
                        wv = row.data();
                    }
                    float acc = 0.0f;
                    for (int64_t c = 0; c < in; ++c) {
                        acc += xr[c] * wv[c];
                    }
                    sums[static_cast<size_t>(o)] = acc;
                }
                float* yr = y.f32() + r * n_out;
                for (int64_t o = 0; o < n_out; ++o) {
                    const float g = sums[static_cast<size_t>(o)];
                    yr[o] = act == Activation::Swiglu
                                ? g / (1.0f + std::exp(-g)) * sums[static_cast<size_t>(o + n_out)]
                                : g;
                }
            }
        });
        return y;
    }

    void add_expert_outputs(Tensor& x, const Tensor& src, const Tensor& weights) override {
        check_add_expert_outputs(x, src, weights);
        const int64_t d = x.row_size(), k = weights.shape[1];
        for (int64_t i = 0; i < x.rows(); ++i) {
            for (int64_t c = 0; c < d; ++c) {
                float sum = 0.0f;
                for (int64_t j = 0; j < k; ++j) {
                    sum += weights.f32()[i * k + j] * src.f32()[(i * k + j) * d + c];
                }
                x.f32()[i * d + c] += sum;
            }
        }
    }

    ExpertRouting merge_expert_routings(const ExpertRouting& a, const ExpertRouting& b, const Tensor& use_b,
                                        int b_first) override {
        check_merge_expert_routings(a, b, use_b, b_first);
        const int64_t n = a.experts.shape[0], k = a.experts.shape[1];
        std::vector<int32_t> experts(static_cast<size_t>(n * k));
        std::vector<float> weights(experts.size());
        for (int64_t i = 0; i < n * k; ++i) {
            const bool from_b = use_b.i32()[i / k] != 0;
            experts[static_cast<size_t>(i)] = from_b ? b.experts.i32()[i] + b_first : a.experts.i32()[i];
            weights[static_cast<size_t>(i)] = from_b ? b.weights.f32()[i] : a.weights.f32()[i];
        }
        return {upload_i32(experts, {n, k}), upload(weights, {n, k})};
    }

    // A counting sort, stable: within an expert the pairs keep their order.
    ExpertOrder order_by_expert(const Tensor& experts, int n_experts) override {
        check_order_by_expert(experts, n_experts);
        const int64_t n_pairs = experts.n_elements(), k = experts.shape[1];
        std::vector<int32_t> offsets(static_cast<size_t>(n_experts) + 1, 0);
        for (int64_t p = 0; p < n_pairs; ++p) {
            const int32_t e = experts.i32()[p];
            if (e < 0 || e >= n_experts) {
                fail("order_by_expert: expert ", e, " of pair ", p, " outside ", n_experts, " experts");
            }
            ++offsets[static_cast<size_t>(e) + 1];
        }
        for (size_t e = 0; e + 1 < offsets.size(); ++e) {
            offsets[e + 1] += offsets[e];
        }
        std::vector<int32_t> cursor(offsets.begin(), offsets.end() - 1);
        std::vector<int32_t> rows(static_cast<size_t>(n_pairs)), slots(rows.size());
        for (int64_t p = 0; p < n_pairs; ++p) {
            const int32_t s = cursor[static_cast<size_t>(experts.i32()[p])]++;
            rows[static_cast<size_t>(s)] = static_cast<int32_t>(p / k);
            slots[static_cast<size_t>(p)] = s;
        }
        return {upload_i32(offsets, {n_experts + 1}), upload_i32(rows, {n_pairs}),
                upload_i32(slots, {n_pairs})};
    }

    void grouped_expert_linear(const Tensor& x, const Weight& w, const Tensor& offsets, int first,
                               int64_t n_rows, Activation act, Tensor& y) override {
        check_grouped_expert_linear(x, w, offsets, first, n_rows, act, y);
        const int64_t n_w = w.n_out / n_rows, d = x.row_size(), n_y = y.row_size();
        LinearSpec spec;
        spec.activation = act;
        for (int64_t j = 0; j < n_w; ++j) {
            const int32_t begin = offsets.i32()[first + j], end = offsets.i32()[first + j + 1];
            if (begin < 0 || end < begin || end > x.rows()) {
                fail("grouped_expert_linear: expert ", first + j, "'s rows [", begin, ", ", end, ") outside ",
                     x.rows(), " rows");
            }
            if (begin == end) {
                continue;
            }
            const Tensor rows = x.view(begin * d, {end - begin, d});
            const Tensor out = linear(rows, weight_rows(w, j * n_rows, n_rows), spec);  // [end - begin, n_y]
            std::memcpy(y.f32() + begin * n_y, out.f32(),
                        static_cast<size_t>((end - begin) * n_y) * sizeof(float));
        }
    }

    void scatter_rows(Tensor& dst, std::span<const int64_t> rows, const Tensor& src) override {
        check_scatter_rows(dst, rows, src);
        const int64_t d = dst.row_size();
        for (size_t i = 0; i < rows.size(); ++i) {
            std::memcpy(dst.f32() + rows[i] * d, src.f32() + static_cast<int64_t>(i) * d, d * sizeof(float));
        }
    }

    void scatter_rows(Tensor& dst, const Tensor& rows, const Tensor& src) override {
        check_scatter_rows(dst, rows, src);
        const std::vector<int64_t> indices(rows.i32(), rows.i32() + rows.n_elements());
        scatter_rows(dst, indices, src);
    }

protected:
    ThreadPool& thread_pool() override { return pool_; }

private:
    // y = x · wᵀ + b with a float32 w.  x [n, in], w [out, in], b [out] or null  ->  [n, out]
    Tensor dense_product(const Tensor& x, const Tensor& w, const Tensor* b) {
        Tensor y = alloc({x.rows(), w.rows()});
        cpu::dense_product(pool_, x.f32(), w.f32(), b ? b->f32() : nullptr, y.f32(), x.rows(), x.row_size(),
                           w.rows());
        return y;
    }

    // The same with packed weights; FP8 weights read x's rows rounded to E4M3 as the tensor cores' FP8
    // product reads them.
    Tensor packed_product(const Tensor& x_in, const Weight& w, const Tensor* b) {
        Tensor x = x_in;
        if (w.type == Quantization::Fp8) {
            x = copy(x_in);
            round_rows_to_fp8(std::span(x.f32(), static_cast<size_t>(x.n_elements())), x.row_size());
        }
        Tensor y = alloc({x.rows(), w.n_out});
        cpu::packed_product(pool_, x.f32(), w, b ? b->f32() : nullptr, y.f32(), x.rows());
        return y;
    }

    // fn(item, query row, head, scratch) for every query row of every item (a segment or a sequence, each
    // with n_q rows) and every head, one task each, in parallel.
    template <typename Item, typename F>
    void for_each_query_head(std::span<const Item> items, int64_t n_head, F&& fn) {
        std::vector<int64_t> start(items.size() + 1, 0);
        for (size_t i = 0; i < items.size(); ++i) {
            start[i + 1] = start[i] + items[i].n_q * n_head;
        }
        pool_.parallel_for(start.back(), 4, [&](int64_t begin, int64_t end) {
            std::vector<float> scores;
            for (int64_t task = begin; task < end; ++task) {
                const size_t i = std::upper_bound(start.begin(), start.end(), task) - start.begin() - 1;
                const int64_t local = task - start[i];
                fn(items[i], local / n_head, local % n_head, scores);
            }
        });
    }

    template <typename F>
    void rows_parallel(int64_t n_rows, F&& fn) {
        pool_.parallel_for(n_rows, 1, [&](int64_t b, int64_t e) {
            for (int64_t r = b; r < e; ++r) {
                fn(r);
            }
        });
    }

    template <typename F>
    void map(Tensor& x, F&& fn) {
        float* xd = x.f32();
        pool_.parallel_for(x.n_elements(), 1 << 14, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
                xd[i] = fn(xd[i]);
            }
        });
    }

    ThreadPool pool_;
    std::shared_ptr<MemoryCounter> memory_ = std::make_shared<MemoryCounter>();
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int n_threads) {
    return std::make_unique<CpuBackend>(n_threads);
}

}  // namespace folio
