#include "engine/models/pp-doclayout/pp-doclayout.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <numeric>

#include "engine/common/error.h"
#include "engine/files/safetensors.h"
#include "engine/image/image-preprocess.h"
#include "engine/layout/layout-labels.h"
#include "engine/models/pp-doclayout/detr-decoder.h"
#include "engine/models/pp-doclayout/hgnet-backbone.h"
#include "engine/models/pp-doclayout/hybrid-encoder.h"
#include "engine/models/pp-doclayout/reading-order.h"

namespace folio {

namespace {

// Pages larger than this many pixels are refused before any work (the layout model sees 800x800).
constexpr int64_t kMaxPagePixels = 20000LL * 20000LL - 1;

// The score of a logit, as transformers' post-processing computes it.
float score_of(float logit) {
    return 1.0f / (1.0f + std::exp(-logit));
}

// Whether a V2 query enters the reading order: the sigmoid of its best logit reaches its class's threshold.
// Its best class, or -1 where it does not.
int v2_kept_class(const float* logits, size_t n_classes, const PpDocLayoutConfig& config) {
    const auto best = static_cast<size_t>(std::max_element(logits, logits + n_classes) - logits);
    return score_of(logits[best]) >= config.class_thresholds[best] ? static_cast<int>(best) : -1;
}

// V2 hands its queries over with those whose best class passes that class's threshold first (the ones that
// enter the reading order), each group in query order, as PPDocLayoutV2ForObjectDetection sorts them.
void reorder_v2_queries(LayoutRawOutput& page, const PpDocLayoutConfig& config) {
    const auto q = static_cast<size_t>(page.n_queries);
    const auto k = static_cast<size_t>(page.n_classes);
    std::vector<uint8_t> kept(q);
    for (size_t i = 0; i < q; ++i) {
        kept[i] = v2_kept_class(page.logits.data() + i * k, k, config) >= 0 ? 1 : 0;
    }
    std::vector<size_t> order(q);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return kept[a] > kept[b]; });
    std::vector<float> logits(page.logits.size());
    std::vector<float> boxes(page.pred_boxes.size());
    for (size_t i = 0; i < q; ++i) {
        std::copy_n(page.logits.begin() + static_cast<std::ptrdiff_t>(order[i] * k), k,
                    logits.begin() + static_cast<std::ptrdiff_t>(i * k));
        std::copy_n(page.pred_boxes.begin() + static_cast<std::ptrdiff_t>(order[i] * 4), 4,
                    boxes.begin() + static_cast<std::ptrdiff_t>(i * 4));
    }
    page.logits = std::move(logits);
    page.pred_boxes = std::move(boxes);
}

// Planar levels [3, plane] through each channel's values [3 * 256].  ->  [3, plane]
std::vector<float> expand_levels(std::span<const uint8_t> levels, std::span<const float> values) {
    const size_t plane = levels.size() / 3;
    std::vector<float> out(levels.size());
    for (size_t i = 0; i < levels.size(); ++i) {
        out[i] = values[(i / plane) * 256 + levels[i]];
    }
    return out;
}

// Each page as a span, after checking that it holds [3, h, w] elements (`what` names them).
template <typename T>
std::vector<std::span<const T>> page_parts(std::span<const std::vector<T>> pages, int64_t h, int64_t w,
                                           const char* what) {
    std::vector<std::span<const T>> parts;
    for (size_t i = 0; i < pages.size(); ++i) {
        if (static_cast<int64_t>(pages[i].size()) != 3 * h * w) {
            fail("layout page ", i, ": ", pages[i].size(), " ", what, ", expected 3x", h, "x", w);
        }
        parts.emplace_back(pages[i]);
    }
    return parts;
}

// Each page's `field`, sized to n values, as the parts that a batch's download writes one after another.
std::vector<std::span<float>> output_parts(std::span<LayoutRawOutput> pages,
                                           std::vector<float> LayoutRawOutput::*field, size_t n) {
    std::vector<std::span<float>> parts;
    for (LayoutRawOutput& page : pages) {
        (page.*field).resize(n);
        parts.emplace_back(page.*field);
    }
    return parts;
}

}  // namespace

