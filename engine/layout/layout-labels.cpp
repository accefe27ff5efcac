#include "engine/layout/layout-labels.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <utility>

#include "engine/common/error.h"

namespace folio {

std::string_view layout_label_name(int label) {
    if (label < 0 || label >= kLayoutLabelCount) {
        fail("layout label id ", label, " is outside 0..", kLayoutLabelCount - 1);
    }
    return kLayoutLabels[static_cast<std::size_t>(label)];
}

int layout_label_id(std::string_view name) {
    const auto* it = std::find(kLayoutLabels.begin(), kLayoutLabels.end(), name);
    if (it == kLayoutLabels.end()) {
        fail("unknown layout label '", name, "'");
    }
    return static_cast<int>(std::distance(kLayoutLabels.begin(), it));
}

namespace {

// Lower case, spaces and hyphens as underscores: "Display Formula" and "display-formula" are display_formula.
std::string normalized_label(std::string_view name) {
    std::string out;
    out.reserve(name.size());
    for (const char c : name) {
        out.push_back(c == ' ' || c == '-' ? '_'
                                           : static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
    return out;
}

// Names that other PP-DocLayout checkpoints (PP-DocLayout-L/M/S, PP-DocLayout_plus-L) and PubLayNet-style
// models give to kinds of the 25.
constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kLabelAliases = {{
    {"formula", "display_formula"},
    {"table_title", "figure_title"},
    {"chart_title", "figure_title"},
    {"figure", "image"},
    {"title", "paragraph_title"},
    {"list", "text"},
}};

}  // namespace

std::optional<int> layout_kind_of_name(std::string_view name) {
    const std::string key = normalized_label(name);
    const auto* it = std::find(kLayoutLabels.begin(), kLayoutLabels.end(), key);
    if (it != kLayoutLabels.end()) {
        return static_cast<int>(std::distance(kLayoutLabels.begin(), it));
    }
    for (const auto& [alias, label] : kLabelAliases) {
        if (key == alias) {
            return layout_label_id(label);
        }
    }
    return std::nullopt;
}

std::vector<int> layout_label_kinds(std::span<const std::string> names) {
    const bool standard_count = names.size() == kLayoutLabels.size();
    const int generic = layout_label_id(kGenericLayoutLabel);
    std::vector<int> kinds;
    kinds.reserve(names.size());
    for (std::size_t id = 0; id < names.size(); ++id) {
        if (const std::optional<int> kind = layout_kind_of_name(names[id])) {
            kinds.push_back(*kind);
        } else {
            kinds.push_back(standard_count ? static_cast<int>(id) : generic);
        }
    }
    return kinds;
}

}  // namespace folio
