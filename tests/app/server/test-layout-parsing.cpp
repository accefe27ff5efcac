// PaddleOCR's document-parsing API's bodies: every field read into its option, each wrong value a 422 naming
// the field as PaddleX's validation answers, the envelopes and prune_result.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "app/server/layout-parsing.h"

namespace folio::server {
namespace {

using nlohmann::json;

// The ApiError a body is refused with.
ApiError refusal(const std::string& body) {
    try {
        parse_layout_parsing_request(body);
    } catch (const ApiError& e) {
        return e;
    }
    ADD_FAILURE() << "accepted: " << body;
    return ApiError(0, "", "");
}

TEST(LayoutParsingRequest, ReadsEveryOption) {
    const json body = {{"file", "JVBERi0="},
                       {"fileType", 0},
                       {"logId", "abc"},
                       {"useDocOrientationClassify", false},
                       {"useDocUnwarping", nullptr},
                       {"useLayoutDetection", true},
                       {"useChartRecognition", true},
                       {"useSealRecognition", false},
                       {"useOcrForImageBlock", true},
                       {"mergeLayoutBlocks", false},
                       {"layoutNms", false},
                       {"layoutThreshold", {{"2", 0.25}, {"table", 0.75}}},
                       {"layoutUnclipRatio", {1.5, 2.0}},
                       {"layoutMergeBboxesMode", {{"0", "small"}, {"image", "union"}}},
                       {"repetitionPenalty", 1.05},
                       {"temperature", 0.1},
                       {"topP", 0.9},
                       {"minPixels", 1000},
                       {"maxPixels", 2000},
                       {"maxNewTokens", 256},
                       {"markdownIgnoreLabels", {"header", "footer"}},
                       {"restructurePages", true},
                       {"mergeTables", false},
                       {"returnMarkdownImages", false},
                       {"visualize", true},
                       {"outputFormats", {"docx"}}};
    const LayoutParsingRequest r = parse_layout_parsing_request(body.dump());
    EXPECT_EQ(r.file, "JVBERi0=");
    EXPECT_FALSE(r.file_is_url);
    EXPECT_EQ(r.file_type, DocumentFileType::Pdf);
    EXPECT_EQ(r.log_id, "abc");
    EXPECT_EQ(r.use_layout_detection, true);
    EXPECT_EQ(r.use_chart_recognition, true);
    EXPECT_EQ(r.use_seal_recognition, false);
    EXPECT_EQ(r.use_ocr_for_image_block, true);
    EXPECT_EQ(r.merge_layout_blocks, false);
    EXPECT_EQ(r.layout_nms, false);
    EXPECT_FALSE(r.layout_threshold);
    ASSERT_EQ(r.layout_label_thresholds.size(), 2U);
    EXPECT_FLOAT_EQ(r.layout_label_thresholds.at("aside_text"), 0.25F);  // class id 2
    EXPECT_FLOAT_EQ(r.layout_label_thresholds.at("table"), 0.75F);
    ASSERT_TRUE(r.layout_unclip_ratio);
    EXPECT_DOUBLE_EQ((*r.layout_unclip_ratio)[0], 1.5);
    EXPECT_DOUBLE_EQ((*r.layout_unclip_ratio)[1], 2.0);
    EXPECT_EQ(r.layout_label_merge_modes.at("abstract"), BoxMergeMode::Small);
    EXPECT_EQ(r.layout_label_merge_modes.at("image"), BoxMergeMode::Union);
    EXPECT_DOUBLE_EQ(*r.repetition_penalty, 1.05);
    EXPECT_DOUBLE_EQ(*r.temperature, 0.1);
    EXPECT_DOUBLE_EQ(*r.top_p, 0.9);
    EXPECT_EQ(r.min_pixels, 1000);
    EXPECT_EQ(r.max_pixels, 2000);
    EXPECT_EQ(r.max_new_tokens, 256);
    EXPECT_EQ(*r.markdown_ignore_labels, (std::vector<std::string>{"header", "footer"}));
    EXPECT_TRUE(r.restructure_pages);
    EXPECT_FALSE(r.merge_tables);
    EXPECT_FALSE(r.return_markdown_images);
    EXPECT_EQ(r.visualize, true);
    EXPECT_TRUE(r.docx);
    EXPECT_TRUE(r.ignored.empty());
}

TEST(LayoutParsingRequest, DefaultsAreThoseOfPaddleX) {
    const LayoutParsingRequest r = parse_layout_parsing_request(R"({"file": "https://example.com/a.pdf"})");
    EXPECT_TRUE(r.file_is_url);
    EXPECT_FALSE(r.file_type);
    EXPECT_FALSE(r.use_layout_detection);
    EXPECT_FALSE(r.restructure_pages);
    EXPECT_TRUE(r.merge_tables);
    EXPECT_TRUE(r.return_markdown_images);
    EXPECT_FALSE(r.visualize);
    EXPECT_FALSE(r.docx);
    EXPECT_TRUE(r.log_id.empty());
}

TEST(LayoutParsingRequest, OneThresholdAndMergeModeForEveryLabel) {
    const LayoutParsingRequest r = parse_layout_parsing_request(
        R"({"file": "eA==", "layoutThreshold": 0.3, "layoutMergeBboxesMode": "large", "layoutUnclipRatio": 1.2})");
    EXPECT_FLOAT_EQ(*r.layout_threshold, 0.3F);
    EXPECT_EQ(r.layout_merge_mode, BoxMergeMode::Large);
    EXPECT_DOUBLE_EQ((*r.layout_unclip_ratio)[0], 1.2);
    EXPECT_DOUBLE_EQ((*r.layout_unclip_ratio)[1], 1.2);
}

TEST(LayoutParsingRequest, FieldsFolioKeepsAsItIsAreListed) {
    const LayoutParsingRequest r = parse_layout_parsing_request(
        R"({"file": "eA==", "prettifyMarkdown": false, "showFormulaNumber": true, "relevelTitles": false,
            "formatBlockContent": true, "layoutShapeMode": "rect", "vlmExtraArgs": {"x": 1}})");
    ASSERT_EQ(r.ignored.size(), 6U);
    EXPECT_NE(r.ignored[0].find("layoutShapeMode"), std::string::npos);
}

struct Refused {
    const char* body;
    const char* param;
    const char* says;
};

void PrintTo(const Refused& c, std::ostream* os) {
    *os << c.body;
}

class LayoutParsingRefusal : public testing::TestWithParam<Refused> {};

TEST_P(LayoutParsingRefusal, Is422NamingTheField) {
    const Refused& c = GetParam();
    const ApiError e = refusal(c.body);
    EXPECT_EQ(e.status(), 422) << c.body;
    EXPECT_EQ(e.param(), c.param) << c.body;
    EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
}

INSTANTIATE_TEST_SUITE_P(
    Bodies, LayoutParsingRefusal,
    testing::Values(
        Refused{"{", "", "not valid JSON"}, Refused{"[1]", "", "must be a JSON object"},
        Refused{"{}", "file", "is required"}, Refused{R"({"file": 3})", "file", "a string"},
        Refused{R"({"file": ""})", "file", "is empty"},
        Refused{R"({"file": "eA==", "fileType": 2})", "fileType", "0 (PDF) or 1 (image)"},
        Refused{R"({"file": "eA==", "fileType": "0"})", "fileType", "0 (PDF) or 1 (image)"},
        Refused{R"({"file": "eA==", "useLayoutDetection": "yes"})", "useLayoutDetection", "a boolean"},
        Refused{R"({"file": "eA==", "useDocOrientationClassify": true})", "useDocOrientationClassify",
                "no document orientation"},
        Refused{R"({"file": "eA==", "useDocUnwarping": true})", "useDocUnwarping", "unwarping"},
        Refused{R"({"file": "eA==", "layoutThreshold": 1.5})", "layoutThreshold", "between 0 and 1"},
        Refused{R"({"file": "eA==", "layoutThreshold": {"99": 0.5}})", "layoutThreshold", "class id 99"},
        Refused{R"({"file": "eA==", "layoutThreshold": {"tablex": 0.5}})", "layoutThreshold",
                "neither a class id nor a layout label"},
        Refused{R"({"file": "eA==", "layoutThreshold": {"table": "high"}})", "layoutThreshold.table",
                "a number"},
        Refused{R"({"file": "eA==", "layoutUnclipRatio": 0})", "layoutUnclipRatio", "> 0"},
        Refused{R"({"file": "eA==", "layoutUnclipRatio": [1, 2, 3]})", "layoutUnclipRatio", "two numbers"},
        Refused{R"({"file": "eA==", "layoutUnclipRatio": {"0": 1.0}})", "layoutUnclipRatio",
                "per-label ratios"},
        Refused{R"({"file": "eA==", "layoutMergeBboxesMode": "big"})", "layoutMergeBboxesMode",
                "large, small, union"},
        Refused{R"({"file": "eA==", "layoutShapeMode": "oval"})", "layoutShapeMode", "rect, quad"},
        Refused{R"({"file": "eA==", "promptLabel": "poem"})", "promptLabel", "ocr, formula"},
        Refused{R"({"file": "eA==", "temperature": -1})", "temperature", ">= 0"},
        Refused{R"({"file": "eA==", "topP": 0})", "topP", "> 0 and <= 1"},
        Refused{R"({"file": "eA==", "topP": 1.5})", "topP", "> 0 and <= 1"},
        Refused{R"({"file": "eA==", "repetitionPenalty": 0})", "repetitionPenalty", "> 0"},
        Refused{R"({"file": "eA==", "minPixels": 0})", "minPixels", "> 0"},
        Refused{R"({"file": "eA==", "maxPixels": 1.5})", "maxPixels", "an integer"},
        Refused{R"({"file": "eA==", "minPixels": 10, "maxPixels": 5})", "minPixels", "cannot be greater"},
        Refused{R"({"file": "eA==", "maxNewTokens": -3})", "maxNewTokens", "> 0"},
        Refused{R"({"file": "eA==", "markdownIgnoreLabels": "header"})", "markdownIgnoreLabels", "an array"},
        Refused{R"({"file": "eA==", "markdownIgnoreLabels": ["headr"]})", "markdownIgnoreLabels[0]",
                "not a layout label"},
        Refused{R"({"file": "eA==", "outputFormats": ["pdf"]})", "outputFormats[0]", "['docx']"},
        Refused{R"({"file": "eA==", "outputFormats": "docx"})", "outputFormats", "an array"},
        Refused{R"({"file": "eA==", "visualize": 1})", "visualize", "a boolean"},
        Refused{R"({"file": "eA==", "vlmExtraArgs": []})", "vlmExtraArgs", "an object"}));

TEST(LayoutParsingEnvelope, ResultAndErrorAsPaddleXWritesThem) {
    const json ok = json::parse(layout_parsing_result_body("id1", {{"layoutParsingResults", json::array()}}));
    EXPECT_EQ(ok["logId"], "id1");
    EXPECT_EQ(ok["errorCode"], 0);
    EXPECT_EQ(ok["errorMsg"], "Success");
    EXPECT_TRUE(ok["result"]["layoutParsingResults"].is_array());

    const json error = json::parse(layout_parsing_error_body("id2", 422, "file: is empty"));
    EXPECT_EQ(error["logId"], "id2");
    EXPECT_EQ(error["errorCode"], 422);
    EXPECT_EQ(error["errorMsg"], "file: is empty");
    EXPECT_FALSE(error.contains("result"));
}

TEST(LayoutParsingEnvelope, LogIdsAreRandomHex) {
    const std::string a = new_log_id();
    const std::string b = new_log_id();
    EXPECT_EQ(a.size(), 32U);
    EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos) << a;
    EXPECT_NE(a, b);
}

TEST(LayoutParsingEnvelope, PruneRemovesInputPathEverywhere) {
    const nlohmann::ordered_json page = {
        {"input_path", "/tmp/x.pdf"},
        {"page_index", 0},
        {"layout_det_res", {{"input_path", nullptr}, {"boxes", json::array()}}},
        {"list", {{{"input_path", 1}, {"keep", 2}}}}};
    const nlohmann::ordered_json pruned = prune_result(page);
    EXPECT_FALSE(pruned.contains("input_path"));
    EXPECT_EQ(pruned["page_index"], 0);
    EXPECT_FALSE(pruned["layout_det_res"].contains("input_path"));
    EXPECT_TRUE(pruned["layout_det_res"].contains("boxes"));
    EXPECT_FALSE(pruned["list"][0].contains("input_path"));
    EXPECT_EQ(pruned["list"][0]["keep"], 2);
}

json file_chat(const json& content, const char* model = "tiny-pipeline") {
    return {{"model", model}, {"messages", {{{"role", "user"}, {"content", content}}}}};
}

TEST(DocumentChat, OnlyThePipelinesNameIsTaken) {
    const json part = {{"type", "file"}, {"file", {{"file_data", "data:application/pdf;base64,JVBERg=="}}}};
    EXPECT_FALSE(parse_document_chat(file_chat({part}, "tiny").dump(), "tiny-pipeline"));
    EXPECT_FALSE(parse_document_chat(R"({"messages": []})", "tiny-pipeline"));
    EXPECT_FALSE(parse_document_chat("not json", "tiny-pipeline"));
    const std::optional<DocumentChatRequest> r = parse_document_chat(
        file_chat({{{"type", "text"}, {"text", "Convert"}}, part}).dump(), "tiny-pipeline");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->file, "JVBERg==");
    EXPECT_FALSE(r->file_is_url);
    EXPECT_EQ(r->param, "messages[0].content[1]");
    EXPECT_FALSE(r->stream);
}