// A single page's pass recorded on the backend: its input, the results its replays write, and the work.
struct PpDocLayout::RecordedPass {
    Tensor pixels;  // [1, 3, h, w]
    DecoderResult result;
    std::unique_ptr<RecordedWork> work;
};

// V2's reading-order network for a single page, recorded the same way.
struct PpDocLayout::RecordedOrder {
    ReadingOrderTensors inputs;
    Tensor products;  // [1, q, q]
    std::unique_ptr<RecordedWork> work;
};

std::vector<uint8_t> layout_page_levels(const PageImage& page, const LayoutPreprocessConfig& config) {
    if (page.width <= 0 || page.height <= 0 || page.width * page.height > kMaxPagePixels) {
        fail("a page of ", page.width, "x", page.height, " pixels cannot go to the layout model");
    }
    if (static_cast<int64_t>(page.rgb.size()) != page.width * page.height * 3) {
        fail("a page of ", page.width, "x", page.height, " pixels came with ", page.rgb.size(), " bytes");
    }
    const int64_t h = config.do_resize ? config.height : page.height;
    const int64_t w = config.do_resize ? config.width : page.width;
    // [h, w, 3]  ->  [3, h, w]
    const auto planar = [&](std::span<const uint8_t> rgb) {
        const auto plane = static_cast<size_t>(h * w);
        std::vector<uint8_t> out(3 * plane);
        for (size_t c = 0; c < 3; ++c) {
            uint8_t* dst = out.data() + c * plane;
            for (size_t i = 0; i < plane; ++i) {
                dst[i] = rgb[i * 3 + c];
            }
        }
        return out;
    };
    if (!config.do_resize) {
        return planar(page.rgb);
    }
    Image src;
    src.width = static_cast<int>(page.width);
    src.height = static_cast<int>(page.height);
    src.rgb.assign(page.rgb.begin(), page.rgb.end());
    const Image resized =
        resize_bicubic(src, static_cast<int>(w), static_cast<int>(h), kTorchBicubicNoAntialias);
    return planar(resized.rgb);
}

std::vector<float> layout_level_values(const LayoutPreprocessConfig& config) {
    const float factor = config.do_rescale ? config.rescale_factor : 1.0f;
    std::vector<float> values(3 * 256);
    for (size_t c = 0; c < 3; ++c) {
        for (size_t level = 0; level < 256; ++level) {
            float v = static_cast<float>(level) * factor;
            if (config.do_normalize) {
                v = (v - config.image_mean[c]) / config.image_std[c];
            }
            values[c * 256 + level] = v;
        }
    }
    return values;
}

std::vector<float> preprocess_layout_page(const PageImage& page, const LayoutPreprocessConfig& config) {
    return expand_levels(layout_page_levels(page, config), layout_level_values(config));
}

PpDocLayout::PpDocLayout(Backend& backend, const std::filesystem::path& dir, const LayoutModelParams& params)
    : backend_(backend), files_(open_layout_model_files(dir)), store_(TensorStore::open(dir)) {
    LayoutWeights weights(backend, *store_, params.conv_precision);
    backbone_ = std::make_unique<HgnetBackbone>(weights, files_.config.backbone, "model.backbone.model");
    encoder_ = std::make_unique<HybridEncoder>(weights, files_.config);
    decoder_ = std::make_unique<DetrDecoder>(weights, files_.config);
    if (files_.config.kind == LayoutModelKind::V2) {
        reading_order_ =
            std::make_unique<ReadingOrder>(weights, files_.config.reading_order, files_.config.num_queries);
    }
    n_weight_bytes_ = weights.n_bytes();
    class_kinds_ = layout_label_kinds(files_.config.labels);
    level_values_ = layout_level_values(files_.preprocess);
}

