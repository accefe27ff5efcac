// PaddleOCR's document-parsing serving API as PaddleX's PaddleOCR-VL app defines it: the body of POST
// /layout-parsing read and checked into typed options (each wrong value an ApiError 422 naming the field, as
// PaddleX's validation answers), and the response envelope (logId, errorCode, errorMsg, result). No HTTP, no
// engine, no Qt here, so that it is tested and fuzzed alone; docs/layout-parsing.md lists every field.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/server/openai-protocol.h"

namespace folio::server {

inline constexpr std::string_view kLayoutParsingPath = "/layout-parsing";

// PaddleX's fileType: 0 a PDF, 1 an image.
enum class DocumentFileType { Pdf, Image };

// A merge mode of layoutMergeBboxesMode.
enum class BoxMergeMode { Large, Small, Union };

struct LayoutParsingRequest {
    // The file as base64, or an http(s) URL (file_is_url), fetched only where the server allows it.
    std::string file;
    bool file_is_url = false;
    std::optional<DocumentFileType> file_type;  // fileType; nothing: told from the file's first bytes
    std::string log_id;                         // logId; empty: the server makes one

    // The pipeline's options; nothing where the request leaves them to the server's defaults.
    std::optional<bool> use_layout_detection;
    std::optional<bool> use_chart_recognition;
    std::optional<bool> use_seal_recognition;
    std::optional<bool> use_ocr_for_image_block;
    std::optional<bool> merge_layout_blocks;
    std::optional<bool> layout_nms;
    std::optional<float> layout_threshold;                     // every label's
    std::map<std::string, float> layout_label_thresholds;      // by label name (class ids translated)
    std::optional<std::array<double, 2>> layout_unclip_ratio;  // width, height
    std::optional<BoxMergeMode> layout_merge_mode;             // every label's
    std::map<std::string, BoxMergeMode> layout_label_merge_modes;
    std::optional<std::string> prompt_label;  // the whole page's task without layout detection
    std::optional<double> repetition_penalty;
    std::optional<double> temperature;
    std::optional<double> top_p;
    std::optional<int64_t> min_pixels;
    std::optional<int64_t> max_pixels;
    std::optional<int64_t> max_new_tokens;
    std::optional<std::vector<std::string>> markdown_ignore_labels;

    // What the response holds.
    bool restructure_pages = false;  // tables continued across pages merged (with merge_tables)
    bool merge_tables = true;
    bool return_markdown_images = true;
    std::optional<bool> visualize;  // outputImages and inputImage; nothing: the server's default
    bool docx = false;              // outputFormats ["docx"]: the document as Word in exports.docx

    // Fields taken and left as Folio always does, each with the reason (for the response's log line and
    // docs/layout-parsing.md): "prettifyMarkdown: false is not supported; ...".
    std::vector<std::string> ignored;
};

// Parses and checks a body; throws ApiError (422) for malformed JSON, a missing file, a field of the wrong
// type or out of range, and options Folio cannot run (useDocOrientationClassify or useDocUnwarping true,
// per-label unclip ratios). Unknown fields are ignored, as PaddleX ignores them.
LayoutParsingRequest parse_layout_parsing_request(std::string_view body);

// A chat completion addressed to the document pipeline (its "model" is the pipeline's served name): the file
// of its last user message, as an OpenAI "file" part ({"type": "file", "file": {"file_data":
// "data:...;base64,
// ...", "filename": ...}}) or an "image_url" part, answered with the document's Markdown.
struct DocumentChatRequest {
    std::string file;  // a data URL's payload (base64), or an http(s) URL (file_is_url)
    bool file_is_url = false;
    std::string param;  // where the file was: "messages[0].content[1]"
    bool stream = false;
    bool include_usage = false;
};

// The body's request for the pipeline when its "model" is pipeline_model; nothing for any other model (or
// none). Throws ApiError (400) for malformed JSON, no user message, or not exactly one file or image part in
// the last one.
std::optional<DocumentChatRequest> parse_document_chat(std::string_view body,
                                                       const std::string& pipeline_model);

// A new logId: 32 random hexadecimal digits.
std::string new_log_id();

// The envelope of a result (errorCode 0, errorMsg "Success") and of an error (errorCode the HTTP status).
std::string layout_parsing_result_body(const std::string& log_id, const nlohmann::ordered_json& result);
std::string layout_parsing_error_body(const std::string& log_id, int status, const std::string& message);

// input_path removed from every object of a page's JSON, as PaddleX's prune_result removes it.
nlohmann::ordered_json prune_result(nlohmann::ordered_json page);

}  // namespace folio::server
