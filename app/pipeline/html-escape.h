// HTML escaping as Python's html.escape() does it, and as BeautifulSoup writes text back (quotes left as they
// are), the two forms PaddleOCR's table HTML takes.
#pragma once

#include <QString>

namespace folio {

enum class HtmlQuotes {
    Escaped,  // html.escape(text, quote=True): & < > " ' -> &amp; &lt; &gt; &quot; &#x27;
    Kept,     // & < > only
};

QString escapeHtml(const QString& text, HtmlQuotes quotes = HtmlQuotes::Escaped);

}  // namespace folio
