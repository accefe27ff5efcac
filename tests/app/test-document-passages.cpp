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

// A document longer than the context: whole pages by the question's words first, then single blocks of the
// other pages ranked the same way in the room left, given in document order and named in the note.
TEST(DocumentPassages, BlocksFillWhatWholePagesLeave) {
    std::string text;
    for (int i = 1; i <= 12; ++i) {
        text += "Paragraph " + std::to_string(i) + " is filler about nothing in particular, at some length. ";
        if (i == 4 || i == 9) {
            text += "The warranty covers the pump. ";
        }
        text += "\n\n";
    }
    const DocumentPassages one_page = DocumentPassages::from_text(text);
    ASSERT_EQ(one_page.passages().size(), 12u);
    const PassageSelection everything = one_page.select("warranty", 1 << 20);
    EXPECT_EQ(everything.pages, std::vector<int>{0});
    EXPECT_TRUE(everything.in_part.empty());
    EXPECT_EQ(everything.text.find("longer than the context"), std::string::npos);

    // Room for the instructions, the note and about three paragraphs: the two holding "warranty" first, then
    // the first by document order, all in document order.
    const auto tokens_of = [](const Passage& p) {
        return estimate_tokens("[" + p.ref + "] " + p.text + "\n");
    };
    int64_t whole = 0;
    for (const Passage& p : one_page.passages()) {
        whole += tokens_of(p);
    }
    const int64_t frame = one_page.select("", 1 << 20).estimated_tokens - whole;
    const int64_t budget = frame + 64 + tokens_of(*one_page.find("p1.b4")) +
                           tokens_of(*one_page.find("p1.b9")) + tokens_of(*one_page.find("p1.b1")) + 5;
    const PassageSelection cut = one_page.select("Does the WARRANTY cover it?", budget);
    EXPECT_EQ(cut.pages, std::vector<int>{0});
    EXPECT_EQ(cut.in_part, std::vector<int>{0});
    EXPECT_TRUE(cut.left_out.empty());
    EXPECT_LE(cut.estimated_tokens, budget);
    const size_t b1 = cut.text.find("[p1.b1] Paragraph"), b4 = cut.text.find("[p1.b4]"),
                 b9 = cut.text.find("[p1.b9]");
    ASSERT_NE(b4, std::string::npos) << cut.text;
    ASSERT_NE(b9, std::string::npos) << cut.text;
    ASSERT_NE(b1, std::string::npos) << cut.text;
    EXPECT_LT(b1, b4);
    EXPECT_LT(b4, b9);
    EXPECT_EQ(cut.text.find("[p1.b2] Paragraph"), std::string::npos) << cut.text;
    EXPECT_NE(cut.text.find("of pages 1 only the blocks nearest the question are given."), std::string::npos)
        << cut.text;

    // Pages: the page with the word whole, a block of another where a whole one does not fit, the rest named.
    json pages = json::array();
    for (int p = 0; p < 4; ++p) {
        json list = json::array();
        for (int b = 0; b < 3; ++b) {
            std::string content = "Page " + std::to_string(p + 1) + " block " + std::to_string(b + 1) +
                                  " holds filler text of some length to take room.";
            if (p == 2) {
                content += " Pump data.";
            }
            if (p == 3 && b == 1) {
                content += " The pump is red.";
            }
            list.push_back({{"block_content", content}, {"block_id", b}});
        }
        pages.push_back({{"parsing_res_list", list}});
    }
    const DocumentPassages doc = DocumentPassages::from_ocr_json(pages, "document");
    int64_t all_blocks = 0, page3 = 0;
    for (const Passage& p : doc.passages()) {
        all_blocks += tokens_of(p);
        page3 += p.page == 2 ? tokens_of(p) : 0;
    }
    // The instructions and the note's room, page 3 (each block says "pump"), p4.b2 and a little slack, short
    // of any other block (each over 20 tokens): pages 1-2 have none.
    const int64_t fixed = doc.select("", 1 << 20).estimated_tokens - all_blocks + 64;
    const PassageSelection mixed = doc.select("pump", fixed + page3 + tokens_of(*doc.find("p4.b2")) + 12);
    EXPECT_EQ(mixed.pages, (std::vector<int>{2, 3}));
    EXPECT_EQ(mixed.in_part, std::vector<int>{3});
    EXPECT_EQ(mixed.left_out, (std::vector<int>{0, 1}));
    EXPECT_NE(mixed.text.find("[p4.b2]"), std::string::npos) << mixed.text;
    EXPECT_EQ(mixed.text.find("[p4.b1]"), std::string::npos) << mixed.text;
    EXPECT_NE(
        mixed.text.find("pages 1-2 are left out; of pages 4 only the blocks nearest the question are given."),
        std::string::npos)
        << mixed.text;

    // Not even one block: nothing, for the caller to say so.
    const PassageSelection none = doc.select("pump", 20);
    EXPECT_TRUE(none.text.empty());
    EXPECT_TRUE(none.pages.empty());
    EXPECT_EQ(none.left_out, (std::vector<int>{0, 1, 2, 3}));
}