PpDocLayout::~PpDocLayout() = default;

DecoderResult PpDocLayout::run_pass(const Tensor& pixels, LayoutTimes* times) const {
    auto start = std::chrono::steady_clock::now();
    // Adds the time since the last mark to the part's time once the backend has finished `done`.
    auto mark = [&](double LayoutTimes::*part, const Tensor& done) {
        if (times == nullptr) {
            return;
        }
        backend_.download(done.view(0, {1}));
        const auto now = std::chrono::steady_clock::now();
        times->*part += std::chrono::duration<double, std::milli>(now - start).count();
        start = now;
    };
    const std::vector<Tensor> features = backbone_->forward(pixels);
    mark(&LayoutTimes::backbone, features.back());
    const EncoderOutput encoded = encoder_->forward(features);
    mark(&LayoutTimes::encoder, encoded.maps.back());
    DecoderResult r = decoder_->forward(encoded);
    mark(&LayoutTimes::decoder, r.logits);
    return r;
}

std::vector<LayoutRawOutput> PpDocLayout::finish_pass(const DecoderResult& r, const LayoutRunOptions& options,
                                                      bool replayed) const {
    const PpDocLayoutConfig& c = files_.config;
    const auto start = std::chrono::steady_clock::now();
    const auto q = static_cast<size_t>(c.num_queries);
    const auto labels = static_cast<size_t>(c.num_labels());
    // Each result comes back straight into the pages' own vectors.
    std::vector<LayoutRawOutput> out(static_cast<size_t>(r.n));
    for (LayoutRawOutput& page : out) {
        page.n_queries = static_cast<int>(q);
        page.n_classes = static_cast<int>(labels);
        page.class_kinds = class_kinds_;
    }
    backend_.download(r.logits, output_parts(out, &LayoutRawOutput::logits, q * labels));  // [n * q, labels]
    backend_.download(r.boxes, output_parts(out, &LayoutRawOutput::pred_boxes, q * 4));    // [n * q, 4]
    if (c.kind == LayoutModelKind::V2) {
        for (LayoutRawOutput& page : out) {
            reorder_v2_queries(page, c);
        }
    } else {
        backend_.download(r.order_products,
                          output_parts(out, &LayoutRawOutput::order_logits, q * q));  // [n, q, q]
        for (LayoutRawOutput& page : out) {
            finish_global_pointer(page.order_logits, c.num_queries, c.global_pointer_head_size);
            page.mask_height = static_cast<int>(r.mask_h);
            page.mask_width = static_cast<int>(r.mask_w);
        }
        download_masks(r, options.mask_min_score, out);
    }
    if (options.times != nullptr) {
        options.times->outputs +=
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    }
    if (c.kind == LayoutModelKind::V2) {
        const auto order_start = std::chrono::steady_clock::now();
        add_v2_order_logits(out, replayed);
        if (options.times != nullptr) {
            options.times->reading_order +=
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - order_start)
                    .count();
        }
    }
    return out;
}

std::vector<LayoutRawOutput> PpDocLayout::forward(const Tensor& pixels,
                                                  const LayoutRunOptions& options) const {
    return finish_pass(run_pass(pixels, options.times), options, false);
}

