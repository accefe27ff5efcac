#include "app/cli/pipeline-flags.h"

#include "engine/common/error.h"

namespace folio::cli {

DocumentOptions document_options_from(const Options& opt) {
    DocumentOptions options;
    options.dpi = static_cast<int>(opt.integer("--dpi", kDefaultDpi));
    if (options.dpi < kMinDpi || options.dpi > kMaxDpi) {
        fail("--dpi expects ", kMinDpi, "..", kMaxDpi, ", got ", options.dpi);
    }
    return options;
}

void apply_pipeline_flags(const Options& opt, const EngineOptions& engine, PipelineOptions& options) {
    options.maxPagesInFlight = static_cast<int>(opt.integer("--pages-in-flight", options.maxPagesInFlight));
    options.renderThreads = static_cast<int>(opt.integer("--render-threads", options.renderThreads));
    options.layoutBatch = static_cast<int>(opt.integer("--layout-batch", options.layoutBatch));
    if (engine.image_min_pixels) {
        options.recognition.pixels.minPixels = *engine.image_min_pixels;
    }
    if (engine.image_max_pixels) {
        options.recognition.pixels.maxPixels = *engine.image_max_pixels;
    }
}

}  // namespace folio::cli
