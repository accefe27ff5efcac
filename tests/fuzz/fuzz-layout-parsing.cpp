// Fuzzes the document-parsing API's bodies (POST /layout-parsing) and the chat route's document requests: any
// body either parses into options within PaddleX's ranges, or throws an ApiError with the route's status (422
// for /layout-parsing, 400 for a chat); a file as base64 either decodes or throws the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "app/server/layout-parsing.h"
#include "engine/layout/layout-labels.h"

namespace {

void check(bool condition) {
    if (!condition) {
        std::abort();
    }
}

bool is_label(const std::string& name) {
    for (const std::string_view label : folio::kLayoutLabels) {
        if (label == name) {
            return true;
        }
    }
    return false;
}

void check_request(const folio::server::LayoutParsingRequest& r) {
    check(!r.file.empty());
    check(r.log_id.size() <= 256);
    check(!r.layout_threshold || (*r.layout_threshold >= 0.0F && *r.layout_threshold <= 1.0F));
    for (const auto& [label, threshold] : r.layout_label_thresholds) {
        check(is_label(label) && threshold >= 0.0F && threshold <= 1.0F);
    }
    for (const auto& [label, mode] : r.layout_label_merge_modes) {
        check(is_label(label));
    }
    check(!r.layout_unclip_ratio || ((*r.layout_unclip_ratio)[0] > 0 && (*r.layout_unclip_ratio)[1] > 0));
    check(!r.temperature || *r.temperature >= 0);
    check(!r.top_p || (*r.top_p > 0 && *r.top_p <= 1));
    check(!r.repetition_penalty || *r.repetition_penalty > 0);
    check(!r.min_pixels || *r.min_pixels > 0);
    check(!r.max_pixels || *r.max_pixels > 0);
    check(!(r.min_pixels && r.max_pixels) || *r.min_pixels <= *r.max_pixels);
    check(!r.max_new_tokens || *r.max_new_tokens > 0);
    if (r.markdown_ignore_labels) {
        for (const std::string& label : *r.markdown_ignore_labels) {
            check(is_label(label));
        }
    }
    if (!r.file_is_url) {
        try {
            folio::server::decode_base64(r.file, "file", "the file", 422);
        } catch (const folio::server::ApiError& e) {
            check(e.status() == 422);
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    try {
        check_request(folio::server::parse_layout_parsing_request(body));
    } catch (const folio::server::ApiError& e) {
        check(e.status() == 422);
    }
    try {
        if (const auto chat = folio::server::parse_document_chat(body, "tiny-pipeline")) {
            check(!chat->file.empty() || chat->file_is_url);
            check(!chat->param.empty());
        }
    } catch (const folio::server::ApiError& e) {
        check(e.status() == 400);
    }
    return 0;
}
