#include "app/documents/page-range.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <utility>

#include "engine/common/error.h"

namespace folio {

namespace {

bool isSpace(char c) {
    return c == ' ' || c == '\t';
}

bool isDigit(char c) {
    return c >= '0' && c <= '9';
}

bool isLetter(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

char lower(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// Text from its parts, as folio::fail builds messages.
template <typename... Parts>
std::string concat(Parts&&... parts) {
    std::ostringstream out;
    (out << ... << std::forward<Parts>(parts));
    return out.str();
}

// A character for a message: 'c' where printable, its byte value otherwise.
std::string quoted(char c) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
        std::string text(3, '\'');
        text[1] = c;
        return text;
    }
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "byte 0x%02x", byte);
    return buffer;
}

std::string spanText(const PageRange::Span& span) {
    if (span.first == span.last) {
        return std::to_string(span.first);
    }
    if (span.last == PageRange::kOpenEnd) {
        return std::to_string(span.first) + "-";
    }
    return std::to_string(span.first) + "-" + std::to_string(span.last);
}

class Parser {
public:
    explicit Parser(std::string_view text) : text_(text) {}

    PageRange::Span part() {
        skipSpaces();
        const size_t start = pos_;
        PageRange::Span span;
        if (peek() == '-') {
            ++pos_;
            skipSpaces();
            span.first = 1;
            span.last = number();
        } else {
            span.first = number();
            skipSpaces();
            if (peek() == '-') {
                ++pos_;
                skipSpaces();
                span.last = isDigit(peek()) ? number() : PageRange::kOpenEnd;
            } else {
                span.last = span.first;
            }
        }
        if (span.last < span.first) {
            error("\"" + std::string(text_.substr(start, pos_ - start)) + "\" at position " +
                  std::to_string(start + 1) + " runs backwards");
        }
        skipSpaces();
        return span;
    }

    bool atEnd() const { return pos_ >= text_.size(); }
    char peek() const { return atEnd() ? '\0' : text_[pos_]; }
    size_t position() const { return pos_; }
    void advance() { ++pos_; }

    void skipSpaces() {
        while (!atEnd() && isSpace(text_[pos_])) {
            ++pos_;
        }
    }

    [[noreturn]] void unexpected(const char* expected) const {
        if (atEnd()) {
            error(std::string("expected ") + expected + " at the end");
        }
        error("unexpected " + quoted(text_[pos_]) + " at position " + std::to_string(pos_ + 1) +
              " (expected " + expected + ")");
    }

    [[noreturn]] void error(const std::string& what) const { fail("page range \"", text_, "\": ", what); }

private:
    int number() {
        if (!isDigit(peek())) {
            unexpected("a page number");
        }
        const size_t start = pos_;
        int64_t value = 0;
        while (isDigit(peek())) {
            value = value * 10 + (text_[pos_] - '0');
            if (value > PageRange::kMaxPage) {
                error("the page number at position " + std::to_string(start + 1) + " is larger than " +
                      std::to_string(PageRange::kMaxPage));
            }
            ++pos_;
        }
        if (value == 0) {
            error("page 0 at position " + std::to_string(start + 1) + ": pages are numbered from 1");
        }
        return static_cast<int>(value);
    }

    std::string_view text_;
    size_t pos_ = 0;
};

}  // namespace

PageRange PageRange::parse(std::string_view text) {
    if (text.size() > kMaxTextLength) {
        fail("page range of ", text.size(), " characters is longer than the limit of ", kMaxTextLength);
    }
    Parser parser(text);
    parser.skipSpaces();
    if (parser.atEnd()) {
        fail("page range \"", text, "\" is empty; expected pages such as \"1-3,5,8-\" or \"all\"");
    }
    if (isLetter(parser.peek())) {
        const size_t start = parser.position();
        std::string word;
        while (isLetter(parser.peek())) {
            word += lower(parser.peek());
            parser.advance();
        }
        if (word != "all") {
            parser.error("unexpected \"" + std::string(text.substr(start, parser.position() - start)) +
                         "\" at position " + std::to_string(start + 1) +
                         " (expected a page number or \"all\")");
        }
        parser.skipSpaces();
        if (!parser.atEnd()) {
            parser.unexpected("nothing after \"all\"");
        }
        return PageRange();
    }
    PageRange range;
    range.all_ = false;
    while (true) {
        range.spans_.push_back(parser.part());
        if (parser.atEnd()) {
            break;
        }
        if (parser.peek() != ',') {
            parser.unexpected("\",\" or \"-\"");
        }
        parser.advance();
    }
    // Written out ("-5" as "1-5"), a range may grow; what it prints must parse again.
    const size_t written = range.toString().size();
    if (written > kMaxTextLength) {
        fail("page range of ", text.size(), " characters is ", written,
             " characters written out, longer than the limit of ", kMaxTextLength);
    }
    return range;
}

PageRange::Selection PageRange::select(int pageCount, std::string_view documentName) const {
    if (pageCount <= 0) {
        fail(documentName, ": the document has no pages");
    }
    Selection selection;
    if (all_) {
        selection.pages.reserve(static_cast<size_t>(pageCount));
        for (int i = 0; i < pageCount; ++i) {
            selection.pages.push_back(i);
        }
        return selection;
    }
    const std::string pages = concat(pageCount, pageCount == 1 ? " page" : " pages");
    const std::string beyond = concat(" beyond the ", pages, " of ", documentName);
    std::vector<Span> kept;
    for (const Span& span : spans_) {
        if (span.first > pageCount) {
            selection.notes.push_back(concat(span.first == span.last ? "page \"" : "pages \"", spanText(span),
                                             span.first == span.last ? "\" is" : "\" are", beyond));
            continue;
        }
        if (span.last > pageCount && span.last != kOpenEnd) {
            selection.notes.push_back(concat("pages \"", spanText(span), "\" reach", beyond, "; pages ",
                                             span.first, "-", pageCount, " taken"));
        }
        kept.push_back(Span{span.first, std::min(span.last, pageCount)});
    }
    if (kept.empty()) {
        fail(documentName, ": page range \"", toString(), "\" selects no page (the document has ", pages,
             ")");
    }
    std::sort(kept.begin(), kept.end(), [](const Span& a, const Span& b) { return a.first < b.first; });
    int64_t next = 1;  // first page not yet taken
    for (const Span& span : kept) {
        for (int64_t page = std::max<int64_t>(span.first, next); page <= span.last; ++page) {
            selection.pages.push_back(static_cast<int>(page - 1));
        }
        next = std::max<int64_t>(next, int64_t{span.last} + 1);
    }
    return selection;
}

std::string PageRange::toString() const {
    if (all_) {
        return "all";
    }
    std::string text;
    for (const Span& span : spans_) {
        if (!text.empty()) {
            text += ',';
        }
        text += spanText(span);
    }
    return text;
}

}  // namespace folio