// Counts from the model's tokenizer decide what fits: a document that fits by the estimate but whose every
// byte is a token is cut; counted_tokens answers for the texts counted and estimates the rest.
TEST(DocumentPassages, TheModelsCountsDecideWhatFits) {
    const DocumentPassages doc =
        DocumentPassages::from_text("Alpha beta gamma.\n\nDelta epsilon.\n\nZeta pump.");
    const std::vector<std::string> texts = doc.texts_to_count();
    ASSERT_EQ(texts.size(), 4u);
    EXPECT_EQ(texts[0], "[p1.b1] Alpha beta gamma.\n");
    std::vector<int64_t> bytes;
    for (const std::string& t : texts) {
        bytes.push_back(static_cast<int64_t>(t.size()));
    }
    const TokenCounter per_byte = counted_tokens(texts, bytes);
    EXPECT_EQ(per_byte(texts[1]), static_cast<int64_t>(texts[1].size()));
    EXPECT_EQ(per_byte("abcdef"), estimate_tokens("abcdef"));

    // Room, by bytes, for the instructions, the note and the block with "pump": by the estimate everything.
    const int64_t budget = bytes[3] + 64 + bytes[2] + 2;
    const PassageSelection by_estimate = doc.select("pump", budget);
    EXPECT_TRUE(by_estimate.in_part.empty());
    EXPECT_EQ(by_estimate.pages, std::vector<int>{0});
    const PassageSelection by_bytes = doc.select("pump", budget, per_byte);
    EXPECT_EQ(by_bytes.in_part, std::vector<int>{0});
    EXPECT_NE(by_bytes.text.find("[p1.b3] Zeta pump."), std::string::npos) << by_bytes.text;
    EXPECT_EQ(by_bytes.text.find("[p1.b1] Alpha"), std::string::npos) << by_bytes.text;
    EXPECT_EQ(by_bytes.estimated_tokens, bytes[3] + bytes[2]);
    // The whole document by its byte counts.
    int64_t all = 0;
    for (const int64_t n : bytes) {
        all += n;
    }
    const PassageSelection whole = doc.select("pump", all + 64, per_byte);
    EXPECT_TRUE(whole.in_part.empty());
    EXPECT_EQ(whole.estimated_tokens, all);
}

// A question in Chinese ranks pages by the pairs of neighbouring characters it shares with them, since its
// words are not spaced; mixed with a Latin word, each part counts its own way.
TEST(DocumentPassages, ChineseQuestionsRankPagesByCharacterPairs) {
    json pages = json::array();
    const std::vector<std::string> texts = {
        "本章介绍设备的安装步骤和注意事项，安装前请阅读全部说明。",
        "水泵的保修期为两年，自购买之日起计算，保修范围不包括人为损坏。",
        "附录列出常见问题与联系方式，如有疑问请致电客服中心。",
    };
    for (const std::string& text : texts) {
        pages.push_back({{"parsing_res_list", json::array({{{"block_content", text}, {"block_id", 0}}})}});
    }
    const DocumentPassages doc = DocumentPassages::from_ocr_json(pages, "document");
    int64_t lines = 0;
    for (const Passage& p : doc.passages()) {
        lines += estimate_tokens("[" + p.ref + "] " + p.text + "\n");
    }
    const int64_t frame = doc.select("", 1 << 20).estimated_tokens - lines;
    // Room for one page.
    const int64_t budget = frame + 64 + estimate_tokens("[p2.b1] " + texts[1] + "\n") + 2;
    const PassageSelection warranty = doc.select("水泵的保修期是多久？", budget);
    EXPECT_EQ(warranty.pages, std::vector<int>{1}) << warranty.text;
    const PassageSelection contact = doc.select("客服的联系方式是什么？", budget);
    EXPECT_EQ(contact.pages, std::vector<int>{2}) << contact.text;
    const PassageSelection mixed = doc.select("When is the 客服中心 open?", budget);
    EXPECT_EQ(mixed.pages, std::vector<int>{2}) << mixed.text;
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