void PpDocLayout::download_masks(const DecoderResult& r, float min_score,
                                 std::span<LayoutRawOutput> pages) const {
    if (min_score <= 0.0f) {
        const auto per_page = static_cast<size_t>(files_.config.num_queries * r.mask_h * r.mask_w);
        backend_.download(r.masks, output_parts(pages, &LayoutRawOutput::masks, per_page));  // [n * q, plane]
        return;
    }
    // The queries whose best class reaches min_score, their planes gathered and thresholded to bits on the
    // backend and brought back together.
    std::vector<int64_t> rows;
    for (size_t b = 0; b < pages.size(); ++b) {
        LayoutRawOutput& page = pages[b];
        page.mask_min_score = min_score;
        const auto k = static_cast<size_t>(page.n_classes);
        for (int i = 0; i < page.n_queries; ++i) {
            const float* logits = page.logits.data() + static_cast<size_t>(i) * k;
            bool reaches = false;
            for (size_t c = 0; c < k && !reaches; ++c) {
                reaches = score_of(logits[c]) >= min_score;
            }
            if (reaches) {
                page.mask_queries.push_back(i);
                rows.push_back(static_cast<int64_t>(b) * page.n_queries + i);
            }
        }
    }
    if (rows.empty()) {
        return;
    }
    // [rows, words], queued; the pages' vectors are sized while the backend works.
    const Tensor bits = backend_.sigmoid_bits(backend_.gather_rows(r.masks, rows), min_score);
    std::vector<std::span<int32_t>> parts;
    for (LayoutRawOutput& page : pages) {
        page.mask_bits.resize(page.mask_queries.size() * page.mask_plane_words());
        // The words' bits as they are: int32 and uint32 may alias.
        parts.emplace_back(reinterpret_cast<int32_t*>(page.mask_bits.data()), page.mask_bits.size());
    }
    backend_.download_i32(bits, parts);
}

void PpDocLayout::add_v2_order_logits(std::span<LayoutRawOutput> pages, bool replay) const {
    if (!reading_order_) {
        fail(layout_model_name(files_.config.kind), " has no reading-order network");
    }
    const PpDocLayoutConfig& c = files_.config;
    std::vector<ReadingOrderInput> inputs;
    for (const LayoutRawOutput& page : pages) {
        const auto q = static_cast<size_t>(page.n_queries);
        const auto k = static_cast<size_t>(page.n_classes);
        ReadingOrderInput in;
        in.boxes.assign(q * 4, 0.0f);
        in.classes.assign(q, c.class_order[0]);
        for (size_t i = 0; i < q; ++i) {
            const int label = v2_kept_class(page.logits.data() + i * k, k, c);
            if (label < 0) {
                continue;
            }
            ++in.n_kept;
            in.classes[i] = c.class_order[static_cast<size_t>(label)];
            const float* b = page.pred_boxes.data() + i * 4;
            const float corners[4] = {b[0] - 0.5f * b[2], b[1] - 0.5f * b[3], b[0] + 0.5f * b[2],
                                      b[1] + 0.5f * b[3]};
            for (size_t e = 0; e < 4; ++e) {
                in.boxes[i * 4 + e] = std::clamp(corners[e] * 1000.0f, 0.0f, 1000.0f);
            }
        }
        inputs.push_back(std::move(in));
    }
    std::vector<float> logits;
    if (replay && pages.size() == 1 && backend_.can_record()) {
        logits = reading_order_->logits(replay_reading_order(reading_order_->pack(inputs)));
    } else {
        logits = reading_order_->forward(inputs);
    }
    for (size_t b = 0; b < pages.size(); ++b) {
        const auto qq = static_cast<size_t>(pages[b].n_queries) * static_cast<size_t>(pages[b].n_queries);
        pages[b].order_logits.assign(logits.begin() + static_cast<std::ptrdiff_t>(b * qq),
                                     logits.begin() + static_cast<std::ptrdiff_t>((b + 1) * qq));
    }
}

std::vector<LayoutRawOutput> PpDocLayout::detect(std::span<const PageImage> pages,
                                                 const LayoutRunOptions& options) const {
    if (pages.empty()) {
        return {};
    }
    std::vector<std::vector<uint8_t>> levels;
    for (const PageImage& page : pages) {
        levels.push_back(layout_page_levels(page, files_.preprocess));
    }
    if (!files_.preprocess.do_resize) {
        for (const PageImage& page : pages) {
            if (page.width != pages[0].width || page.height != pages[0].height) {
                fail("pages of one layout batch differ in size without resizing: ", page.width, "x",
                     page.height, " and ", pages[0].width, "x", pages[0].height);
            }
        }
        const std::vector<std::span<const uint8_t>> parts(levels.begin(), levels.end());
        return forward(upload_levels(parts, pages[0].height, pages[0].width), options);
    }
    return detect_levels(levels, options);
}

