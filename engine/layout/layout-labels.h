// The 25 labels of PP-DocLayoutV2 and PP-DocLayoutV3, in class-id order (both models' id2label; the order of
// PaddleX's label_list, which PaddleOCR-VL's pipeline configurations index by number).
#pragma once

#include <array>
#include <string_view>

namespace folio {

inline constexpr int kLayoutLabelCount = 25;

inline constexpr std::array<std::string_view, kLayoutLabelCount> kLayoutLabels = {
    "abstract",        "algorithm",         "aside_text", "chart",          "content",  "display_formula",
    "doc_title",       "figure_title",      "footer",     "footer_image",   "footnote", "formula_number",
    "header",          "header_image",      "image",      "inline_formula", "number",   "paragraph_title",
    "reference",       "reference_content", "seal",       "table",          "text",     "vertical_text",
    "vision_footnote",
};

// The name of class id `label`; throws folio::Error outside 0..24.
std::string_view layout_label_name(int label);

// The class id of a label name; throws folio::Error for a name that is not one of the 25.
int layout_label_id(std::string_view name);

}  // namespace folio
