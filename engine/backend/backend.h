// The operations the models run. A backend (CPU reference, CUDA) implements them over its own memory, so
// that model code is written once. All tensors are row-major; shapes are given in the comments.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/backend/activation.h"
#include "engine/backend/backend-vision.h"
#include "engine/backend/quantization.h"
#include "engine/backend/sampling.h"
#include "engine/backend/tensor.h"

namespace folio {

// One block of attention: queries [q_begin, q_begin + n_q) attend to keys [kv_begin, kv_begin + n_kv).
// With causal set, query i (0-based in the block) sees keys up to kv position q_pos_offset + i.
struct AttentionSegment {
    int64_t q_begin = 0;
    int64_t n_q = 0;
    int64_t kv_begin = 0;
    int64_t n_kv = 0;
    bool causal = false;
    int64_t q_pos_offset = 0;
};

// One sequence of a batch whose keys and values live in a paged cache. Its n_q queries are the rows
// [q_begin, q_begin + n_q) of the batch; it has n_kv tokens in the cache, the new ones included, so query i
// sits at position n_kv - n_q + i and sees the keys at positions [0, n_kv - n_q + i]. Position p is stored
// in slot block_tables[table_begin + p / block_size] * block_size + p % block_size of the cache.
struct PagedSequence {
    int64_t q_begin = 0;
    int64_t n_q = 0;
    int64_t n_kv = 0;
    int64_t table_begin = 0;
};

// A weight matrix [n_out, n_in] in a backend's memory, in any format a linear layer is stored in: float32
// (type None, in dense), bfloat16, or WINT8/WINT4 (packed as QuantizedWeights::q in data, with scales).
// Backend::linear takes every format, so that callers never branch on it.
struct Weight {
    Quantization type = Quantization::None;
    int64_t n_out = 0;
    int64_t n_in = 0;
    int64_t group_size = 0;
    Tensor dense;                  // float32 [n_out, n_in] where type is None
    std::shared_ptr<Buffer> data;  // the packed values of the other types, laid out as QuantizedWeights::q
    int64_t data_offset = 0;       // bytes of data before row 0 (a view of some rows of a larger weight)
    Tensor scales;                 // as QuantizedWeights::scales