TEST(DocumentChat, AnImageUrlPartAndStreaming) {
    json body =
        file_chat({{{"type", "image_url"}, {"image_url", {{"url", "https://example.com/page.png"}}}}});
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    const std::optional<DocumentChatRequest> r = parse_document_chat(body.dump(), "tiny-pipeline");
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->file_is_url);
    EXPECT_EQ(r->file, "https://example.com/page.png");
    EXPECT_TRUE(r->stream);
    EXPECT_TRUE(r->include_usage);
}

TEST(DocumentChat, RefusesWhatIsNotOneDocument) {
    const json pdf = {{"type", "file"}, {"file", {{"file_data", "data:application/pdf;base64,JVBERg=="}}}};
    const std::vector<std::pair<json, std::string>> cases = {
        {file_chat({{{"type", "text"}, {"text", "hi"}}}), "exactly one document"},
        {file_chat({pdf, pdf}), "part), got 2"},
        {file_chat("just text"), "\"file\" part"},
        {file_chat({{{"type", "file"}, {"file", {{"file_id", "file-1"}}}}}), "file_id is not taken"},
        {file_chat({{{"type", "file"}, {"file", {{"file_data", "JVBERg=="}}}}}), "base64 data URL"},
        {json{{"model", "tiny-pipeline"}, {"messages", {{{"role", "system"}, {"content", "x"}}}}},
         "user message"},
    };
    for (const auto& [body, says] : cases) {
        try {
            parse_document_chat(body.dump(), "tiny-pipeline");
            ADD_FAILURE() << "accepted: " << body.dump();
        } catch (const ApiError& e) {
            EXPECT_EQ(e.status(), 400);
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
        }
    }
}

TEST(Base64, DecodesWhatItEncodesAndRefusesTheRest) {
    const std::vector<uint8_t> bytes = {0, 1, 2, 250, 251, 252, 253};
    EXPECT_EQ(decode_base64(encode_base64(bytes), "file", "the file", 422), bytes);
    EXPECT_EQ(decode_base64("AAECAw", "file", "the file", 422),
              (std::vector<uint8_t>{0, 1, 2, 3}));  // no padding
    try {
        decode_base64("@@@@", "file", "the file", 422);
        FAIL() << "accepted";
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status(), 422);
        EXPECT_EQ(std::string(e.what()), "file: the file is not valid base64");
    }
}

}  // namespace
}  // namespace folio::server
