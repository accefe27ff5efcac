// Page ranges as users type them: "1-3,5,8-" (1-based, an open end runs to the last page), "all". Kept as
// spans rather than expanded, so that "1-999999" costs nothing until it meets a document.
#pragma once

#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

class PageRange {
public:
    // Largest page number a range may name.
    static constexpr int kMaxPage = 1'000'000'000;
    // Span::last of an open end ("8-"): to the document's last page.
    static constexpr int kOpenEnd = std::numeric_limits<int>::max();
    // Longest range text accepted.
    static constexpr size_t kMaxTextLength = 4096;

    struct Span {
        int first = 1;  // 1-based, inclusive
        int last = 1;   // inclusive; kOpenEnd for an open end ("8-")
        bool operator==(const Span&) const = default;
    };

    // Every page.
    PageRange() = default;

    // Parses comma-separated parts, each "N", "N-M", "N-" or "-M", spaces allowed around numbers and
    // separators; or "all" alone (any case). Throws folio::Error naming the text, what is wrong and where
    // (1-based character position): `page range "2-x": expected a page number at position 3`.
    static PageRange parse(std::string_view text);

    bool isAll() const { return all_; }
    // The parts as typed, in order (empty for "all").
    const std::vector<Span>& spans() const { return spans_; }

    struct Selection {
        std::vector<int> pages;          // 0-based indices, ascending, each once
        std::vector<std::string> notes;  // parts that reach beyond the document, said for the user
    };

    // The pages of a document of `pageCount` pages that the range selects; a part that reaches beyond the
    // last page is cut there and noted. Throws folio::Error naming the document where nothing is selected.
    Selection select(int pageCount, std::string_view documentName) const;

    // The range as text: "all", or its parts joined by commas ("1-3,5,8-").
    std::string toString() const;

private:
    bool all_ = true;
    std::vector<Span> spans_;
};

}  // namespace folio
