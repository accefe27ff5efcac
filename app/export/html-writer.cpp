#include "app/export/html-writer.h"

#include <QDir>
#include <QFileInfo>
#include <QStringList>
#include <algorithm>
#include <utility>

#include "app/export/markdown-block.h"
#include "app/pipeline/html-escape.h"
#include "app/pipeline/python-whitespace.h"

namespace folio {
namespace {

const char* const kStyle = R"(
body { font-family: sans-serif; line-height: 1.5; max-width: 60em; margin: 2em auto; padding: 0 1em; }
section.page { border-bottom: 1px solid #ccc; padding-bottom: 1em; margin-bottom: 2em; }
table { border-collapse: collapse; margin: 1em auto; }
td, th { border: 1px solid #888; padding: 0.2em 0.5em; text-align: center; }
figure { text-align: center; margin: 1em 0; }
figure img { max-width: 100%; }
.caption { text-align: center; font-size: 0.95em; }
.formula { text-align: center; margin: 0.5em 0; }
.footnote, .vision_footnote, .aside_text, .header, .footer, .number { font-size: 0.85em; color: #555; }
pre { white-space: pre-wrap; }
)";

QString element(const QString& tag, const QString& inner, const QString& cls = QString()) {
    const QString open = cls.isEmpty() ? tag : tag + QStringLiteral(" class=\"") + cls + QLatin1Char('"');
    return QLatin1Char('<') + open + QLatin1Char('>') + inner + QStringLiteral("</") + tag +
           QStringLiteral(">\n");
}

// Each non-blank line a paragraph.
QString paragraphs(const QString& text, const QString& cls = QString()) {
    QString out;
    for (const QString& line : text.split(QLatin1Char('\n'))) {
        if (!stripPythonSpace(line).isEmpty()) {
            out += element(QStringLiteral("p"), htmlWithMath(line), cls);
        }
    }
    return out;
}

// The first piece (split on `separator`) as a heading where it is one of the words, the rest as paragraphs.
QString headedSection(const QString& text, const QString& separator, const QStringList& words) {
    const qsizetype at = text.indexOf(separator);
    const QString head = at < 0 ? text : text.left(at);
    if (!words.contains(stripPythonSpace(head).toLower())) {
        return paragraphs(text);
    }
    return element(QStringLiteral("h2"), htmlWithMath(stripPythonSpace(head))) +
           (at < 0 ? QString() : paragraphs(text.mid(at + separator.size())));
}

QString figure(const BlockResult& block, const QString& link, int pageWidth) {
    const int percent =
        pageWidth > 0
            ? std::clamp(static_cast<int>(static_cast<double>(block.box.width()) / pageWidth * 100.0), 1, 100)
            : 100;
    return QStringLiteral("<figure><img src=\"%1\" alt=\"%2\" style=\"width: %3%\"></figure>\n")
               .arg(escapeHtml(link), escapeHtml(block.label), QString::number(percent)) +
           paragraphs(block.content);
}

QString chartTable(const QString& content) {
    const QStringList lines = content.split(QLatin1Char('\n'));
    QString html = QStringLiteral("<table>\n<thead><tr>");
    for (const QString& cell : lines.front().split(QLatin1Char('|'))) {
        html += QStringLiteral("<th>") + escapeHtml(stripPythonSpace(cell)) + QStringLiteral("</th>");
    }
    html += QStringLiteral("</tr></thead>\n<tbody>\n");
    for (qsizetype i = 1; i < lines.size(); ++i) {
        html += QStringLiteral("<tr>");
        for (const QString& cell : lines[i].split(QLatin1Char('|'))) {
            html += QStringLiteral("<td>") + escapeHtml(stripPythonSpace(cell)) + QStringLiteral("</td>");
        }
        html += QStringLiteral("</tr>\n");
    }
    return html + QStringLiteral("</tbody>\n</table>\n");
}

bool isOneOf(const QString& label, std::initializer_list<const char*> labels) {
    return std::any_of(labels.begin(), labels.end(),
                       [&](const char* l) { return label == QLatin1String(l); });
}

}  // namespace

QString htmlWithMath(const QString& text) {
    QString out;
    qsizetype pos = 0;
    while (pos < text.size()) {
        const qsizetype open = text.indexOf(QLatin1Char('$'), pos);
        if (open < 0) {
            break;
        }
        const bool display = text.mid(open, 2) == QLatin1String("$$");
        const QString delimiter = display ? QStringLiteral("$$") : QStringLiteral("$");
        const qsizetype close = text.indexOf(delimiter, open + delimiter.size());
        if (close < 0) {
            break;
        }
        out += escapeHtml(text.mid(pos, open - pos));
        const qsizetype end = close + delimiter.size();
        out += QStringLiteral("<span class=\"math %1\">")
                   .arg(display ? QStringLiteral("display") : QStringLiteral("inline")) +
               escapeHtml(text.mid(open, end - open)) + QStringLiteral("</span>");
        pos = end;
    }
    return out + escapeHtml(text.mid(pos));
}

QString htmlOfBlock(const BlockResult& block, const QString& imageLink, int pageWidth) {
    const QString& label = block.label;
    const QString& content = block.content;
    if (label == QLatin1String("doc_title")) {
        return element(QStringLiteral("h1"), htmlWithMath(joinLines(content)));
    }
    if (isOneOf(label, {"paragraph_title", "abstract_title", "reference_title", "content_title"})) {
        const TitleHeading heading = titleHeading(content);
        const QString tag = QStringLiteral("h%1").arg(std::min(heading.level + 1, 6));
        return element(tag, htmlWithMath(joinLines(heading.text)));
    }
    if (isOneOf(label, {"table_title", "figure_title", "chart_title"})) {
        return element(QStringLiteral("p"), htmlWithMath(joinLines(content)), QStringLiteral("caption"));
    }
    if (isOneOf(label, {"text", "ocr", "vertical_text", "reference_content"})) {
        return paragraphs(content);
    }
    if (label == QLatin1String("abstract")) {
        return headedSection(content, QStringLiteral(" "),
                             {QStringLiteral("摘要"), QStringLiteral("abstract")});
    }
    if (label == QLatin1String("reference")) {
        return headedSection(content, QStringLiteral("\n"),
                             {QStringLiteral("参考文献"), QStringLiteral("references")});
    }
    if (label == QLatin1String("content")) {
        QStringList lines;
        for (const QString& line : content.split(QLatin1Char('\n'))) {
            lines.push_back(htmlWithMath(line));
        }
        return element(QStringLiteral("p"), lines.join(QStringLiteral("<br>\n")), QStringLiteral("contents"));
    }
    if (label == QLatin1String("algorithm")) {
        return element(QStringLiteral("pre"), escapeHtml(content));
    }
    if (label == QLatin1String("table")) {
        if (block.table) {
            return content + QLatin1Char('\n');  // HTML made from the grid, text escaped
        }
        return content.isEmpty() ? QString() : element(QStringLiteral("pre"), escapeHtml(content));
    }
    if (isOneOf(label, {"image", "header_image", "footer_image", "chart", "seal"}) && !imageLink.isEmpty()) {
        return figure(block, imageLink, pageWidth);
    }
    if (label == QLatin1String("chart") && !content.isEmpty()) {
        return chartTable(content);
    }
    if (isOneOf(label, {"display_formula", "formula"})) {
        return content.isEmpty() ? QString()
                                 : element(QStringLiteral("div"),
                                           QStringLiteral("<span class=\"math display\">") +
                                               escapeHtml(content) + QStringLiteral("</span>"),
                                           QStringLiteral("formula"));
    }
    if (label == QLatin1String("inline_formula")) {
        return content.isEmpty()
                   ? QString()
                   : element(QStringLiteral("p"), QStringLiteral("<span class=\"math inline\">") +
                                                      escapeHtml(content) + QStringLiteral("</span>"));
    }
    // vision_footnote, seal text, spotting, and number, footnote, header, footer, aside_text where asked for.
    return paragraphs(content, label);
}

HtmlWriter::HtmlWriter(ExportOptions options, QString katexDir)
    : StreamingWriter(std::move(options), exportSuffix(ExportFormat::Html), true),
      katexDir_(std::move(katexDir)) {}

void HtmlWriter::begin(const DocumentInfo& document) {
    typeset_ = 0;
    leftAsLatex_ = 0;
    notes_.clear();
    madeKatexFolder_.clear();
    StreamingWriter::begin(document);
}

void HtmlWriter::finish() {
    if (typeset_ > 0) {
        // Before the page is moved into place: where the files cannot be copied, the export fails whole.
        const QString folder = QDir(options().outputDir).filePath(QStringLiteral("katex"));
        if (!QFileInfo::exists(folder)) {
            madeKatexFolder_ = folder;
        }
        try {
            katex_->copyAssets(folder);
        } catch (...) {
            abort();
            throw;
        }
    }
    StreamingWriter::finish();
    if (leftAsLatex_ > 0) {
        const QString formulas =
            leftAsLatex_ == 1 ? QStringLiteral("1 formula") : QStringLiteral("%1 formulas").arg(leftAsLatex_);
        const QString why =
            katex_->problem().isEmpty() ? QStringLiteral("KaTeX could not typeset them") : katex_->problem();
        notes_ << QStringLiteral("HTML: %1 left as LaTeX: %2").arg(formulas, why);
    }
}

void HtmlWriter::abort() {
    StreamingWriter::abort();
    if (!madeKatexFolder_.isEmpty()) {
        QDir(madeKatexFolder_).removeRecursively();
        madeKatexFolder_.clear();
    }
}

QString HtmlWriter::opening() {
    return QStringLiteral(
               "<!DOCTYPE html>\n<html>\n<head>\n<meta "
               "charset=\"utf-8\">\n<title>%1</title>\n<style>%2</style>\n"
               "</head>\n<body>\n")
        .arg(escapeHtml(document().stem), QString::fromUtf8(kStyle));
}

QString HtmlWriter::closing() {
    return QStringLiteral("</body>\n</html>\n");
}

QString HtmlWriter::pageText(const PageResult& page, const std::vector<QString>& imageLinks, int,
                             int pagesBefore) {
    QString blocks;
    for (size_t i = 0; i < page.blocks.size(); ++i) {
        const BlockResult& block = page.blocks[i];
        if (labels().contains(block.label) && markdownLabels().contains(block.label)) {
            blocks += htmlOfBlock(block, i < imageLinks.size() ? imageLinks[i] : QString(), page.width);
        }
    }
    QString out;
    if (blocks.contains(QLatin1String("<span class=\"math "))) {
        if (!katex_) {
            katex_ = std::make_unique<KatexTypesetter>(katexDir_);
        }
        int typeset = 0;
        int left = 0;
        blocks = katex_->typesetMathSpans(blocks, &typeset, &left);
        if (typeset > 0 && typeset_ == 0) {
            // A stylesheet link may stand in the body; it comes only where there are formulas to style.
            out += QStringLiteral("<link rel=\"stylesheet\" href=\"katex/katex.min.css\">\n");
        }
        typeset_ += typeset;
        leftAsLatex_ += left;
    }
    out += QStringLiteral("<section class=\"page\" id=\"page-%1\">\n").arg(pagesBefore + 1);
    return out + blocks + QStringLiteral("</section>\n");
}

}  // namespace folio