std::array<int64_t, 2> PpDocLayout::input_size() const {
    return {files_.preprocess.height, files_.preprocess.width};
}

bool PpDocLayout::replays(size_t n_pages, const LayoutRunOptions& options) const {
    return n_pages == 1 && options.replay && options.times == nullptr && backend_.can_record();
}

std::vector<LayoutRawOutput> PpDocLayout::detect_preprocessed(std::span<const std::vector<float>> pages,
                                                              const LayoutRunOptions& options) const {
    if (pages.empty()) {
        return {};
    }
    const auto [h, w] = input_size();
    const std::vector<std::span<const float>> parts = page_parts(pages, h, w, "values");
    const std::span<const std::span<const float>> values(parts);
    if (replays(pages.size(), options)) {
        return finish_pass(replay_single_page([&](Tensor& input) { backend_.update(input, values); }),
                           options, true);
    }
    const Tensor batch = backend_.upload(values, {static_cast<int64_t>(pages.size()), 3, h, w});
    return forward(batch, options);
}

std::vector<LayoutRawOutput> PpDocLayout::detect_levels(std::span<const std::vector<uint8_t>> pages,
                                                        const LayoutRunOptions& options) const {
    if (pages.empty()) {
        return {};
    }
    const auto [h, w] = input_size();
    const std::vector<std::span<const uint8_t>> parts = page_parts(pages, h, w, "levels");
    if (replays(pages.size(), options)) {
        const auto write = [&](Tensor& input) {
            Tensor page = input;  // a row of 3 * h * w, so that its thirds are its channels
            page.shape = {1, 3 * h * w};
            backend_.update_levels(page, parts, level_values_, h * w);
        };
        return finish_pass(replay_single_page(write), options, true);
    }
    return forward(upload_levels(parts, h, w), options);
}

Tensor PpDocLayout::upload_levels(std::span<const std::span<const uint8_t>> pages, int64_t h,
                                  int64_t w) const {
    const auto n = static_cast<int64_t>(pages.size());
    // A page a row, so that each row's thirds are its channels.
    Tensor batch = backend_.upload_levels(pages, level_values_, h * w, {n, 3 * h * w});
    batch.shape = {n, 3, h, w};
    return batch;
}

Tensor PpDocLayout::replay_reading_order(const ReadingOrderBatch& batch) const {
    const std::lock_guard lock(recorded_mutex_);
    if (recorded_order_) {
        reading_order_->update(recorded_order_->inputs, batch);
        recorded_order_->work->replay();
        return recorded_order_->products;
    }
    auto recorded = std::make_unique<RecordedOrder>();
    recorded->inputs = reading_order_->upload(batch);
    Tensor first = reading_order_->products(recorded->inputs);
    recorded->work =
        record_work(backend_, [&] { recorded->products = reading_order_->products(recorded->inputs); });
    recorded_order_ = std::move(recorded);
    return first;
}

DecoderResult PpDocLayout::replay_single_page(const std::function<void(Tensor&)>& write_page) const {
    const std::lock_guard lock(recorded_mutex_);
    if (recorded_) {
        write_page(recorded_->pixels);
        recorded_->work->replay();
        return recorded_->result;
    }
    // The first page runs as it is, which makes the tables the pass keeps for its sizes; the pass is then
    // recorded on the same input.
    const auto [h, w] = input_size();
    auto recorded = std::make_unique<RecordedPass>();
    recorded->pixels = backend_.alloc({1, 3, h, w});
    write_page(recorded->pixels);
    DecoderResult first = run_pass(recorded->pixels, nullptr);
    recorded->work = record_work(backend_, [&] { recorded->result = run_pass(recorded->pixels, nullptr); });
    recorded_ = std::move(recorded);
    return first;
}

}  // namespace folio
