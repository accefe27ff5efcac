// PaddleOCR-VL-1.5's "Spotting:" answer: lines as <|TEXT_START|>text<|TEXT_END|><|LOC_BEGIN|> and eight
// <|LOC_n|> tokens (four corners on a 0..1000 grid) <|LOC_END|>, turned into text and quadrilaterals in page
// pixels as PaddleX's post_process_for_spotting does.
#pragma once

#include <QString>
#include <vector>

#include "app/documents/page-result.h"

namespace folio {

struct SpottingResult {
    std::vector<SpottedLine> lines;
    QString text;  // the lines' texts joined by blank lines
};

// Pairs the i-th text with the i-th location group; a group of fewer than eight locations drops its line.
// width/height: the image the model saw, in pixels.
SpottingResult parseSpotting(const QString& answer, int width, int height);

}  // namespace folio
