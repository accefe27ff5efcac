// The document as JSON, <stem>.json: an array of page objects, each what PaddleOCR-VL's save_to_json writes
// for a page (after restructure_pages with merge_tables): input_path, page_index (null for a single image),
// page_count, width, height, model_settings, parsing_res_list (block_label, block_content, block_bbox,
// block_id, block_order (null for blocks outside the reading order), group_id, global_block_id,
// global_group_id, and block_polygon_points where the layout model gave an outline), spotting_res where the
// page was spotted, and layout_det_res (the page's blocks as boxes: after Folio's layout rules, not the raw
// detections). Folio's own figures are under "folio": the render dpi, timings in milliseconds, and per block
// its score, task, tokens, whether it stopped at the token limit, and any error. PaddleOCR writes one file
// per page; one array keeps a document in one file.
#pragma once

#include <nlohmann/json.hpp>

#include "app/export/streaming-writer.h"

namespace folio {

// One page object. firstBlockId: the document-wide index of the page's first block.
nlohmann::ordered_json jsonOfPage(const PageResult& page, int firstBlockId,
                                  const QSet<QString>& markdownLabels);

class JsonWriter : public StreamingWriter {
public:
    explicit JsonWriter(ExportOptions options);
    ExportFormat format() const override { return ExportFormat::Json; }

protected:
    QString opening() override { return QStringLiteral("["); }
    QString closing() override;
    QString pageText(const PageResult& page, const std::vector<QString>& imageLinks, int firstBlockId,
                     int pagesBefore) override;
};

}  // namespace folio
