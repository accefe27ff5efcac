// The reasoning parsers: whole answers split as vLLM's deepseek_r1 and FastDeploy's ernie-45-vl split them,
// and streams that give the same split however the text is cut, holding back only what could still be a tag.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "engine/chat-template/reasoning-parser.h"

namespace folio {
namespace {

struct Case {
    std::string text;
    std::string reasoning;
    std::string content;
    bool content_null = false;
};

const std::vector<Case> kDeepSeekR1 = {
    {"<think>abc</think>def", "abc", "def"},
    {"abc</think>def", "abc", "def"},  // the prompt ended with <think>
    {"<think>\nabc\n</think>\n\ndef", "\nabc\n", "\n\ndef"},
    {"abc</think>", "abc", "", true},
    {"abc", "abc", "", true},
    {"", "", "", true},
    {"<think>", "", "", true},
    {"<thin", "<thin", "", true},  // an unfinished tag is text
    {"</thi", "</thi", "", true},
    {"x<think>y</think>z", "x<think>y", "z"},  // only an opening tag at the start goes
    {"a</think>b</think>c", "a", "b</think>c"},
    {"<<think>a</think>b", "<<think>a", "b"},
    {"</</think>x", "</", "x"},
    {"<think></think>", "", "", true},
    {"\xE6\x80\x9D\xE8\x80\x83</think>\xE7\xAD\x94\xE3\x81\x88", "\xE6\x80\x9D\xE8\x80\x83",
     "\xE7\xAD\x94\xE3\x81\x88"},
};

const std::vector<Case> kErnie45Vl = {
    {"abc</think>def", "abc", "def"},
    {"<think>abc</think>def", "<think>abc", "def"},
    {"abc\n</think>\n\ndef", "abc\n", "\n\ndef"},
    {"abc</think>", "abc", ""},
    {"abc", "", "abc"},  // no </think>: all content
    {"", "", ""},
    {"</thi", "", "</thi"},
    {"a</think>b</think>c", "a", "b</think>c"},
    {"</</think>x", "</", "x"},
};

void expect_split(ReasoningFormat format, const std::vector<Case>& cases) {
    for (const Case& c : cases) {
        SCOPED_TRACE(testing::PrintToString(c.text));
        const ReasoningSplit split = split_reasoning(format, c.text);
        EXPECT_EQ(split.reasoning, c.reasoning);
        EXPECT_EQ(split.content, c.content);
        EXPECT_EQ(split.content_null, c.content_null);
    }
}

TEST(ReasoningParser, NamesAsVllmAndFastDeployGiveThem) {
    EXPECT_EQ(find_reasoning_format("deepseek_r1"), ReasoningFormat::DeepSeekR1);
    EXPECT_EQ(find_reasoning_format("DeepSeek_R1"), ReasoningFormat::DeepSeekR1);
    EXPECT_EQ(find_reasoning_format("ernie-45-vl"), ReasoningFormat::Ernie45Vl);
    EXPECT_EQ(find_reasoning_format("ERNIE-45-VL"), ReasoningFormat::Ernie45Vl);
    EXPECT_EQ(find_reasoning_format("ernie-45-vl-thinking"), ReasoningFormat::Ernie45Vl);
    EXPECT_EQ(find_reasoning_format("qwen3"), std::nullopt);
    EXPECT_EQ(find_reasoning_format(""), std::nullopt);
    EXPECT_STREQ(reasoning_format_name(ReasoningFormat::DeepSeekR1), "deepseek_r1");
    EXPECT_STREQ(reasoning_format_name(ReasoningFormat::Ernie45Vl), "ernie-45-vl");
    EXPECT_EQ(reasoning_format_names(), "deepseek_r1, ernie-45-vl or ernie-45-vl-thinking");
}

TEST(ReasoningParser, DeepSeekR1SplitsAtTheClosingTag) {
    expect_split(ReasoningFormat::DeepSeekR1, kDeepSeekR1);
}

TEST(ReasoningParser, Ernie45VlSplitsAtTheClosingTag) {
    expect_split(ReasoningFormat::Ernie45Vl, kErnie45Vl);
}

// A stream over pieces: the reasoning and content given, and after each piece the check that only a possible
// tag is held back.
ReasoningSplit stream_pieces(ReasoningFormat format, const std::vector<std::string_view>& pieces) {
    ReasoningStream stream(format);
    ReasoningSplit given;
    std::string so_far;
    for (const std::string_view piece : pieces) {
        const ReasoningSplit out = stream.push(piece);
        given.reasoning += out.reasoning;
        given.content += out.content;
        so_far += piece;
        // What the text so far gives once it ends; the stream may hold back only the start of a tag from it.
        ReasoningStream ended(format);
        ReasoningSplit whole = ended.push(so_far);
        const ReasoningSplit rest = ended.finish();
        whole.reasoning += rest.reasoning;
        whole.content += rest.content;
        EXPECT_EQ(given.content, whole.content) << "after " << testing::PrintToString(so_far);
        EXPECT_TRUE(whole.reasoning.starts_with(given.reasoning)) << testing::PrintToString(so_far);
        const std::string_view held = std::string_view(whole.reasoning)
                                          .substr(std::min(given.reasoning.size(), whole.reasoning.size()));
        EXPECT_TRUE(held.empty() || (held.size() < 8 && (std::string_view("</think>").starts_with(held) ||
                                                         std::string_view("<think>").starts_with(held))))
            << "held back " << testing::PrintToString(std::string(held)) << " of "
            << testing::PrintToString(so_far);
    }
    const ReasoningSplit rest = stream.finish();
    given.reasoning += rest.reasoning;
    given.content += rest.content;
    return given;
}

// What a stream gives for the whole text: the whole answer's split, but that ernie-45-vl streams text as
// reasoning until </think> comes.
ReasoningSplit streamed_split(ReasoningFormat format, const Case& c) {
    if (format == ReasoningFormat::Ernie45Vl && c.text.find("</think>") == std::string::npos) {
        return {c.text, "", false};
    }
    return {c.reasoning, c.content, false};
}

void expect_every_cut(ReasoningFormat format, const std::vector<Case>& cases) {
    for (const Case& c : cases) {
        const ReasoningSplit expected = streamed_split(format, c);
        const std::string_view text = c.text;
        // One piece, two pieces cut anywhere, and three.
        for (size_t i = 0; i <= text.size(); ++i) {
            for (size_t j = i; j <= text.size(); ++j) {
                SCOPED_TRACE(testing::PrintToString(c.text) + " cut at " + std::to_string(i) + " and " +
                             std::to_string(j));
                const ReasoningSplit got =
                    stream_pieces(format, {text.substr(0, i), text.substr(i, j - i), text.substr(j)});
                EXPECT_EQ(got.reasoning, expected.reasoning);
                EXPECT_EQ(got.content, expected.content);
            }
        }
        // A byte at a time.
        std::vector<std::string_view> bytes;
        for (size_t i = 0; i < text.size(); ++i) {
            bytes.push_back(text.substr(i, 1));
        }
        const ReasoningSplit got = stream_pieces(format, bytes);
        EXPECT_EQ(got.reasoning, expected.reasoning) << testing::PrintToString(c.text);
        EXPECT_EQ(got.content, expected.content) << testing::PrintToString(c.text);
    }
}

TEST(ReasoningParser, DeepSeekR1StreamsTheSameSplitWhereverTheTextIsCut) {
    expect_every_cut(ReasoningFormat::DeepSeekR1, kDeepSeekR1);
}

TEST(ReasoningParser, Ernie45VlStreamsTheSameSplitWhereverTheTextIsCut) {
    expect_every_cut(ReasoningFormat::Ernie45Vl, kErnie45Vl);
}

TEST(ReasoningParser, AStreamGivesTextAtOnceUnlessItCouldBeATag) {
    ReasoningStream stream(ReasoningFormat::DeepSeekR1);
    EXPECT_EQ(stream.push("<thi").reasoning, "");  // could still be the opening tag
    EXPECT_EQ(stream.push("nk>Let me see").reasoning, "Let me see");
    EXPECT_EQ(stream.push(" the page.</th").reasoning, " the page.");
    ReasoningSplit out = stream.push("ink>The");
    EXPECT_EQ(out.reasoning, "");
    EXPECT_EQ(out.content, "The");
    EXPECT_TRUE(stream.in_content());
    EXPECT_EQ(stream.push(" answer</think>").content, " answer</think>");  // after it, tags are text
    out = stream.finish();
    EXPECT_EQ(out.reasoning + out.content, "");

    ReasoningStream ernie(ReasoningFormat::Ernie45Vl);
    EXPECT_EQ(ernie.push("<think>a<").reasoning, "<think>a");
    EXPECT_EQ(ernie.push("b").reasoning, "<b");  // "<b" cannot begin </think>
    out = ernie.push("</");
    EXPECT_EQ(out.reasoning, "");
    out = ernie.finish();
    EXPECT_EQ(out.reasoning, "</");  // an unfinished tag at the end is text
}

}  // namespace
}  // namespace folio
