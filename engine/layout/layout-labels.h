// The 25 labels of PP-DocLayoutV2 and PP-DocLayoutV3, in class-id order (both models' id2label; the order of
// PaddleX's label_list, which PaddleOCR-VL's pipeline configurations index by number).
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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

// The kind a label no other rule places becomes: text, read with OCR and written as paragraphs, so that no
// block of a model's own label is dropped.
inline constexpr std::string_view kGenericLayoutLabel = "text";

// The block kind (an id of the 25) of a model's label name, matched without regard to case, spaces or
// hyphens, and through the names other PP-DocLayout checkpoints give the same kinds ("formula",
// "table_title", ...); nothing for a name it does not know.
std::optional<int> layout_kind_of_name(std::string_view name);

// The block kind of each class of a layout model, from its id2label in id order: by name first; a name that
// matches no kind takes the kind of its id where the model has the 25 labels of PP-DocLayoutV2/V3 (names
// such as LABEL_7), else the generic kind.
std::vector<int> layout_label_kinds(std::span<const std::string> names);

}  // namespace folio
