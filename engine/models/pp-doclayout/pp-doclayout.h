// PP-DocLayoutV2 and PP-DocLayoutV3 (transformers 5.17's PPDocLayoutV2ForObjectDetection and
// PPDocLayoutV3ForObjectDetection) on a backend: the image processor's resize and rescale, the HGNetV2
// backbone, the hybrid encoder, the RT-DETR decoder and, for V2, the reading-order network, giving each
// page's raw outputs for the layout post-processing (engine/layout/).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/layout/layout-output.h"
#include "engine/models/pp-doclayout/pp-doclayout-config.h"

namespace folio {

class HgnetBackbone;
class HybridEncoder;
class DetrDecoder;
struct DecoderResult;
class ReadingOrder;
struct ReadingOrderBatch;
class TensorStore;

// An RGB page, 8 bits a channel, rows top to bottom.
struct PageImage {
    std::span<const uint8_t> rgb;  // [height, width, 3]
    int64_t width = 0;
    int64_t height = 0;
};

// The image processor: resize to the model's input size (bicubic as torch's interpolate without
// antialiasing, rounded back to 8 bits), then rescale and normalise, channels first.  ->  [3, h, w]
std::vector<float> preprocess_layout_page(const PageImage& page, const LayoutPreprocessConfig& config);
// Its two halves: the resized page's 8-bit levels, channels first  ->  [3, h, w]
std::vector<uint8_t> layout_page_levels(const PageImage& page, const LayoutPreprocessConfig& config);
// and the value each channel's levels become, rescaled and normalised.  ->  [3 * 256]
std::vector<float> layout_level_values(const LayoutPreprocessConfig& config);

// Where a forward pass spends its time, in milliseconds (the backend waited for after each part).
struct LayoutTimes {
    double backbone = 0;
    double encoder = 0;
    double decoder = 0;
    // The outputs brought back and read on the host: logits, boxes, V3's order products and mask bits.
    double outputs = 0;
    double reading_order = 0;  // V2
};

// How a layout model runs.
struct LayoutModelParams {
    // How the convolutions round their inputs where the backend can: TF32 is what torch's cuDNN convolutions
    // do by default and what the document pipeline runs; float32, every product exact, is how the golden
    // fixtures are compared.
    ConvPrecision conv_precision = ConvPrecision::Float32;
};

// What one pass brings back besides the detections.
struct LayoutRunOptions {
    // V3: above 0, only the masks of queries whose best class's sigmoid score reaches this come back to the
    // host (the only ones post-processing at that threshold reads), as bits at this threshold
    // (LayoutRawOutput::mask_bits); 0 brings every query's mask logits, as the reference returns them.
    float mask_min_score = 0.0f;
    // The backend is waited for after each part and the parts' times added here.
    LayoutTimes* times = nullptr;
    // A single page through detect_preprocessed or detect_levels runs as work recorded on its first such pass
    // and replayed (a CUDA graph: one launch for the pass's hundreds of kernels), where the backend can record
    // and no times are asked for. The recorded pass keeps its own input and tensors.
    bool replay = true;
};

class PpDocLayout {
public:
    // Loads the folder's config and weights onto the backend; throws naming the file and what is wrong.
    PpDocLayout(Backend& backend, const std::filesystem::path& dir, const LayoutModelParams& params = {});
    ~PpDocLayout();
    PpDocLayout(const PpDocLayout&) = delete;
    PpDocLayout& operator=(const PpDocLayout&) = delete;

    const PpDocLayoutConfig& config() const { return files_.config; }
    const LayoutPreprocessConfig& preprocess_config() const { return files_.preprocess; }
    int64_t n_weight_bytes() const { return n_weight_bytes_; }

    // The raw outputs of pages already preprocessed.  pixels [n, 3, h, w]  ->  n outputs
    std::vector<LayoutRawOutput> forward(const Tensor& pixels, const LayoutRunOptions& options = {}) const;
    // V2: fills each page's order_logits from the reading-order network, its queries being in V2's order
    // (those over their class's threshold first), as forward() hands them over; a single page through the
    // network's recorded pass where `replay` is set and the backend can record.
    void add_v2_order_logits(std::span<LayoutRawOutput> pages, bool replay = false) const;
    // Pages through the image processor and the model in one batch.
    std::vector<LayoutRawOutput> detect(std::span<const PageImage> pages,
                                        const LayoutRunOptions& options = {}) const;
    // Pages already through preprocess_layout_page (on other threads), each [3, h, w] at the model's input
    // size, through the model in one batch.
    std::vector<LayoutRawOutput> detect_preprocessed(std::span<const std::vector<float>> pages,
                                                     const LayoutRunOptions& options = {}) const;
    // Pages already through layout_page_levels, through the model in one batch: only the levels go to the
    // device (a quarter of the values' bytes), which turns them into values there.
    std::vector<LayoutRawOutput> detect_levels(std::span<const std::vector<uint8_t>> pages,
                                               const LayoutRunOptions& options = {}) const;
    // The model's input size, height then width (what preprocess_layout_page makes of any page).
    std::array<int64_t, 2> input_size() const;

private:
    // Pages of 8-bit levels [3 * h * w] onto the backend as the processor's values.  ->  [n, 3, h, w]
    Tensor upload_levels(std::span<const std::span<const uint8_t>> pages, int64_t h, int64_t w) const;
    // Backbone, encoder and decoder on the backend, nothing brought back but for the times.
    DecoderResult run_pass(const Tensor& pixels, LayoutTimes* times) const;
    // A pass's results brought to the host as the pages' raw outputs, V2's reading order run on them.
    // `replayed`: the pass was a single page's replay, and V2's reading order replays too.
    std::vector<LayoutRawOutput> finish_pass(const DecoderResult& r, const LayoutRunOptions& options,
                                             bool replayed) const;
    // Whether a batch of n_pages runs as the single page's recorded pass (LayoutRunOptions::replay).
    bool replays(size_t n_pages, const LayoutRunOptions& options) const;
    // One page's pass as recorded work: recorded on the first call, replayed with a new page after.
    // write_page(input) writes the page into the pass's input [1, 3, h, w].
    DecoderResult replay_single_page(const std::function<void(Tensor&)>& write_page) const;
    // V2: a single page's reading-order products, recorded on the first call and replayed after.
    // ->  [1, q, q], before finish_global_pointer
    Tensor replay_reading_order(const ReadingOrderBatch& batch) const;
    // V3: each page's masks from the decoder's, all of them as logits or, above 0, those of queries scoring
    // min_score as bits.
    void download_masks(const DecoderResult& r, float min_score, std::span<LayoutRawOutput> pages) const;

    Backend& backend_;
    LayoutModelFiles files_;
    std::unique_ptr<TensorStore> store_;
    std::unique_ptr<HgnetBackbone> backbone_;
    std::unique_ptr<HybridEncoder> encoder_;
    std::unique_ptr<DetrDecoder> decoder_;
    std::unique_ptr<ReadingOrder> reading_order_;  // V2
    int64_t n_weight_bytes_ = 0;
    std::vector<int> class_kinds_;     // each class's block kind, from its id2label name
    std::vector<float> level_values_;  // layout_level_values of the model's image processor
    struct RecordedPass;
    struct RecordedOrder;
    mutable std::mutex recorded_mutex_;
    mutable std::unique_ptr<RecordedPass> recorded_;         // a single page's pass, once recorded
    mutable std::unique_ptr<RecordedOrder> recorded_order_;  // V2: its reading order, once recorded
};

}  // namespace folio
