// Ask the document's passages as the server builds them: from the JSON folio-cli ocr writes and from plain
// text, HTML tables as rows of cells, and errors that name the entry at fault.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "app/ask/document-passages.h"
#include "engine/common/error.h"

namespace folio {
namespace {

using nlohmann::json;

json ocr_document() {
    return json::array(
        {json{
             {"page_index", 0},
             {"parsing_res_list",
              json::array(
                  {json{{"block_label", "doc_title"}, {"block_content", "Annual report"}, {"block_id", 0}},
                   json{{"block_label", "image"}, {"block_content", nullptr}, {"block_id", 1}},
                   json{
                       {"block_label", "text"}, {"block_content", "Sales &amp; costs."}, {"block_id", 2}}})}},
         json{{"page_index", 1},
              {"parsing_res_list",
               json::array(
                   {json{{"block_label", "table"},
                         {"block_content",
                          "<table><tr><td>Region</td><td>Sales</td></tr><tr><td>North</td><td>40</td></tr>"
                          "</table>"},
                         {"block_id", 0}}})}}});
}

TEST(DocumentPassages, FromTheJsonFolioCliOcrWrites) {
    const DocumentPassages d = DocumentPassages::from_ocr_json(ocr_document(), "document");
    ASSERT_EQ(d.passages().size(), 3u);
    EXPECT_EQ(d.passages()[0].ref, "p1.b1");
    EXPECT_EQ(d.passages()[1].ref, "p1.b2") << "the image block has nothing to cite";
    EXPECT_EQ(d.passages()[1].block_id, 2);
    EXPECT_EQ(d.passages()[1].text, "Sales & costs.");
    EXPECT_EQ(d.passages()[2].ref, "p2.b1");
    EXPECT_EQ(d.passages()[2].page, 1);
    EXPECT_EQ(d.passages()[2].text, "Region | Sales\nNorth | 40");
    // PaddleOCR's one page object.
    const DocumentPassages one = DocumentPassages::from_ocr_json(ocr_document()[1], "document");
    ASSERT_EQ(one.passages().size(), 1u);
    EXPECT_EQ(one.passages()[0].ref, "p1.b1");
}

TEST(DocumentPassages, ErrorsNameTheEntry) {
    json bad = ocr_document();
    bad[1]["parsing_res_list"][0]["block_content"] = 7;
    try {
        DocumentPassages::from_ocr_json(bad, "document");
        ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("document[1].parsing_res_list[0].block_content"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(DocumentPassages::from_ocr_json(json::array({1}), "document"), Error);
    EXPECT_THROW(DocumentPassages::from_ocr_json(json{{"pages", 1}}, "document"), Error);
    json invalid = ocr_document();
    invalid[0]["parsing_res_list"][0]["block_content"] = std::string("\xff\xfe", 2);
    EXPECT_THROW(DocumentPassages::from_ocr_json(invalid, "document"), Error);
}

TEST(DocumentPassages, PlainTextIsOnePageOfParagraphs) {
    const DocumentPassages d =
        DocumentPassages::from_text("First line\nsame paragraph.\n\n\n  Second.  \n\nThird");
    ASSERT_EQ(d.passages().size(), 3u);
    EXPECT_EQ(d.passages()[0].text, "First line\nsame paragraph.");
    EXPECT_EQ(d.passages()[1].ref, "p1.b2");
    EXPECT_EQ(d.passages()[1].text, "Second.");
    EXPECT_EQ(d.passages()[2].ref, "p1.b3");
    EXPECT_TRUE(DocumentPassages::from_text(" \n\n ").empty());
}

TEST(DocumentPassages, CitationsAreByteSpansOfTheAnswer) {
    const DocumentPassages d = DocumentPassages::from_ocr_json(ocr_document(), "document");
    const std::string answer = "Ventes \xC3\xA0 40 [P2.B1; p1.b2] et [p7.b1], pas [p1].";
    const std::vector<Citation> found = find_citations(answer, d);
    ASSERT_EQ(found.size(), 2u);
    EXPECT_EQ(answer.substr(found[0].start, found[0].length), "[P2.B1; p1.b2]");
    EXPECT_EQ(found[0].refs, (std::vector<std::string>{"p2.b1", "p1.b2"}));
    EXPECT_EQ(found[1].known, std::vector<bool>{false});
    EXPECT_EQ(link_citations(answer, d),
              "Ventes \xC3\xA0 40 \\[[p2.b1](folio-cite:p2.b1), [p1.b2](folio-cite:p1.b2)\\] et "
              "\\[~~p7.b1~~\\], pas [p1].");
}

TEST(DocumentPassages, HtmlBecomesText) {
    EXPECT_EQ(html_to_text("<p>a &lt;b&gt;</p><p>c&nbsp;d</p>"), "a <b>\nc d");
    EXPECT_EQ(html_to_text("x <br/> y"), "x \n y");
    EXPECT_EQ(html_to_text("unclosed <b"), "unclosed <b");
    EXPECT_EQ(html_to_text("&unknown; &amp;"), "&unknown; &");
}

}  // namespace
}  // namespace folio