    bool empty() const { return dense.empty() && data == nullptr; }
};

// A float32 weight over w's values, sharing its buffer.  w [n_out, n_in]
Weight dense_weight(const Tensor& w);
// Rows [first, first + n) of w, sharing its memory (one expert's rows of a pool stacked in one weight).
Weight weight_rows(const Weight& w, int64_t first, int64_t n);

// A mixture of experts' routing on the backend: each token's chosen experts and their weights.
struct ExpertRouting {
    Tensor experts;  // [n, k] int32
    Tensor weights;  // [n, k]
};

// A pool of routed experts and the shared experts every token passes, as add_routed_experts runs them.
struct ExpertLayer {
    Tensor router;          // [n_experts, d] float32
    Tensor score_bias;      // [n_experts]
    Weight gate_up;         // [n_experts · 2 d_ff, d]: each expert's gate rows, then its up rows
    Weight down;            // [n_experts · d, d_ff]
    Weight shared_gate_up;  // [2 d_shared, d]: the gate rows, then the up rows; empty for no shared experts
    Weight shared_down;     // [d, d_shared]; empty for no shared experts
    int k = 0;              // experts a token
    float norm_min = 0.0f;  // the least sum route_experts divides the chosen probabilities by
    Tensor norm_w;          // [d]: an RMSNorm the input passes first; empty where it is normalized already
    float norm_eps = 0.0f;
};

// A routing's (token, choice) pairs grouped by expert, on the backend: the slots [offsets[e], offsets[e + 1])
// hold expert e's pairs (in no set order within an expert).
struct ExpertOrder {
    Tensor offsets;  // [n_experts + 1] int32
    Tensor rows;     // [n k] int32: the token of each slot
    Tensor slots;    // [n k] int32: the slot of each pair, pair i k + j being token i's choice j
};

// Rotary embedding in rotate-half form (pair i of a head is its values i and i + head_dim / 2) from int32
// positions of n_axes axes a token: frequency i turns with the token's position on axis pair_axis[i] (a
// text model's one axis; a multimodal RoPE's temporal, height and width axes, in contiguous sections or
// interleaved, as the model's RotaryLayout says).
struct RopeParams {
    Tensor inv_freq;   // [head_dim / 2] float32
    Tensor pair_axis;  // [head_dim / 2] int32, each in [0, n_axes)
    int n_axes = 1;
};

// The norm a linear operation applies to each row of its input first.
enum class LinearNorm {
    None,
    Rms,    // norm_w ⊙ x / rms(x)
    Layer,  // (x - mean) / std ⊙ norm_w + norm_b
};

// Where a linear operation's rows go.
enum class LinearOutputKind {
    Plain,        // returned (or added to the residual)
    RopeToCache,  // split into q, k and v heads, q and k turned, k and v stored in a paged cache, q returned
};

// The q, k and v heads of a RopeToCache output: q, k and v are the product's columns in that order, n_head,
// n_kv_head and n_kv_head heads of head_dim; q and k turn by each token's positions, k and v go to the
// token's cache row (not where the row is negative: padding).  positions [n, 3] and slots [n] int32, caches
// [n_slots, n_kv_head, head_dim] of one element type (float32 or Backend::kv_dtype)
struct RopeToCache {
    const Tensor* positions = nullptr;
    const Tensor* slots = nullptr;
    const RopeParams* rope = nullptr;
    Tensor* k_cache = nullptr;
    Tensor* v_cache = nullptr;
};

// One linear operation:  y = activation(norm(x) · wᵀ + bias), then y as output says; with residual, the
// residual stream r += y instead (Plain output only). Shapes: x [n, n_in], norm_w/norm_b [n_in], bias
// [n_out], residual [n, columns of y].
struct LinearSpec {
    LinearNorm norm = LinearNorm::None;
    const Tensor* norm_w = nullptr;
    const Tensor* norm_b = nullptr;  // LayerNorm only
    float eps = 0.0f;
    const Tensor* bias = nullptr;
    Activation activation = Activation::None;
    LinearOutputKind output = LinearOutputKind::Plain;
    RopeToCache rope_to_cache{};  // RopeToCache only
    Tensor* residual = nullptr;
    // The output may be returned in bfloat16, where the backend keeps it so for the operation that reads it
    // next (linear without a norm, rope_attention); float32 otherwise. Ignored with a residual or
    // RopeToCache.
    bool bf16_output = false;
};

// The arithmetic of attention's two products. Bf16: q, k, v and the softmax weights may be rounded to
// bfloat16 for the tensor cores, with float32 sums (the bfloat16 bound holds); a backend without such units
// computes float32 as for F32.
enum class AttentionPrecision { F32, Bf16 };

// Work a backend recorded once and runs again on the tensors it was recorded with (a CUDA graph): inputs
// change by writing new values into those tensors with Backend::update.
class RecordedWork {
public:
    virtual ~RecordedWork() = default;
    virtual void replay() = 0;
};

// int32 values on their way to the host: the copy is queued behind the work that makes them, and wait()
// returns them once that work is done, so that the host can queue more work meanwhile.
class TokenReadback {
public:
    virtual ~TokenReadback() = default;
    virtual std::vector<int32_t> wait() = 0;
};

// A readback of values the host already has (backends that run each operation as it is called).
std::unique_ptr<TokenReadback> ready_readback(std::vector<int32_t> values);

class Backend;
// The work `queue` gives the backend, recorded (Backend::begin_recording); where queue throws, the recording
// is ended and that error goes on.
std::unique_ptr<RecordedWork> record_work(Backend& backend, const std::function<void()>& queue);

// A point on a backend's queue, for measuring how long the device took over the work between two points.
class QueueMark {
public:
    virtual ~QueueMark() = default;
    // Seconds from earlier to this mark, once the work queued before this one has run (waiting for it).
    virtual double seconds_since(const QueueMark& earlier) = 0;
};

// Bytes a backend holds in tensors now, and the most it has held since the last reset_peak().
struct MemoryStats {
    int64_t in_use = 0;
    int64_t peak = 0;
};

// Threading: a backend runs its work in order on one queue (the CUDA backend on one stream), and is not safe
// to use from two threads at once: one thread at a time calls its operations, and the tensors it made are
// used only through it. Another thread may take over between calls.
class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;
    // Why FP8 weights (Quantization::Fp8) cannot be used here, naming the device; empty where they can.
    virtual std::string fp8_refusal() const { return {}; }

