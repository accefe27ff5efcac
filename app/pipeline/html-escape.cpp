#include "app/pipeline/html-escape.h"

namespace folio {

QString escapeHtml(const QString& text, HtmlQuotes quotes) {
    QString out;
    out.reserve(text.size() + text.size() / 8);
    for (const QChar c : text) {
        switch (c.unicode()) {
            case '&':
                out += QLatin1String("&amp;");
                break;
            case '<':
                out += QLatin1String("&lt;");
                break;
            case '>':
                out += QLatin1String("&gt;");
                break;
            case '"':
                out += quotes == HtmlQuotes::Escaped ? QLatin1String("&quot;") : QLatin1String("\"");
                break;
            case '\'':
                out += quotes == HtmlQuotes::Escaped ? QLatin1String("&#x27;") : QLatin1String("'");
                break;
            default:
                out += c;
        }
    }
    return out;
}

}  // namespace folio
