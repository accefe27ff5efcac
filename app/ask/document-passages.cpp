#include "app/ask/document-passages.h"

#include <unicode/uchar.h>
#include <unicode/uscript.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "engine/common/error.h"
#include "engine/tokenizer/unicode-text.h"

namespace folio {

namespace {

constexpr std::string_view kInstructions =
    "Answer from the document below. It is split into blocks, each starting with its reference in brackets, "
    "such as [p1.b1] for the first block of page 1. After each statement, cite the blocks it comes from by "
    "their references in brackets, for example [p2.b3] or [p2.b3, p4.b1]. If the document does not answer "
    "the question, say so.";
constexpr std::string_view kHead = "\n\n<document>\n";  // after the instructions
constexpr std::string_view kTail = "</document>";
constexpr int64_t kNoteTokens = 64;

// A passage as select() gives it.
std::string passage_line(const Passage& p) {
    return "[" + p.ref + "] " + p.text + "\n";
}

// The instructions and the document's frame, around the passages.
std::string frame_text() {
    return std::string(kInstructions) + std::string(kHead) + std::string(kTail);
}

std::string lower(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        const CodePoint c = code_point_at(text, pos);
        append_utf8(out, static_cast<uint32_t>(u_tolower(static_cast<UChar32>(c.value))));
        pos += c.size;
    }
    return out;
}

// Whether a character belongs to a script written without spaces between words: Han, kana, Hangul.
bool is_cjk(UChar32 c) {
    if (u_hasBinaryProperty(c, UCHAR_IDEOGRAPHIC)) {
        return true;
    }
    UErrorCode status = U_ZERO_ERROR;
    const UScriptCode script = uscript_getScript(c, &status);
    return U_SUCCESS(status) &&
           (script == USCRIPT_HIRAGANA || script == USCRIPT_KATAKANA || script == USCRIPT_HANGUL);
}

// The words of a question that rank pages, lower case: runs of letters or digits, 3 or more; in scripts
// written without spaces (Chinese, Japanese, Korean) each pair of neighbouring characters of a run, as
// search engines index them, since a run is a phrase rather than a word.
std::set<std::string> question_words(std::string_view question) {
    std::set<std::string> words;
    const std::string text = lower(question);
    std::string word;
    int n = 0;
    std::vector<std::string_view> run;  // the characters of a run of CJK
    const auto flush = [&] {
        if (n >= 3) {
            words.insert(word);
        }
        word.clear();
        n = 0;
        for (size_t i = 0; i + 1 < run.size(); ++i) {
            words.insert(std::string(run[i]) + std::string(run[i + 1]));
        }
        run.clear();
    };
    for (size_t pos = 0; pos < text.size();) {
        const CodePoint c = code_point_at(text, pos);
        const auto u = static_cast<UChar32>(c.value);
        const std::string_view character = std::string_view(text).substr(pos, c.size);
        if (is_cjk(u)) {
            if (n > 0) {
                flush();
            }
            run.push_back(character);
        } else if (u_isalnum(u)) {
            if (!run.empty()) {
                flush();
            }
            word.append(character);
            ++n;
        } else {
            flush();
        }
        pos += c.size;
    }
    flush();
    return words;
}

size_t count(std::string_view text, std::string_view word) {
    size_t n = 0;
    for (size_t pos = text.find(word); pos != std::string_view::npos;
         pos = text.find(word, pos + word.size())) {
        ++n;
    }
    return n;
}

std::string trimmed(std::string_view s) {
    const auto space = [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
    while (!s.empty() && space(s.front())) {
        s.remove_prefix(1);
    }
    while (!s.empty() && space(s.back())) {
        s.remove_suffix(1);
    }
    return std::string(s);
}

}  // namespace

std::string page_list(const std::vector<int>& pages) {
    std::string out;
    for (size_t i = 0; i < pages.size();) {
        size_t j = i;
        while (j + 1 < pages.size() && pages[j + 1] == pages[j] + 1) {
            ++j;
        }
        if (!out.empty()) {
            out += ", ";
        }
        out += std::to_string(pages[i] + 1);
        if (j != i) {
            out += '-';
            out += std::to_string(pages[j] + 1);
        }
        i = j + 1;
    }
    return out;
}

int64_t estimate_tokens(std::string_view text) {
    return (static_cast<int64_t>(text.size()) + 2) / 3;
}

void DocumentPassages::add(int page, int block_id, std::string text) {
    text = trimmed(text);
    if (text.empty() || page < 0) {
        return;
    }
    if (static_cast<size_t>(page) >= n_on_page_.size()) {
        n_on_page_.resize(static_cast<size_t>(page) + 1, 0);
    }
    const int n = ++n_on_page_[static_cast<size_t>(page)];
    std::string ref = "p";
    ref += std::to_string(page + 1);
    ref += ".b";
    ref += std::to_string(n);
    passages_.push_back({std::move(ref), page, block_id, std::move(text)});
}

const Passage* DocumentPassages::find(std::string_view ref) const {
    const auto it =
        std::find_if(passages_.begin(), passages_.end(), [&](const Passage& p) { return p.ref == ref; });
    return it == passages_.end() ? nullptr : &*it;
}

TokenCounter counted_tokens(const std::vector<std::string>& texts, const std::vector<int64_t>& counts) {
    auto known = std::make_shared<std::unordered_map<std::string, int64_t>>();
    for (size_t i = 0; i < texts.size() && i < counts.size(); ++i) {
        known->emplace(texts[i], counts[i]);
    }
    return [known](std::string_view text) {
        const auto it = known->find(std::string(text));
        return it == known->end() ? estimate_tokens(text) : it->second;
    };
}

PassageSelection DocumentPassages::select_for_chat(const ChatBudget& chat,
                                                   const TextsCounter& count_texts) const {
    std::vector<std::string> texts = texts_to_count();
    texts.insert(texts.end(), chat.messages.begin(), chat.messages.end());
    const TokenCounter count = counted_tokens(texts, count_texts(texts));
    int64_t budget = chat.context_len - chat.answer_room - chat.media_tokens - 256;  // the template's own
    for (const std::string& message : chat.messages) {
        budget -= count(message) + 8;
    }
    return select(chat.messages.empty() ? std::string_view() : std::string_view(chat.messages.back()), budget,
                  count);
}

std::vector<std::string> DocumentPassages::texts_to_count() const {
    std::vector<std::string> texts;
    texts.reserve(passages_.size() + 1);
    for (const Passage& p : passages_) {
        texts.push_back(passage_line(p));
    }
    texts.push_back(frame_text());
    return texts;
}

PassageSelection DocumentPassages::select(std::string_view question, int64_t token_budget,
                                          const TokenCounter& count_tokens) const {
    // A passage's or a page's tokens and score (how often the question's words occur in it); a page's are
    // the sums of its passages'.
    struct Scored {
        int64_t tokens = 0;
        size_t score = 0;
    };
    const std::set<std::string> words = question_words(question);
    std::vector<std::string> lines;  // each passage as the prompt has it
    std::vector<Scored> blocks;
    std::map<int, Scored> pages;
    std::map<int, std::vector<size_t>> on_page;  // each page's passages, in order
    for (size_t i = 0; i < passages_.size(); ++i) {
        const Passage& p = passages_[i];
        Scored& block = blocks.emplace_back();
        lines.push_back(passage_line(p));
        block.tokens = count_tokens(lines.back());
        const std::string folded = lower(lines.back());
        for (const std::string& w : words) {
            block.score += count(folded, w);
        }
        Scored& page = pages[p.page];
        page.tokens += block.tokens;
        page.score += block.score;
        on_page[p.page].push_back(i);
    }
    const int64_t fixed = count_tokens(frame_text()) + kNoteTokens;
    int64_t all = fixed;
    std::vector<int> order;
    for (const auto& [index, page] : pages) {
        all += page.tokens;
        order.push_back(index);
    }
    const auto by_score = [](const auto& scores) {
        return [&scores](const auto& a, const auto& b) { return scores.at(a).score > scores.at(b).score; };
    };
    if (all > token_budget) {
        std::stable_sort(order.begin(), order.end(), by_score(pages));
    }
    // Whole pages while they fit.
    int64_t used = fixed;
    std::set<int> whole;
    for (const int index : order) {
        if (used + pages.at(index).tokens <= token_budget) {
            used += pages.at(index).tokens;
            whole.insert(index);
        }
    }
    // Then, in the room left, single blocks of the other pages, those holding most of the question's words
    // first (ties in document order).
    std::vector<size_t> rest;
    for (size_t i = 0; i < passages_.size(); ++i) {
        if (!whole.count(passages_[i].page)) {
            rest.push_back(i);
        }
    }
    std::stable_sort(rest.begin(), rest.end(), by_score(blocks));
    std::vector<bool> given(passages_.size(), false);
    for (const size_t i : rest) {
        if (used + blocks[i].tokens <= token_budget) {
            used += blocks[i].tokens;
            given[i] = true;
        }
    }
    PassageSelection selection;
    std::string text = std::string(kInstructions) + std::string(kHead);
    for (const auto& [index, members] : on_page) {
        const bool in_whole = whole.count(index) > 0;
        size_t n_given = 0;
        for (const size_t i : members) {
            if (in_whole || given[i]) {
                text += lines[i];
                ++n_given;
            }
        }
        if (n_given == 0) {
            selection.left_out.push_back(index);
            continue;
        }
        selection.pages.push_back(index);
        if (n_given < members.size()) {
            selection.in_part.push_back(index);
        }
    }
    if (selection.pages.empty()) {
        return selection;
    }
    text += kTail;
    if (!selection.left_out.empty() || !selection.in_part.empty()) {
        text += "\nThe document is longer than the context:";
        if (!selection.left_out.empty()) {
            text += " pages ";
            text += page_list(selection.left_out);
            text += " are left out";
            text += selection.in_part.empty() ? "." : ";";
        }
        if (!selection.in_part.empty()) {
            text += " of pages ";
            text += page_list(selection.in_part);
            text += " only the blocks nearest the question are given.";
        }
    }
    selection.estimated_tokens = used - kNoteTokens;
    selection.text = std::move(text);
    return selection;
}

DocumentPassages DocumentPassages::from_ocr_json(const nlohmann::json& document, std::string_view where) {
    const nlohmann::json pages = document.is_array() ? document : nlohmann::json::array({document});
    DocumentPassages out;
    for (size_t p = 0; p < pages.size(); ++p) {
        const nlohmann::json& page = pages[p];
        std::string at(where);
        if (document.is_array()) {
            at += '[';
            at += std::to_string(p);
            at += ']';
        }
        if (!page.is_object()) {
            fail(at, " is not a page object (folio-cli ocr's JSON: pages with parsing_res_list)");
        }
        const auto list = page.find("parsing_res_list");
        if (list == page.end() || !list->is_array()) {
            fail(at, " has no parsing_res_list array");
        }
        for (size_t b = 0; b < list->size(); ++b) {
            const nlohmann::json& block = (*list)[b];
            const std::string block_at = at + ".parsing_res_list[" + std::to_string(b) + "]";
            if (!block.is_object()) {
                fail(block_at, " is not an object");
            }
            const auto content = block.find("block_content");
            if (content == block.end() || content->is_null()) {
                continue;
            }
            if (!content->is_string()) {
                fail(block_at, ".block_content is not a string");
            }
            int id = static_cast<int>(b);
            if (const auto given = block.find("block_id");
                given != block.end() && given->is_number_integer()) {
                id = given->get<int>();
            }
            const std::string* text = content->get_ptr<const std::string*>();
            if (text == nullptr || !is_valid_utf8(*text)) {
                fail(block_at, ".block_content is not valid UTF-8");
            }
            out.add(static_cast<int>(p), id, html_to_text(*text));
        }
    }
    return out;
}

DocumentPassages DocumentPassages::from_text(std::string_view text) {
    DocumentPassages out;
    std::string paragraph;
    int id = 0;
    size_t pos = 0;
    while (pos <= text.size()) {
        const size_t end = std::min(text.find('\n', pos), text.size());
        const std::string line = trimmed(text.substr(pos, end - pos));
        if (line.empty()) {
            out.add(0, id++, paragraph);
            paragraph.clear();
        } else {
            paragraph += (paragraph.empty() ? "" : "\n") + line;
        }
        pos = end + 1;
    }
    out.add(0, id, paragraph);
    return out;
}

namespace {

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

// The length of a reference "p<digits>.b<digits>" (any case) at text[pos], 0 where none starts there.
size_t ref_length(std::string_view text, size_t pos) {
    size_t i = pos;
    const auto letter = [&](char lower) {
        if (i < text.size() && (text[i] == lower || text[i] == lower - 'a' + 'A')) {
            ++i;
            return true;
        }
        return false;
    };
    const auto digits = [&] {
        const size_t start = i;
        while (i < text.size() && is_digit(text[i])) {
            ++i;
        }
        return i > start;
    };
    if (!letter('p') || !digits() || i >= text.size() || text[i++] != '.' || !letter('b') || !digits()) {
        return 0;
    }
    return i - pos;
}

}  // namespace

std::vector<Citation> find_citations(std::string_view answer, const DocumentPassages& passages) {
    // A bracket of one or more references separated by commas or semicolons (spaces allowed), nothing else.
    std::vector<Citation> out;
    for (size_t open = answer.find('['); open != std::string_view::npos; open = answer.find('[', open + 1)) {
        Citation c;
        size_t i = open + 1;
        bool closed = false;
        while (true) {
            while (i < answer.size() && is_space(answer[i])) {
                ++i;
            }
            const size_t n = ref_length(answer, i);
            if (n == 0) {
                break;
            }
            std::string name(answer.substr(i, n));
            std::transform(name.begin(), name.end(), name.begin(), [](char ch) {
                return ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch;
            });
            c.known.push_back(passages.find(name) != nullptr);
            c.refs.push_back(std::move(name));
            i += n;
            while (i < answer.size() && is_space(answer[i])) {
                ++i;
            }
            if (i < answer.size() && answer[i] == ']') {
                closed = true;
                break;
            }
            if (i >= answer.size() || (answer[i] != ',' && answer[i] != ';')) {
                break;
            }
            ++i;
        }
        if (!closed) {
            continue;
        }
        c.start = open;
        c.length = i + 1 - open;
        open = i;
        out.push_back(std::move(c));
    }
    return out;
}

std::string link_citations(std::string_view answer, const DocumentPassages& passages) {
    std::string out;
    size_t at = 0;
    for (const Citation& c : find_citations(answer, passages)) {
        out.append(answer.substr(at, c.start - at));
        out += "\\[";
        for (size_t i = 0; i < c.refs.size(); ++i) {
            out += i > 0 ? ", " : "";
            out += c.known[i] ? "[" + c.refs[i] + "](" + std::string(kCitationScheme) + ":" + c.refs[i] + ")"
                              : "~~" + c.refs[i] + "~~";
        }
        out += "\\]";
        at = c.start + c.length;
    }
    out.append(answer.substr(at));
    return out;
}

std::string html_to_text(std::string_view html) {
    std::string out;
    out.reserve(html.size());
    for (size_t i = 0; i < html.size();) {
        if (html[i] == '<') {
            const size_t end = html.find('>', i);
            if (end == std::string_view::npos) {
                out.append(html.substr(i));
                break;
            }
            std::string tag = lower(html.substr(i + 1, end - i - 1));
            if (tag.starts_with("/tr") || tag.starts_with("br") || tag.starts_with("/p") ||
                tag.starts_with("/div")) {
                while (out.ends_with(" | ")) {
                    out.resize(out.size() - 3);
                }
                out += '\n';
            } else if (tag.starts_with("/td") || tag.starts_with("/th")) {
                out += " | ";
            }
            i = end + 1;
            continue;
        }
        if (html[i] == '&') {
            static const std::pair<std::string_view, std::string_view> entities[] = {
                {"&amp;", "&"},   {"&lt;", "<"},  {"&gt;", ">"},
                {"&quot;", "\""}, {"&#39;", "'"}, {"&nbsp;", " "}};
            bool replaced = false;
            for (const auto& [entity, value] : entities) {
                if (html.substr(i, entity.size()) == entity) {
                    out += value;
                    i += entity.size();
                    replaced = true;
                    break;
                }
            }
            if (replaced) {
                continue;
            }
        }
        out += html[i++];
    }
    while (out.ends_with(" | ")) {
        out.resize(out.size() - 3);
    }
    return trimmed(out);
}

}  // namespace folio