    // A tensor of zeros.
    virtual Tensor alloc(std::vector<int64_t> shape) = 0;
    virtual Tensor upload(std::span<const float> values, std::vector<int64_t> shape) = 0;
    // The parts one after another as one tensor, never joined on the host first.
    virtual Tensor upload(std::span<const std::span<const float>> parts, std::vector<int64_t> shape) = 0;
    // 8-bit levels, in parts one after another, as float32 values: element e of a row is level v of channel
    // e / channel_size and becomes table[channel * 256 + v]. Only the levels go to the device.
    // parts [shape] levels, table [row_size / channel_size, 256]  ->  [shape]
    virtual Tensor upload_levels(std::span<const std::span<const uint8_t>> parts,
                                 std::span<const float> table, int64_t channel_size,
                                 std::vector<int64_t> shape) = 0;
    // The values of a float32 tensor, or of a bfloat16 one widened to float32.
    virtual std::vector<float> download(const Tensor& t) = 0;
    // The values of an int32 tensor, waiting for the work queued before (read_back is for a few values
    // without waiting).
    virtual std::vector<int32_t> download_i32(const Tensor& t) = 0;
    // The same written straight into the parts one after another, whose sizes add up to the tensor's (a
    // float32 tensor; an int32 one): results that belong to several owners come back without a copy between.
    virtual void download(const Tensor& t, std::span<const std::span<float>> parts) = 0;
    virtual void download_i32(const Tensor& t, std::span<const std::span<int32_t>> parts) = 0;
    virtual Tensor copy(const Tensor& t) = 0;

    // The element type the backend keeps the language model's keys and values in for attention at
    // precision (PagedKvCache): float32, or bfloat16 where the backend's attention reads it and precision
    // allows rounding. Every paged-attention operation reads caches of either type it returns, and Q8
    // caches (8-bit levels with a scale a token and K/V head, on every backend).
    virtual ScalarType kv_dtype(AttentionPrecision precision) const;
    // A zero-filled cache tensor of dtype elements, dtype being float32, Q8 or one kv_dtype() returns.
    virtual Tensor alloc_kv(std::vector<int64_t> shape, ScalarType dtype);
    // A cache tensor holding values rounded to dtype's elements (to the nearest, ties to even; Q8 as
    // quantize_q8_rows makes them).
    virtual Tensor upload_kv(std::span<const float> values, std::vector<int64_t> shape, ScalarType dtype);
    // A table whose rows are gathered a few at a time (a token embedding), of float32 or bfloat16 elements as
    // upload_kv rounds them, read only by gather_rows and gather_token_rows. A device backend keeps it in
    // host memory its device reads directly, so that it takes none of the device's memory; memory_stats does
    // not count it.
    virtual Tensor upload_table(std::span<const float> values, std::vector<int64_t> shape, ScalarType dtype);

