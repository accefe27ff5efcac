// folio-cli generate --document without a model: the files it reads (folio-cli ocr's JSON, text) and the
// errors that name them, and the line that tells which pages an answer was given and which blocks it cites.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "app/cli/document-prompt.h"
#include "engine/common/error.h"
#include "temp-dir.h"

namespace folio::cli {
namespace {

std::filesystem::path write(const std::filesystem::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
}

std::string error_of(const std::filesystem::path& file) {
    try {
        load_document(file);
    } catch (const Error& e) {
        return e.what();
    }
    return "accepted";
}

TEST(DocumentPrompt, ReadsTheJsonFolioCliOcrWritesAndText) {
    const test::TempDir dir;
    const auto json = write(dir.path() / "report.JSON",
                            R"([{"parsing_res_list": [{"block_content": "Sales grew.", "block_id": 4}]},
                                {"parsing_res_list": [{"block_content": "<table><tr><td>North</td></tr></table>",
                                                       "block_id": 0}]}])");
    const DocumentPassages from_json = load_document(json);
    ASSERT_EQ(from_json.passages().size(), 2u);
    EXPECT_EQ(from_json.passages()[0].block_id, 4);
    EXPECT_EQ(from_json.passages()[1].ref, "p2.b1");
    EXPECT_EQ(from_json.passages()[1].text, "North");
    const DocumentPassages from_text =
        load_document(write(dir.path() / "notes.md", "# Notes\n\nOne.\n\nTwo.\n"));
    EXPECT_EQ(from_text.passages().size(), 3u);
}

TEST(DocumentPrompt, ErrorsNameTheFileAndWhatIsWrong) {
    const test::TempDir dir;
    EXPECT_NE(error_of(dir.path() / "missing.txt").find("missing.txt"), std::string::npos);
    const std::string not_json = error_of(write(dir.path() / "broken.json", "{\"pages\": [1,"));
    EXPECT_NE(not_json.find("broken.json: not JSON"), std::string::npos) << not_json;
    const std::string other = error_of(write(dir.path() / "other.json", R"({"pages": 1})"));
    EXPECT_NE(other.find("other.json has no parsing_res_list"), std::string::npos) << other;
    const std::string binary =
        error_of(write(dir.path() / "scan.png", std::string("\x89PNG\r\n\x1a\n\xff\xfe", 10)));
    EXPECT_NE(binary.find("scan.png: not UTF-8 text"), std::string::npos) << binary;
    const std::string empty = error_of(write(dir.path() / "empty.txt", "\n \n\n"));
    EXPECT_NE(empty.find("empty.txt: no text to answer from"), std::string::npos) << empty;
}

TEST(DocumentPrompt, DescribesThePagesGivenAndTheBlocksCited) {
    DocumentPassages d;
    d.add(0, 7, "Sales grew.");
    d.add(1, 2, "Costs fell.");
    d.add(2, 0, "Outlook.");
    PassageSelection s;
    s.pages = {0, 1};
    s.in_part = {1};
    s.left_out = {2};
    EXPECT_EQ(
        describe_answer("Sales grew [p1.b1], costs fell [P2.B1, p9.b9]. Again [p1.b1].", d, s),
        "given pages 1-2 (2 in part), left out 3; cites p1.b1 (page 1, block 7), p2.b1 (page 2, block 2), "
        "p9.b9 (no such block)");
    PassageSelection whole;
    whole.pages = {0};
    EXPECT_EQ(describe_answer("No brackets here.", d, whole), "given page 1; cites no block");
}

}  // namespace
}  // namespace folio::cli
