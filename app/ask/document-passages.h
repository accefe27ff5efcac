// "Ask the document", without Qt: a document's recognised blocks as passages behind short references
// ("p3.b5": page 3, its fifth block with text), the part of a conversation a chat model answers from, with a
// stated rule for a document longer than the context (whole pages, those holding most of the question's words
// first, then single blocks ranked the same way, the pages left out or given in part named), and the
// citations of those references in answers. The desktop app (app/chat/document-context) and the server (a
// chat request's "document") build their passages their own way and share the rest.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

struct Passage {
    std::string ref;  // "p3.b5"
    int page = 0;     // position in the document, from 0
    int block_id = 0;
    std::string text;  // plain text
};

struct PassageSelection {
    std::string text;              // instructions and the passages, ahead of the first question
    std::vector<int> pages;        // pages given, whole or in part, ascending
    std::vector<int> in_part;      // of those, pages only some of whose blocks fit, ascending
    std::vector<int> left_out;     // pages none of whose blocks fit, ascending
    int64_t estimated_tokens = 0;  // the instructions, the frame and the passages given, as counted
};

// A count of the tokens a text takes: one for every 3 bytes of its UTF-8 (English runs near one token for 4
// bytes, Chinese near one for each 3-byte character), where the model's tokenizer is not at hand.
int64_t estimate_tokens(std::string_view text);

// The tokens a text takes, by the model's tokenizer or estimate_tokens.
using TokenCounter = std::function<int64_t(std::string_view)>;

// The tokens each of texts takes in the model's tokenizer, in order (EngineService::count_tokens, or counts
// kept of it).
using TextsCounter = std::function<std::vector<int64_t>(const std::vector<std::string>&)>;

// A chat whose next answer a document part is chosen for: its messages' texts (the question last), the tokens
// its images and videos take (EngineService::count_media), the model's context and the room kept for the
// answer.
struct ChatBudget {
    std::vector<std::string> messages;
    int64_t media_tokens = 0;
    int64_t context_len = 0;
    int64_t answer_room = 0;
};

// Pages from 0 as a reader numbers them, in runs: "1-3, 7".
std::string page_list(const std::vector<int>& pages);

// A counter that answers from counts made ahead (the model's tokenizer over texts, count a text) and
// estimates any other text.
TokenCounter counted_tokens(const std::vector<std::string>& texts, const std::vector<int64_t>& counts);

class DocumentPassages {
public:
    DocumentPassages() = default;
    // Adds a block's text to a page (pages in order; empty text is skipped): its reference is the page's
    // next number.
    void add(int page, int block_id, std::string text);

    bool empty() const { return passages_.empty(); }
    const std::vector<Passage>& passages() const { return passages_; }
    const Passage* find(std::string_view ref) const;

    // The document part for a question within token_budget, each passage's line and the instructions counted
    // by count_tokens: every page where all fit; otherwise whole pages in order of how many of the question's
    // words they hold (any case; runs of 3 or more letters or digits, and in Chinese, Japanese and Korean
    // each pair of neighbouring characters), ties by page order, while they fit, then in the room left single
    // blocks of the other pages in the same order, all given in document order with the pages left out and
    // those given in part named (64 tokens are kept for that note). Empty text where not even one block fits.
    PassageSelection select(std::string_view question, int64_t token_budget,
                            const TokenCounter& count_tokens = estimate_tokens) const;
    // The document part for a chat's next answer, select() for its last message: the passages and the
    // messages counted together by count_texts, within the context less the messages (8 tokens of markup
    // each, 256 for the template's own text), their images and videos, and the room kept for the answer.
    PassageSelection select_for_chat(const ChatBudget& chat, const TextsCounter& count_texts) const;
    // The texts select() counts: each passage's line, then the instructions with the document's frame, for a
    // caller to count them with the model's tokenizer in one go (counted_tokens).
    std::vector<std::string> texts_to_count() const;

    // A document as folio-cli ocr writes its JSON (an array of pages, or PaddleOCR's one page object): each
    // page's parsing_res_list in order, each block's block_content as plain text (HTML tables as rows of
    // cells, tags and entities removed). Throws folio::Error naming `where` and the entry at fault.
    static DocumentPassages from_ocr_json(const nlohmann::json& document, std::string_view where);
    // Plain text as one page, each paragraph (lines up to a blank line) a block.
    static DocumentPassages from_text(std::string_view text);

private:
    std::vector<Passage> passages_;
    std::vector<int> n_on_page_;  // blocks given so far on each page
};

// A bracket of citations in an answer: "[p3.b5]" or "[p3.b5, p4.b1]", any case; a bracket holding anything
// else is not a citation. Offsets are bytes of the answer.
struct Citation {
    size_t start = 0;               // of the '['
    size_t length = 0;              // through the ']'
    std::vector<std::string> refs;  // lower case
    std::vector<bool> known;        // each ref is a passage of the document
};
std::vector<Citation> find_citations(std::string_view answer, const DocumentPassages& passages);

// The answer with each known reference a Markdown link to kCitationScheme:REF; unknown references struck
// through (~~p9.b9~~), so that the reader sees the model named a block the document does not have.
inline constexpr std::string_view kCitationScheme = "folio-cite";
std::string link_citations(std::string_view answer, const DocumentPassages& passages);

// Text with HTML markup removed: tags (a table's rows and cells become lines of cells joined by " | ") and
// the common entities.
std::string html_to_text(std::string_view html);

}  // namespace folio
