// Fuzzes the page range parser: any text either gives a range whose spans are in bounds, that prints as text
// parsing back to the same spans, and that selects ascending, distinct, in-range pages; or throws
// folio::Error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "app/documents/page-range.h"
#include "engine/common/error.h"

namespace {

void check(bool condition) {
    if (!condition) {
        std::abort();
    }
}

void checkSelection(const folio::PageRange& range, int pageCount) {
    try {
        const folio::PageRange::Selection selection = range.select(pageCount, "fuzz.pdf");
        check(!selection.pages.empty());
        for (size_t i = 0; i < selection.pages.size(); ++i) {
            check(selection.pages[i] >= 0 && selection.pages[i] < pageCount);
            check(i == 0 || selection.pages[i] > selection.pages[i - 1]);
        }
    } catch (const folio::Error&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    folio::PageRange range;
    try {
        range = folio::PageRange::parse(text);
    } catch (const folio::Error&) {
        return 0;
    }
    check(range.isAll() == range.spans().empty());
    for (const folio::PageRange::Span& span : range.spans()) {
        check(span.first >= 1 && span.first <= folio::PageRange::kMaxPage);
        check(span.last >= span.first);
        check(span.last <= folio::PageRange::kMaxPage || span.last == folio::PageRange::kOpenEnd);
    }
    const folio::PageRange again = folio::PageRange::parse(range.toString());
    check(again.isAll() == range.isAll() && again.spans() == range.spans());
    for (const int pageCount : {1, 2, 7, 1000}) {
        checkSelection(range, pageCount);
    }
    return 0;
}
