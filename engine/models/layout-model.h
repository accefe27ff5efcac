// A layout model as the engine service runs it, whatever its family: the page preparation its clients run on
// their own threads, the rules PaddleOCR-VL's pipelines use with it, and one pass over prepared pages on the
// thread that owns the backend.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "engine/image/image.h"
#include "engine/layout/layout-output.h"
#include "engine/layout/layout-pipeline.h"

namespace folio {

// A page through a layout model's image processor up to its 8-bit levels: [3, h, w] at the model's input
// size, which the model rescales and normalises on its device. Safe to call from any thread, and independent
// of the model's lifetime (it holds the processor's settings only).
using LayoutPagePreparation = std::function<std::vector<uint8_t>(const Image& page)>;

class LayoutModel {
public:
    virtual ~LayoutModel() = default;
    virtual LayoutPagePreparation page_preparation() const = 0;
    // The rules PaddleOCR-VL's pipeline uses with this model.
    virtual LayoutRules default_rules() const = 0;
    // The most pages one pass takes (the slot's layout_batch, which the memory plan keeps room for).
    virtual int max_batch() const = 0;
    // Prepared pages through the model in one pass, on the backend's thread: each page's raw outputs. Above
    // 0, mask_min_score brings back only the masks that post-processing at that threshold reads, as bits
    // (V3). Throws folio::Error naming a page of the wrong size.
    virtual std::vector<LayoutRawOutput> detect_prepared(std::span<const std::vector<uint8_t>> pages,
                                                         float mask_min_score) const = 0;
};

}  // namespace folio
