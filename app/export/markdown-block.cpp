#include "app/export/markdown-block.h"

#include <QRegularExpression>
#include <QStringList>

#include "app/pipeline/html-escape.h"
#include "app/pipeline/python-whitespace.h"

namespace folio {
namespace {

// Numbering at the start of a title: 1, 1.2, 1.2. or 1、; (1) or (一) in ASCII or full-width brackets;
// Chinese numerals with an optional 、 or .; a Roman numeral I..X followed by '.' or whitespace.
const QRegularExpression& titlePattern() {
    static const QString chineseDigits = QStringLiteral("一二三四五六七八九十百千万亿零壹贰叁肆伍陆柒捌玖拾");
    static const QString arabic = QStringLiteral("[1-9][0-9]*(?:\\.[1-9][0-9]*)*[.、]?");
    static const QString bracketed = QStringLiteral("[(（](?:[1-9][0-9]*|[%1]+)[)）]").arg(chineseDigits);
    static const QString chinese = QStringLiteral("[%1]+[、.]?").arg(chineseDigits);
    static const QString roman = QStringLiteral("(?:I|II|III|IV|V|VI|VII|VIII|IX|X)(?:\\.|\\s)");
    static const QRegularExpression pattern(
        QStringLiteral("^\\s*(%1|%2|%3|%4)(\\s*)(.*)$").arg(arabic, bracketed, chinese, roman),
        QRegularExpression::UseUnicodePropertiesOption);
    return pattern;
}

QString leftStripped(const QString& text) {
    qsizetype begin = 0;
    while (begin < text.size() && isPythonSpace(text[begin].unicode())) {
        ++begin;
    }
    return text.mid(begin);
}

QString centred(const QString& html, bool join = true) {
    return QStringLiteral("<div style=\"text-align: center;\">") + (join ? joinLines(html) : html) +
           QStringLiteral("</div>\n");
}

// \n\n -> \n, then every \n doubled: each line its own paragraph.
QString paragraphs(const QString& text) {
    QString out = text;
    out.replace(QLatin1String("\n\n"), QLatin1String("\n"));
    out.replace(QLatin1String("\n"), QLatin1String("\n\n"));
    return out;
}

// The first non-blank piece (split on `separator`) made a heading where it is one of the words.
QString headFirstPiece(const QString& text, const QString& separator, const QStringList& words,
                       const QString& suffix) {
    QStringList pieces = text.split(separator);
    for (QString& piece : pieces) {
        if (stripPythonSpace(piece).isEmpty()) {
            continue;
        }
        if (words.contains(piece.toLower())) {
            piece = QStringLiteral("## ") + piece + suffix;
        }
        break;
    }
    return pieces.join(separator);
}

QString image(const BlockResult& block, const QString& link, int pageWidth) {
    if (link.isEmpty()) {
        return centred(QString());
    }
    const int percent =
        pageWidth > 0 ? static_cast<int>(static_cast<double>(block.box.width()) / pageWidth * 100.0) : 100;
    QString tag = QStringLiteral("<img src=\"%1\" alt=\"Image\" width=\"%2%\" />")
                      .arg(joinLines(escapeHtml(link)), QString::number(percent));
    if (block.content.isEmpty()) {
        return centred(tag);
    }
    // Recognised text of an image (OCR of image blocks, seal recognition) follows it, lines kept.
    return centred(tag + QStringLiteral("\n\n") + block.content + QStringLiteral("\n\n"), false);
}

// A recognised chart ("a | b" lines) as PaddleOCR-VL's HTML table, the first line as its head.
QString chartTable(const QString& content) {
    const QStringList lines = content.split(QLatin1Char('\n'));
    QString html =
        QStringLiteral("<table border=1 style='margin: auto; width: max-content;'>\n  <thead><tr>");
    for (const QString& cell : lines.front().split(QLatin1Char('|'))) {
        html += QStringLiteral("<th style='text-align: center;'>") + stripPythonSpace(cell) +
                QStringLiteral("</th>");
    }
    html += QStringLiteral("</tr></thead>\n  <tbody>\n");
    for (qsizetype i = 1; i < lines.size(); ++i) {
        html += QStringLiteral("    <tr>");
        for (const QString& cell : lines[i].split(QLatin1Char('|'))) {
            html += QStringLiteral("<td style='text-align: center;'>") + stripPythonSpace(cell) +
                    QStringLiteral("</td>");
        }
        html += QStringLiteral("</tr>\n");
    }
    return html + QStringLiteral("  </tbody>\n</table>");
}

QString styledTable(const QString& content) {
    QString html = content;
    html.replace(QLatin1String("<table>"),
                 QLatin1String("<table border=1 style='margin: auto; word-wrap: break-word;'>"));
    html.replace(QLatin1String("<th>"),
                 QLatin1String("<th style='text-align: center; word-wrap: break-word;'>"));
    html.replace(QLatin1String("<td>"),
                 QLatin1String("<td style='text-align: center; word-wrap: break-word;'>"));
    return QStringLiteral("\n") + html;
}

QString stripNewlines(const QString& text) {
    qsizetype begin = 0;
    qsizetype end = text.size();
    while (begin < end && text[begin] == QLatin1Char('\n')) {
        ++begin;
    }
    while (end > begin && text[end - 1] == QLatin1Char('\n')) {
        --end;
    }
    return text.mid(begin, end - begin);
}

}  // namespace

const QSet<QString>& markdownLabels() {
    static const QSet<QString> labels = {
        QStringLiteral("paragraph_title"),
        QStringLiteral("abstract_title"),
        QStringLiteral("reference_title"),
        QStringLiteral("content_title"),
        QStringLiteral("doc_title"),
        QStringLiteral("table_title"),
        QStringLiteral("figure_title"),
        QStringLiteral("chart_title"),
        QStringLiteral("vision_footnote"),
        QStringLiteral("text"),
        QStringLiteral("ocr"),
        QStringLiteral("vertical_text"),
        QStringLiteral("reference_content"),
        QStringLiteral("abstract"),
        QStringLiteral("content"),
        QStringLiteral("image"),
        QStringLiteral("chart"),
        QStringLiteral("formula"),
        QStringLiteral("display_formula"),
        QStringLiteral("inline_formula"),
        QStringLiteral("table"),
        QStringLiteral("reference"),
        QStringLiteral("algorithm"),
        QStringLiteral("seal"),
        QStringLiteral("spotting"),
        QStringLiteral("number"),
        QStringLiteral("footnote"),
        QStringLiteral("header"),
        QStringLiteral("header_image"),
        QStringLiteral("footer"),
        QStringLiteral("footer_image"),
        QStringLiteral("aside_text"),
    };
    return labels;
}

QString joinLines(const QString& text) {
    QString out = text;
    out.replace(QLatin1String("-\n"), QString());
    out.replace(QLatin1Char('\n'), QLatin1Char(' '));
    return out;
}

TitleHeading titleHeading(const QString& content) {
    QString title = content;
    const QRegularExpressionMatch match = titlePattern().match(title);
    if (match.hasMatch()) {
        title = stripPythonSpace(match.captured(1)) + QLatin1Char(' ') + leftStripped(match.captured(3));
    }
    while (title.endsWith(QLatin1Char('.'))) {
        title.chop(1);
    }
    return {static_cast<int>(title.count(QLatin1Char('.'))) + 1, title};
}

QString markdownOfBlock(const BlockResult& block, const QString& imageLink, int pageWidth) {
    const QString& label = block.label;
    const QString& content = block.content;
    if (label == QLatin1String("doc_title")) {
        return joinLines(QStringLiteral("# ") + content);
    }
    if (label == QLatin1String("paragraph_title") || label == QLatin1String("abstract_title") ||
        label == QLatin1String("reference_title") || label == QLatin1String("content_title")) {
        const TitleHeading heading = titleHeading(content);
        return joinLines(QString(heading.level + 1, QLatin1Char('#')) + QLatin1Char(' ') + heading.text);
    }
    if (label == QLatin1String("table_title") || label == QLatin1String("figure_title") ||
        label == QLatin1String("chart_title")) {
        return centred(content);
    }
    if (label == QLatin1String("text") || label == QLatin1String("ocr") ||
        label == QLatin1String("vertical_text") || label == QLatin1String("reference_content") ||
        label == QLatin1String("vision_footnote")) {
        return paragraphs(content);
    }
    if (label == QLatin1String("abstract")) {
        return headFirstPiece(content, QStringLiteral(" "),
                              {QStringLiteral("摘要"), QStringLiteral("abstract")}, QStringLiteral("\n"));
    }
    if (label == QLatin1String("reference")) {
        return headFirstPiece(content, QStringLiteral("\n"),
                              {QStringLiteral("参考文献"), QStringLiteral("references")}, QString());
    }
    if (label == QLatin1String("content")) {
        QString out = content;
        out.replace(QLatin1String("-\n"), QLatin1String("  \n"));
        out.replace(QLatin1String("\n"), QLatin1String("  \n"));
        return out;
    }
    if (label == QLatin1String("algorithm")) {
        return stripNewlines(content);
    }
    if (label == QLatin1String("table")) {
        return styledTable(content);
    }
    if (label == QLatin1String("image") || label == QLatin1String("header_image") ||
        label == QLatin1String("footer_image")) {
        return image(block, imageLink, pageWidth);
    }
    if (label == QLatin1String("chart")) {
        return imageLink.isEmpty() && !content.isEmpty() ? chartTable(content)
                                                         : image(block, imageLink, pageWidth);
    }
    if (label == QLatin1String("seal")) {
        return imageLink.isEmpty() ? centred(content) : image(block, imageLink, pageWidth);
    }
    // Formulas, spotting, and number, footnote, header, footer, aside_text where asked for: the text as it
    // is.
    return content;
}

}  // namespace folio
