#include "app/server/layout-parsing.h"

#include <charconv>
#include <cmath>
#include <random>

#include "engine/common/json-reader.h"
#include "engine/layout/layout-labels.h"

namespace folio::server {
namespace {

using json = nlohmann::json;

[[noreturn]] void invalid(const std::string& param, const std::string& message) {
    throw ApiError(422, "invalid_request_error", param + ": " + message, param);
}

[[noreturn]] void wrong(const std::string& param, const char* wanted, const json& value) {
    invalid(param, std::string("must be ") + wanted + ", got " + json_type_name(value));
}

// The member when present and not null.
const json* member(const json& obj, const char* key) {
    const auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::optional<bool> get_bool(const json& obj, const char* key) {
    const json* v = member(obj, key);
    if (!v) {
        return std::nullopt;
    }
    if (!v->is_boolean()) {
        wrong(key, "a boolean", *v);
    }
    return v->get<bool>();
}

std::optional<double> get_number(const json& obj, const char* key) {
    const json* v = member(obj, key);
    if (!v) {
        return std::nullopt;
    }
    if (!v->is_number()) {
        wrong(key, "a number", *v);
    }
    const double x = v->get<double>();
    if (!std::isfinite(x)) {
        invalid(key, "must be a finite number");
    }
    return x;
}

std::optional<int64_t> get_positive_int(const json& obj, const char* key) {
    const json* v = member(obj, key);
    if (!v) {
        return std::nullopt;
    }
    const std::optional<int64_t> n = json_int64(*v);
    if (!n) {
        wrong(key, "an integer", *v);
    }
    if (*n <= 0) {
        invalid(key, "must be > 0; got " + std::to_string(*n));
    }
    return n;
}

// The member's text where it is a string, else an empty one.
std::string text_member(const json& obj, const char* key) {
    const json* v = member(obj, key);
    return v && v->is_string() ? v->get<std::string>() : std::string();
}

std::optional<std::string> get_string(const json& obj, const char* key) {
    const json* v = member(obj, key);
    if (!v) {
        return std::nullopt;
    }
    if (!v->is_string()) {
        wrong(key, "a string", *v);
    }
    return v->get<std::string>();
}

// A dictionary key of layoutThreshold or layoutMergeBboxesMode: a class id (PaddleX's keys, written as
// strings in JSON) or a label name.
std::string label_of_key(const std::string& param, const std::string& key) {
    int id = -1;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (ec == std::errc() && end == key.data() + key.size()) {
        if (id < 0 || id >= kLayoutLabelCount) {
            invalid(param, "the class id " + key + " is not one of the layout model's 0.." +
                               std::to_string(kLayoutLabelCount - 1));
        }
        return std::string(kLayoutLabels[static_cast<size_t>(id)]);
    }
    for (const std::string_view label : kLayoutLabels) {
        if (label == key) {
            return key;
        }
    }
    invalid(param, "'" + key + "' is neither a class id nor a layout label");
}

BoxMergeMode merge_mode(const std::string& param, const json& value) {
    if (!value.is_string()) {
        wrong(param, "a string", value);
    }
    const std::string mode = value.get<std::string>();
    if (mode == "large") {
        return BoxMergeMode::Large;
    }
    if (mode == "small") {
        return BoxMergeMode::Small;
    }
    if (mode == "union") {
        return BoxMergeMode::Union;
    }
    invalid(param, "must be one of: large, small, union; got '" + mode + "'");
}

float threshold(const std::string& param, const json& value) {
    if (!value.is_number()) {
        wrong(param, "a number", value);
    }
    const double t = value.get<double>();
    if (!(t >= 0 && t <= 1)) {
        invalid(param, "must be between 0 and 1 inclusive; got " + value.dump());
    }
    return static_cast<float>(t);
}

double ratio(const std::string& param, const json& value) {
    if (!value.is_number()) {
        wrong(param, "a number", value);
    }
    const double r = value.get<double>();
    if (!(r > 0) || !std::isfinite(r)) {
        invalid(param, "must be > 0; got " + value.dump());
    }
    return r;
}

void read_layout_options(const json& doc, LayoutParsingRequest& request) {
    request.use_layout_detection = get_bool(doc, "useLayoutDetection");
    request.use_chart_recognition = get_bool(doc, "useChartRecognition");
    request.use_seal_recognition = get_bool(doc, "useSealRecognition");
    request.use_ocr_for_image_block = get_bool(doc, "useOcrForImageBlock");
    request.merge_layout_blocks = get_bool(doc, "mergeLayoutBlocks");
    request.layout_nms = get_bool(doc, "layoutNms");
    for (const char* key : {"useDocOrientationClassify", "useDocUnwarping"}) {
        if (get_bool(doc, key).value_or(false)) {
            throw ApiError(
                422, "invalid_request_error",
                std::string(key) +
                    ": Folio has no document orientation or unwarping model; send the page upright "
                    "and flat, or leave it false",
                key);
        }
    }
    if (const json* t = member(doc, "layoutThreshold")) {
        if (t->is_object()) {
            for (const auto& [key, value] : t->items()) {
                const std::string param = "layoutThreshold." + key;
                request.layout_label_thresholds[label_of_key("layoutThreshold", key)] =
                    threshold(param, value);
            }
        } else {
            request.layout_threshold = threshold("layoutThreshold", *t);
        }
    }
    if (const json* r = member(doc, "layoutUnclipRatio")) {
        if (r->is_object()) {
            invalid("layoutUnclipRatio",
                    "per-label ratios are not supported; give one number or [width, height] for every label");
        }
        if (r->is_array()) {
            if (r->size() != 2) {
                invalid("layoutUnclipRatio",
                        "must be two numbers; got " + std::to_string(r->size()) + " values");
            }
            request.layout_unclip_ratio = std::array<double, 2>{ratio("layoutUnclipRatio[0]", (*r)[0]),
                                                                ratio("layoutUnclipRatio[1]", (*r)[1])};
        } else {
            const double x = ratio("layoutUnclipRatio", *r);
            request.layout_unclip_ratio = std::array<double, 2>{x, x};
        }
    }
    if (const json* m = member(doc, "layoutMergeBboxesMode")) {
        if (m->is_object()) {
            for (const auto& [key, value] : m->items()) {
                request.layout_label_merge_modes[label_of_key("layoutMergeBboxesMode", key)] =
                    merge_mode("layoutMergeBboxesMode." + key, value);
            }
        } else {
            request.layout_merge_mode = merge_mode("layoutMergeBboxesMode", *m);
        }
    }
    if (const std::optional<std::string> shape = get_string(doc, "layoutShapeMode")) {
        if (*shape != "auto" && *shape != "rect" && *shape != "quad" && *shape != "poly") {
            invalid("layoutShapeMode", "must be one of: rect, quad, poly, auto; got '" + *shape + "'");
        }
        if (*shape != "auto") {
            request.ignored.push_back("layoutShapeMode: '" + *shape +
                                      "' is taken as auto: blocks keep the outline the layout model gives");
        }
    }
}

void read_recognition_options(const json& doc, LayoutParsingRequest& request) {
    request.prompt_label = get_string(doc, "promptLabel");
    if (request.prompt_label) {
        static const std::vector<std::string> kLabels = {"ocr",   "formula", "table",
                                                         "chart", "seal",    "spotting"};
        if (std::find(kLabels.begin(), kLabels.end(), *request.prompt_label) == kLabels.end()) {
            invalid("promptLabel", "must be one of: ocr, formula, table, chart, seal, spotting; got '" +
                                       *request.prompt_label + "'");
        }
    }
    request.repetition_penalty = get_number(doc, "repetitionPenalty");
    if (request.repetition_penalty && *request.repetition_penalty <= 0) {
        invalid("repetitionPenalty", "must be > 0");
    }
    request.temperature = get_number(doc, "temperature");
    if (request.temperature && *request.temperature < 0) {
        invalid("temperature", "must be >= 0");
    }
    request.top_p = get_number(doc, "topP");
    if (request.top_p && !(*request.top_p > 0 && *request.top_p <= 1)) {
        invalid("topP", "must be > 0 and <= 1");
    }
    request.min_pixels = get_positive_int(doc, "minPixels");
    request.max_pixels = get_positive_int(doc, "maxPixels");
    if (request.min_pixels && request.max_pixels && *request.min_pixels > *request.max_pixels) {
        invalid("minPixels", "(" + std::to_string(*request.min_pixels) +
                                 ") cannot be greater than maxPixels (" +
                                 std::to_string(*request.max_pixels) + ")");
    }
    request.max_new_tokens = get_positive_int(doc, "maxNewTokens");
    if (const json* labels = member(doc, "markdownIgnoreLabels")) {
        if (!labels->is_array()) {
            wrong("markdownIgnoreLabels", "an array of label names", *labels);
        }
        std::vector<std::string> names;
        for (size_t i = 0; i < labels->size(); ++i) {
            const std::string param = "markdownIgnoreLabels[" + std::to_string(i) + "]";
            if (!(*labels)[i].is_string()) {
                wrong(param, "a string", (*labels)[i]);
            }
            const std::string name = (*labels)[i].get<std::string>();
            if (std::find(kLayoutLabels.begin(), kLayoutLabels.end(), name) == kLayoutLabels.end()) {
                invalid(param, "'" + name + "' is not a layout label");
            }
            names.push_back(name);
        }
        request.markdown_ignore_labels = std::move(names);
    }
    if (get_bool(doc, "formatBlockContent").value_or(false)) {
        request.ignored.push_back("formatBlockContent: block_content stays the recognised text");
    }
    if (const json* extra = member(doc, "vlmExtraArgs")) {
        if (!extra->is_object()) {
            wrong("vlmExtraArgs", "an object", *extra);
        }
        if (!extra->empty()) {
            request.ignored.push_back("vlmExtraArgs: the recognition model is Folio's own engine");
        }
    }
}

void read_response_options(const json& doc, LayoutParsingRequest& request) {
    request.restructure_pages = get_bool(doc, "restructurePages").value_or(false);
    request.merge_tables = get_bool(doc, "mergeTables").value_or(true);
    request.return_markdown_images = get_bool(doc, "returnMarkdownImages").value_or(true);
    request.visualize = get_bool(doc, "visualize");
    if (!get_bool(doc, "prettifyMarkdown").value_or(true)) {
        request.ignored.push_back(
            "prettifyMarkdown: the Markdown is always written as PaddleOCR prettifies it");
    }
    if (get_bool(doc, "showFormulaNumber").value_or(false)) {
        request.ignored.push_back("showFormulaNumber: formula numbers stay out of the Markdown");
    }
    if (!get_bool(doc, "relevelTitles").value_or(true)) {
        request.ignored.push_back("relevelTitles: title levels always follow their numbering");
    }
    if (const json* formats = member(doc, "outputFormats")) {
        if (!formats->is_array()) {
            wrong("outputFormats", "an array", *formats);
        }
        for (size_t i = 0; i < formats->size(); ++i) {
            const std::string param = "outputFormats[" + std::to_string(i) + "]";
            if (!(*formats)[i].is_string()) {
                wrong(param, "a string", (*formats)[i]);
            }
            if ((*formats)[i].get<std::string>() != "docx") {
                invalid(param, "unsupported format '" + (*formats)[i].get<std::string>() +
                                   "'; supported values: ['docx']");
            }
            request.docx = true;
        }
    }
}

}  // namespace

LayoutParsingRequest parse_layout_parsing_request(std::string_view body) try {
    std::string problem;
    std::optional<json> doc = try_parse_json(body, problem);
    if (!doc) {
        throw ApiError(422, "invalid_request_error", "the body is " + problem);
    }
    if (!doc->is_object()) {
        throw ApiError(422, "invalid_request_error",
                       std::string("the body must be a JSON object, got ") + json_type_name(*doc));
    }
    LayoutParsingRequest request;
    const json* file = member(*doc, "file");
    if (!file) {
        invalid("file", "is required: the file as base64, or its URL");
    }
    if (!file->is_string()) {
        wrong("file", "a string", *file);
    }
    request.file = file->get<std::string>();
    request.file_is_url = request.file.rfind("http://", 0) == 0 || request.file.rfind("https://", 0) == 0;
    if (request.file.empty()) {
        invalid("file", "is empty");
    }
    if (const json* type = member(*doc, "fileType")) {
        const std::optional<int64_t> t = json_int64(*type);
        if (!t || (*t != 0 && *t != 1)) {
            invalid("fileType", "must be 0 (PDF) or 1 (image); got " + type->dump());
        }
        request.file_type = *t == 0 ? DocumentFileType::Pdf : DocumentFileType::Image;
    }
    if (const std::optional<std::string> id = get_string(*doc, "logId")) {
        if (id->size() > 256) {
            invalid("logId", "must be at most 256 characters");
        }
        request.log_id = *id;
    }
    read_layout_options(*doc, request);
    read_recognition_options(*doc, request);
    read_response_options(*doc, request);
    return request;
} catch (const json::exception& e) {
    throw ApiError(422, "invalid_request_error", "the body cannot be read: " + json_error_text(e));
}

std::optional<DocumentChatRequest> parse_document_chat(std::string_view body,
                                                       const std::string& pipeline_model) try {
    std::string problem;
    std::optional<json> doc = try_parse_json(body, problem);
    if (!doc || !doc->is_object()) {
        return std::nullopt;  // the chat route says what is wrong
    }
    const json* model = member(*doc, "model");
    if (!model || !model->is_string() || model->get<std::string>() != pipeline_model) {
        return std::nullopt;
    }
    DocumentChatRequest request;
    const auto refuse = [](const std::string& param, const std::string& message) {
        bad_request(param + ": " + message, param);
    };
    const json* messages = member(*doc, "messages");
    if (!messages || !messages->is_array()) {
        refuse("messages", "an array of messages is required");
    }
    std::optional<size_t> last_user;
    for (size_t i = 0; i < messages->size(); ++i) {
        const json& m = (*messages)[i];
        if (m.is_object() && text_member(m, "role") == "user") {
            last_user = i;
        }
    }
    if (!last_user) {
        refuse("messages", "the document pipeline needs a user message with the document");
    }
    const std::string at = "messages[" + std::to_string(*last_user) + "].content";
    const json* content = member((*messages)[*last_user], "content");
    if (!content || !content->is_array()) {
        refuse(
            at,
            "the document pipeline takes the document as a \"file\" part (a PDF or image as a data URL) or "
            "an \"image_url\" part");
    }
    int n_files = 0;
    for (size_t i = 0; i < content->size(); ++i) {
        const json& part = (*content)[i];
        const std::string param = at + "[" + std::to_string(i) + "]";
        const std::string type = part.is_object() ? text_member(part, "type") : std::string();
        std::string url;
        if (type == "file") {
            const json* file = member(part, "file");
            const json* data = file && file->is_object() ? member(*file, "file_data") : nullptr;
            if (!data || !data->is_string()) {
                refuse(param,
                       "a file part needs file.file_data, the file as a data URL (file_id is not taken)");
            }
            url = data->get<std::string>();
        } else if (type == "image_url") {
            const json* image = member(part, "image_url");
            const json* data = image && image->is_object() ? member(*image, "url") : nullptr;
            if (!data || !data->is_string()) {
                refuse(param, "an image_url part needs image_url.url");
            }
            url = data->get<std::string>();
        } else {
            continue;
        }
        ++n_files;
        request.param = param;
        request.file_is_url = url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0;
        if (request.file_is_url) {
            request.file = url;
            continue;
        }
        const size_t comma = url.find(',');
        if (url.rfind("data:", 0) != 0 || comma == std::string::npos || url.substr(0, comma).size() < 7 ||
            url.substr(comma - 7, 7) != ";base64") {
            refuse(param, "expected a base64 data URL (data:application/pdf;base64,...) or an http(s) URL");
        }
        request.file = url.substr(comma + 1);
    }
    if (n_files != 1) {
        refuse(at,
               "the document pipeline takes exactly one document (a \"file\" or \"image_url\" part), got " +
                   std::to_string(n_files));
    }
    if (const std::optional<bool> stream = get_bool(*doc, "stream")) {
        request.stream = *stream;
    }
    if (const json* options = member(*doc, "stream_options"); options && options->is_object()) {
        const json* usage = member(*options, "include_usage");
        request.include_usage = usage && usage->is_boolean() && usage->get<bool>();
    }
    return request;
} catch (const json::exception& e) {
    bad_request("the body cannot be read: " + json_error_text(e));
}

std::string new_log_id() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    static constexpr char kHex[] = "0123456789abcdef";
    std::string id(32, '0');
    for (size_t i = 0; i < id.size(); i += 16) {
        uint64_t bits = rng();
        for (size_t j = i; j < i + 16; ++j) {
            id[j] = kHex[bits & 15U];
            bits >>= 4U;
        }
    }
    return id;
}

std::string layout_parsing_result_body(const std::string& log_id, const nlohmann::ordered_json& result) {
    nlohmann::ordered_json body;
    body["logId"] = log_id;
    body["result"] = result;
    body["errorCode"] = 0;
    body["errorMsg"] = "Success";
    return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string layout_parsing_error_body(const std::string& log_id, int status, const std::string& message) {
    nlohmann::ordered_json body;
    body["logId"] = log_id;
    body["errorCode"] = status;
    body["errorMsg"] = message;
    return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::ordered_json prune_result(nlohmann::ordered_json page) {
    if (page.is_object()) {
        page.erase("input_path");
        for (auto& [key, value] : page.items()) {
            value = prune_result(std::move(value));
        }
    } else if (page.is_array()) {
        for (auto& value : page) {
            value = prune_result(std::move(value));
        }
    }
    return page;
}

}  // namespace folio::server