    // An int32 tensor, and new values for all of one.
    virtual Tensor upload_i32(std::span<const int32_t> values, std::vector<int64_t> shape) = 0;
    virtual void update(Tensor& t, std::span<const int32_t> values) = 0;
    // New values for all of a float32 tensor, its parts one after another (the inputs of recorded work).
    virtual void update(Tensor& t, std::span<const std::span<const float>> parts) = 0;
    // New values for all of a float32 tensor from 8-bit levels in parts, as upload_levels makes them (the
    // input of a recorded pass that reads images).  parts [t's shape] levels, table [row / channel_size, 256]
    virtual void update_levels(Tensor& t, std::span<const std::span<const uint8_t>> parts,
                               std::span<const float> table, int64_t channel_size) = 0;

    // Packed weights (bfloat16, WINT8, WINT4) into the backend's memory: alloc_weight, then write_weight.
    Weight upload(const QuantizedWeights& w);
    // Memory for packed weights of a type and size (group_size as quantize takes it), their values unset
    // until write_weight: a layer quantized after the rest of its model is loaded takes its place first.
    virtual Weight alloc_weight(Quantization type, int64_t n_out, int64_t n_in, int64_t group_size) = 0;
    // Packed weights into memory alloc_weight made for their type and size.
    virtual void write_weight(const Weight& dst, const QuantizedWeights& w) = 0;
    virtual MemoryStats memory_stats() const = 0;
    // Bytes of memory the backend's device has in all.
    virtual int64_t total_memory() const = 0;
    virtual void reset_peak() = 0;
    // A mark behind the work queued so far (QueueMark). Backends that run each operation as it is called
    // mark the host's clock, which the default does.
    virtual std::unique_ptr<QueueMark> mark_queue();

