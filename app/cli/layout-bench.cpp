#include "app/cli/layout-bench.h"

#include <chrono>
#include <random>

#include "engine/models/pp-doclayout/pp-doclayout.h"

namespace folio::cli {

namespace {

constexpr float kPipelineMaskMinScore = 0.3f;

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A page of light paper with darker rectangles, as text lines and pictures are.
std::vector<uint8_t> drawn_page(int64_t width, int64_t height, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> rgb(static_cast<size_t>(width * height * 3), 235);
    for (int b = 0; b < 40; ++b) {
        const int64_t x0 = rng() % static_cast<uint32_t>(width - 100);
        const int64_t y0 = rng() % static_cast<uint32_t>(height - 40);
        const int64_t w = 40 + rng() % static_cast<uint32_t>(width / 2);
        const int64_t h = 8 + rng() % 60;
        const auto level = static_cast<uint8_t>(rng() % 160);
        for (int64_t y = y0; y < std::min(height, y0 + h); ++y) {
            for (int64_t x = x0; x < std::min(width, x0 + w); ++x) {
                for (int64_t c = 0; c < 3; ++c) {
                    rgb[static_cast<size_t>((y * width + x) * 3 + c)] = level;
                }
            }
        }
    }
    return rgb;
}

}  // namespace

nlohmann::json bench_layout(Backend& backend, const std::filesystem::path& model_dir,
                            const std::vector<int64_t>& batches, int64_t n_pages) {
    constexpr int64_t kWidth = 1700, kHeight = 2200;
    const std::vector<uint8_t> page = drawn_page(kWidth, kHeight, 7);
    std::vector<uint8_t> levels;  // the page through the image processor, for every run
    nlohmann::json runs = nlohmann::json::array();
    nlohmann::json report;
    // Exact float32 products, TF32 convolutions (what the document pipeline runs by default), then bfloat16
    // ones (--layout-precision bfloat16), each model loaded alone.
    for (const ConvPrecision precision :
         {ConvPrecision::Float32, ConvPrecision::Tf32, ConvPrecision::Bfloat16}) {
        const PpDocLayout model(backend, model_dir, {.conv_precision = precision});
        const LayoutPreprocessConfig& pre = model.preprocess_config();
        if (levels.empty()) {
            // The image processor on the host.
            const auto pre_start = std::chrono::steady_clock::now();
            constexpr int kPreprocessRuns = 4;
            for (int i = 0; i < kPreprocessRuns; ++i) {
                levels = layout_page_levels({page, kWidth, kHeight}, pre);
            }
            report = {{"model", model_dir.string()},
                      {"kind", layout_model_name(model.config().kind)},
                      {"device", backend.name()},
                      {"input", {pre.height, pre.width}},
                      {"preprocess_ms_per_page", seconds_since(pre_start) * 1e3 / kPreprocessRuns},
                      {"weight_bytes", model.n_weight_bytes()}};
        }
        // V3's masks come back as the document pipeline asks for them: at PaddleOCR-VL 1.5's rules' lowest
        // threshold (paddleocr_vl_1_5_layout_rules()).
        const LayoutRunOptions run{.mask_min_score = kPipelineMaskMinScore};
        for (const int64_t batch : batches) {
            // As the document pipeline runs it: pages preprocessed on the host to their levels, uploaded and
            // detected; a single page also without replaying its recorded pass.
            const std::vector<std::vector<uint8_t>> pages(static_cast<size_t>(batch), levels);
            for (const bool replay : batch == 1 ? std::vector<bool>{false, true} : std::vector<bool>{true}) {
                LayoutRunOptions options = run;
                options.replay = replay;
                model.detect_levels(pages, options);  // warm-up: allocations, cuBLAS's plans, recording
                backend.reset_peak();
                const int64_t n_runs = std::max<int64_t>(1, n_pages / batch);
                const auto start = std::chrono::steady_clock::now();
                for (int64_t r = 0; r < n_runs; ++r) {
                    model.detect_levels(pages, options);
                }
                const double seconds = seconds_since(start);
                // One more pass, waited for after each part (never replayed).
                LayoutTimes times;
                LayoutRunOptions timed = options;
                timed.times = &times;
                const std::vector<LayoutRawOutput> out = model.detect_levels(pages, timed);
                double n_masks = 0;
                for (const LayoutRawOutput& raw : out) {
                    n_masks += static_cast<double>(raw.mask_queries.size());
                }
                runs.push_back({{"batch", batch},
                                {"precision", conv_precision_name(precision)},
                                {"replayed", replay && batch == 1 && backend.can_record()},
                                {"parts_ms",
                                 {{"backbone", times.backbone},
                                  {"encoder", times.encoder},
                                  {"decoder", times.decoder},
                                  {"outputs", times.outputs},
                                  {"reading_order", times.reading_order}}},
                                {"pages", n_runs * batch},
                                {"pages_per_s", static_cast<double>(n_runs * batch) / seconds},
                                {"ms_per_batch", seconds * 1e3 / static_cast<double>(n_runs)},
                                {"peak_bytes", backend.memory_stats().peak},
                                {"mask_min_score", kPipelineMaskMinScore},
                                {"masks_per_page", n_masks / static_cast<double>(batch)}});
            }
        }
    }
    report["runs"] = runs;
    return report;
}

}  // namespace folio::cli