    // One linear operation as spec describes it (LinearSpec), over w in any format: in one pass where the
    // backend fuses that combination, else as its parts in turn (norm, product, activation, output, residual
    // add). x may be bfloat16 where the backend returned it so (paged_decode_attention, rope_attention,
    // linear with bf16_output), with no norm.  x [n, w.n_in]  ->  y [n, w.n_out] ([n, w.n_out / 2] for
    // SwiGLU; the residual, sharing its buffer, where spec has one); q [n, n_head, head_dim] for RopeToCache
    virtual Tensor linear(const Tensor& x, const Weight& w, const LinearSpec& spec) = 0;
    // y = x · wᵀ + b: linear with only a bias.  x [n, in], w [out, in], b [out] or null  ->  [n, out]
    Tensor linear(const Tensor& x, const Weight& w, const Tensor* b);
    Tensor linear(const Tensor& x, const Tensor& w, const Tensor* b);
    // Row-wise LayerNorm with weight and bias [d].  x [n, d]
    virtual Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, float eps) = 0;
    // Row-wise RMSNorm with weight [d].  x [n, d]
    virtual Tensor rms_norm(const Tensor& x, const Tensor& w, float eps) = 0;
    // x += y, same shape.
    virtual void add(Tensor& x, const Tensor& y) = 0;
    // In-place GELU, tanh approximation / exact erf form.
    virtual void gelu_tanh(Tensor& x) = 0;
    virtual void gelu_erf(Tensor& x) = 0;
    // silu(gate) * up of the two halves of each row.  gate_up [n, 2 d]  ->  [n, d]
    virtual Tensor swiglu(const Tensor& gate_up) = 0;
    // Rotary embedding in rotate-half form, in place.  x [n, n_head, head_dim], cos/sin [n, head_dim]
    virtual void rope(Tensor& x, const Tensor& cos, const Tensor& sin) = 0;
    // Scaled dot-product attention with grouped K/V heads; rows of q in no segment come out zero.
    // q [n_q_total, n_head, head_dim], k/v [n_kv_total, n_kv_head, head_dim]  ->  [n_q_total, n_head,
    // head_dim]
    virtual Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v,
                             std::span<const AttentionSegment> segments, float scale,
                             AttentionPrecision precision) = 0;
    // Attention over stacked q, k and v heads whose q and k are first turned by rope() (the vision encoder's
    // attention): the same as splitting each row of qkv into q, k and v, rope() on q and k, then attention(),
    // which the default does. qkv may be bfloat16 where linear returned it so; the output is then bfloat16
    // too where the backend can keep it so for the product that reads it.  qkv [n, 3, n_head, head_dim],
    // cos/sin [n, head_dim]  ->  [n, n_head, head_dim]
    virtual Tensor rope_attention(const Tensor& qkv, const Tensor& cos, const Tensor& sin,
                                  std::span<const AttentionSegment> segments, float scale,
                                  AttentionPrecision precision);
    // Causal attention of a batch of sequences over their paged caches, grouped K/V heads.
    // q [n_tokens, n_head, head_dim], k_cache/v_cache [n_blocks * block_size, n_kv_head, head_dim]
    //   ->  [n_tokens, n_head, head_dim]
    virtual Tensor paged_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                                   std::span<const PagedSequence> seqs, std::span<const int32_t> block_tables,
                                   int64_t block_size, float scale, AttentionPrecision precision) = 0;
    // The attention input of a decoder over a paged cache: splits qkv into q, k and v heads, turns q and k by
    // each token's positions (RopeParams), stores k and v at the token's cache row (not where the row is
    // negative: padding) and returns q (linear's RopeToCache output on its own).
    // qkv [n, (n_head + 2 n_kv_head) * head_dim], positions [n, rope.n_axes] and slots [n] int32, caches
    // [n_slots, n_kv_head, head_dim]  ->  q [n, n_head, head_dim]
    virtual Tensor rope_qkv_to_cache(const Tensor& qkv, const Tensor& positions, const Tensor& slots,
                                     const RopeParams& rope, Tensor& k_cache, Tensor& v_cache) = 0;
    // paged_attention for a batch of one new token per sequence, its metadata on the device: sequence i has
    // seq_lens[i] tokens in the cache, the new one last, and its blocks in row i of block_tables. A sequence
    // of length 0 (padding) gets zeros; at Bf16 the backend may round q, keys, values and weights to
    // bfloat16 for the tensor cores, as attention() may, and return the outputs as bfloat16 for the products
    // that read them so.  q [n, n_head, head_dim], seq_lens [n] and block_tables [n, max_blocks] int32  ->
    // [n, n_head, head_dim]
    virtual Tensor paged_decode_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                                          const Tensor& seq_lens, const Tensor& block_tables,
                                          int64_t block_size, float scale, AttentionPrecision precision) = 0;
    // The column of the largest value of each row, the first of equal ones (greedy sampling without moving
    // the logits to the host), written to out on the backend without waiting.  x [n, d], out [n] int32
    virtual void argmax_rows_to(const Tensor& x, Tensor& out) = 0;
    // The token choose_token makes for each row of logits with rows[r] (history tokens may repeat; logits
    // are left as they are), written to out without waiting. Every backend makes the same choice up to its
    // float summation order, which can only matter where a running sum lies within rounding of a boundary.
    // logits [n, vocab], rows [n], out [n] int32
    virtual void sample_rows_to(const Tensor& logits, std::span<const RowSampling> rows,
                                std::span<const int32_t> history, Tensor& out) = 0;
    // Starts bringing the values of an int32 tensor to the host behind the work queued so far.  values [n]
    virtual std::unique_ptr<TokenReadback> read_back(const Tensor& values) = 0;
    // argmax_rows_to and sample_rows_to, waited for.  ->  n indices or tokens
    std::vector<int32_t> argmax_rows(const Tensor& x);
    std::vector<int32_t> sample_rows(const Tensor& logits, std::span<const RowSampling> rows,
                                     std::span<const int32_t> history);
    // out[i] = src[rows[i]], in float32 whether src is float32 or (where the backend keeps bfloat16, a table
    // uploaded by upload_kv) bfloat16.  src [n_src, d]  ->  [rows.size(), d]
    virtual Tensor gather_rows(const Tensor& src, std::span<const int64_t> rows) = 0;
    // The same with the row indices in an int32 tensor on the backend.  rows [n]
    virtual Tensor gather_rows(const Tensor& src, const Tensor& rows) = 0;
    // Token embeddings of ids some of which a step still running on the backend samples: out[i] =
    // table[ids[i]], or table[pending[-ids[i] - 1]] where ids[i] is negative.  table [vocab, d], ids [n] and
    // pending [n_pending] int32  ->  [n, d]
    virtual Tensor gather_token_rows(const Tensor& table, const Tensor& ids, const Tensor& pending) = 0;
    // dst[rows[i]] = src[i].  dst [n_dst, d], src [rows.size(), d]
    virtual void scatter_rows(Tensor& dst, std::span<const int64_t> rows, const Tensor& src) = 0;
    // The same with distinct row indices in an int32 tensor on the backend, within dst (a backend that does
    // not check them on the host skips those outside).  rows [n], src [n, d]
    virtual void scatter_rows(Tensor& dst, const Tensor& rows, const Tensor& src) = 0;
    // x[i] += Σ_t weights[i · taps + t] · src[rows[i · taps + t]], the sum taken over t in order first, with
    // taps = rows.size() / n (a table resampled onto each row: the vision position grid).
    // x [n, d], src [n_src, d], rows and weights [n · taps]
    virtual void add_weighted_rows(Tensor& x, const Tensor& src, std::span<const int64_t> rows,
                                   std::span<const float> weights) = 0;

    // Mixture of experts, every operation recordable (their inputs and outputs stay on the backend).
    // Routing (route_top_k of engine/backend/expert-routing.h): for each row the k experts of the largest
    // softmax(logits) + score_bias and their probabilities over the chosen ones' sum, at least norm_min.
    // logits [n, n_experts], score_bias [n_experts]  ->  experts [n, k] int32, weights [n, k]
    virtual ExpertRouting route_experts(const Tensor& logits, const Tensor& score_bias, int k,
                                        float norm_min) = 0;
    // Products with one expert's rows of a pool stacked in one weight: row r of the result is the rows
    // [e · n_rows, (e + 1) · n_rows) of w, e = experts[r], times row r / x_step of x, then act: None, or
    // Swiglu (the block's first half the gate, the second the up rows).
    // x [m / x_step, n_in], w [n_experts · n_rows, n_in], experts [m] int32  ->  [m, n_rows] (Swiglu:
    // n_rows / 2)
    virtual Tensor expert_rows_linear(const Tensor& x, const Weight& w, const Tensor& experts, int64_t n_rows,
                                      int64_t x_step, Activation act) = 0;
    // x[i] += Σ_j weights[i, j] · src[i · k + j], k the columns of weights, the sum taken over j in order.
    // x [n, d], src [n · k, d], weights [n, k]
    virtual void add_expert_outputs(Tensor& x, const Tensor& src, const Tensor& weights) = 0;
    // A decode step's mixture of experts, every row routed to one pool: x[i] += Σ_j w_ij · down_e(SwiGLU(
    // gate_up_e · xn[i])) + shared_down(SwiGLU(shared_gate_up · xn[i])), e = e_ij, the experts e_ij and their
    // weights w_ij as route_experts chooses them from the logits xn · routerᵀ (float32), xn the input, or
    // rms_norm(input, layer.norm_w, layer.norm_eps) where the layer has a norm (input may then be x itself).
    // The default runs the operations above one after another; a backend may fuse them, summing in another
    // order.  x, input [n, d]
    virtual void add_routed_experts(Tensor& x, const Tensor& input, const ExpertLayer& layer);
    // Two pools' routings as one (a model whose text and vision tokens have experts of their own): row i
    // takes b's experts, numbered from b_first, and b's weights where use_b[i] is non-zero, a's otherwise.
    // a and b: experts and weights [n, k], use_b [n] int32  ->  experts [n, k] int32, weights [n, k]
    virtual ExpertRouting merge_expert_routings(const ExpertRouting& a, const ExpertRouting& b,
                                                const Tensor& use_b, int b_first) = 0;
    // The pairs of a routing grouped by expert, for the grouped products of a prompt step. Every expert is
    // in [0, n_experts) (route_experts' and merge_expert_routings' are).  experts [n, k] int32
    virtual ExpertOrder order_by_expert(const Tensor& experts, int n_experts) = 0;
    // Products of rows grouped by expert: for each expert j of w (the experts' n_rows rows one after
    // another), the rows [offsets[first + j], offsets[first + j + 1]) of y are those rows of x times j's
    // rows, then act (None, or Swiglu of each block's halves); y's other rows are left as they are. Backends
    // may round x and packed weights to bfloat16, as a linear layer of more than a few rows does; float32
    // weights keep the product in float32.
    // x [m, n_in], w [n_w · n_rows, n_in], offsets [first + n_w + 1 or more] int32  ->  y [m, n_rows]
    // (Swiglu: n_rows / 2)
    virtual void grouped_expert_linear(const Tensor& x, const Weight& w, const Tensor& offsets, int first,
                                       int64_t n_rows, Activation act, Tensor& y) = 0;

    // Recording: between begin_recording() and end_recording() the backend records the work it is given
    // instead of running it; tensors made meanwhile live in memory kept for recorded work. Nothing may be
    // downloaded or uploaded while recording. Backends that cannot record say so and throw.
    virtual bool can_record() const { return false; }
    virtual void begin_recording();
    virtual std::unique_ptr<RecordedWork> end_recording();

    // ---- Vision operations: the layout models' CNN backbone, hybrid encoder and deformable-attention
    // decoder. Float32 NCHW feature maps (backend-vision.h has the parameters); each returns a new tensor
    // unless it says in place.

    // Convolution with its bias and activation fused (batch norm folded into w and b at load time:
    // fold_batch_norm).  x [n, c_in, h, w], w [c_out, c_in / groups, kh, kw], b [c_out] or null  ->
    // [n, c_out, h_out, w_out]
    virtual Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor* b, const Conv2dParams& p) = 0;
    // Max or average pooling.  x [n, c, h, w]  ->  [n, c, h_out, w_out]
    virtual Tensor pool2d(const Tensor& x, const Pool2dParams& p) = 0;
    // Zero padding of the two spatial axes, pads = {top, bottom, left, right}.  x [n, c, h, w]  ->
    // [n, c, h + top + bottom, w + left + right]
    virtual Tensor pad2d(const Tensor& x, const std::array<int64_t, 4>& pads) = 0;
    // Resampling to out_h x out_w (InterpolateMode).  x [n, c, h, w]  ->  [n, c, out_h, out_w]
    virtual Tensor interpolate2d(const Tensor& x, int64_t out_h, int64_t out_w, InterpolateMode mode) = 0;
    // In place: x = act(x), any activation but Swiglu (which halves each row: swiglu).  x [any]
    virtual void apply_activation(Tensor& x, Activation act) = 0;
    // x * act(y), element by element (a gate: x * sigmoid(y)).  x, y [any, same]  ->  [same]
    virtual Tensor multiply(const Tensor& x, const Tensor& y, Activation y_act) = 0;
    // In place: softmax over the last dimension.  x [..., d]
    virtual void softmax(Tensor& x) = 0;
    // Each group's product a_g · b_gᵀ in float32 (torch.bmm(a, b.transpose(1, 2))).
    // a [g, m, k], b [g, n, k]  ->  [g, m, n]
    virtual Tensor batched_products(const Tensor& a, const Tensor& b) = 0;
    // out's dimension i is x's dimension axes[i] (torch.permute), float32 or int32.  x [d_0, ..., d_r-1]  ->
    // [d_axes[0], ..., d_axes[r-1]]
    virtual Tensor permute(const Tensor& x, std::span<const int> axes) = 0;
    // The parts joined along axis (negative: from the end), float32 or int32.  parts [..., d_i, ...]  ->
    // [..., sum d_i, ...]
    virtual Tensor concat(std::span<const Tensor> parts, int axis) = 0;
    // Bilinear sampling at grid's (x, y) in [-1, 1] (torch.nn.functional.grid_sample, align_corners=False,
    // zero padding).  x [n, c, h, w], grid [n, h_out, w_out, 2]  ->  [n, c, h_out, w_out]
    virtual Tensor grid_sample(const Tensor& x, const Tensor& grid) = 0;
    // Multi-scale deformable attention's core: for each query and head, the sum over levels and points of
    // attention_weights times value's level map sampled bilinearly at sampling_locations (x, y) in [0, 1]
    // (grid_sample at 2 loc - 1).  value [n, s, n_head, d_head], sampling_locations [n, q, n_head, n_levels,
    // n_points, 2], attention_weights [n, q, n_head, n_levels, n_points]  ->  [n, q, n_head * d_head]
    virtual Tensor multi_scale_deformable_attention(const Tensor& value, std::span<const FeatureLevel> levels,
                                                    const Tensor& sampling_locations,
                                                    const Tensor& attention_weights) = 0;
    // The k largest values of each row, largest first, equal values in column order, NaN above all (as
    // torch.topk), and their columns.  x [..., d]  ->  values [..., k] float32, indices [..., k] int32
    virtual TopK top_k(const Tensor& x, int64_t k) = 0;
    // The box around each map's positive positions as (cx, cy, w, h) relative to the map, zeros where none is
    // positive (transformers' mask_to_box_coordinate of x > 0).  x [..., h, w]  ->  [..., 4]
    virtual Tensor mask_boxes(const Tensor& x) = 0;
    // The sampling locations of deformable attention around boxes (cx, cy, w, h): location = centre + offset
    // / n_points · size / 2 (RT-DETR's decoder).  boxes [r, 4], offsets [r, s, 2]  ->  [r, s, 2]
    virtual Tensor box_sample_locations(const Tensor& boxes, const Tensor& offsets, int64_t n_points) = 0;
    // RT-DETR's box refinement in place: boxes = sigmoid(delta + inverse_sigmoid(boxes)), transformers'
    // inverse_sigmoid with eps 1e-5.  boxes [r, 4], delta [r, 4]
    virtual void refine_boxes(Tensor& boxes, const Tensor& delta) = 0;
    // Each pair of tokens' relative position from their boxes (cx, cy, w, h, sizes above 0), scaled:
    // log(|cx_i
    // - cx_j| / w_i + 1), the same for y, log(w_i) - log(w_j), log(h_i) - log(h_j) (PP-DocLayoutV2's reading
    // order).  boxes [n, t, 4]  ->  [n, t, t, 4]
    virtual Tensor pair_relations(const Tensor& boxes, float scale) = 0;
    // The values whose sigmoid, 1 / (1 + exp(-v)) in float32, exceeds threshold, as bits: bit b of a row's
    // word w is its value 32 w + b, the last word's spare bits zero.  x [..., n]  ->  [..., ceil(n / 32)]
    // int32
    virtual Tensor sigmoid_bits(const Tensor& x, float threshold) = 0;
    // Sine and cosine features: row r is sin(x[r] · f) for each f of freqs, then cos(x[r] · f) for each (at
    // most kMaxSinusoidFreqs).  x [n]  ->  [n, 2 · freqs.size()]
    virtual Tensor sinusoid(const Tensor& x, std::span<const float> freqs) = 0;

protected:
    // linear as its parts in turn, each a backend operation: the norm, the product with only spec's bias
    // (linear, which must not come back here for it), the activation, the output and the residual add.
    Tensor linear_in_parts(const Tensor& x, const Weight& w, const LinearSpec& spec);
};

std::unique_ptr<Backend> make_cpu_backend(int n_threads = 0);

// The values of all parts together (T const or not).
template <typename T>
int64_t total_size(std::span<const std::span<T>> parts) {
    int64_t n = 0;
    for (const std::span<T> part : parts) {
        n += static_cast<int64_t>(part.size());
    }
    return n;
}

}  // namespace folio
