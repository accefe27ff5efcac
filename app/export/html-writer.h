// The document as a standalone HTML page, <stem>.html: the Markdown's content (the same blocks, labels,
// merged tables and figures) as HTML elements, text escaped, tables as their HTML, images linked from
// imgs/<stem>/ as the Markdown links them. Each page is a <section class="page">. Formulas are typeset by
// KaTeX as the page is written (katex-typesetter.h), so that it shows them without running a script, with
// KaTeX's stylesheet and fonts copied into katex/ beside it (shared by the HTML files of the folder, so not
// among files()) and
// linked before the first page that has a formula; where KaTeX is not installed, they stay $...$ / $$...$$
// text in <span class="math inline"> / <span class="math display"> and notes() says why.
#pragma once

#include <memory>

#include "app/export/katex-typesetter.h"
#include "app/export/streaming-writer.h"

namespace folio {

// Text HTML-escaped, with $...$ and $$...$$ runs in math spans.
QString htmlWithMath(const QString& text);

// One block as HTML; empty for blocks that show nothing.
QString htmlOfBlock(const BlockResult& block, const QString& imageLink, int pageWidth);

class HtmlWriter : public StreamingWriter {
public:
    // Formulas typeset with KaTeX from `katexDir`.
    explicit HtmlWriter(ExportOptions options, QString katexDir = katexDirectory());
    ExportFormat format() const override { return ExportFormat::Html; }
    void begin(const DocumentInfo& document) override;
    void finish() override;
    // Also removes katex/ where this document's finish() made it.
    void abort() override;
    QStringList notes() const override { return notes_; }

protected:
    QString opening() override;
    QString closing() override;
    QString pageText(const PageResult& page, const std::vector<QString>& imageLinks, int firstBlockId,
                     int pagesBefore) override;

private:
    QString katexDir_;
    std::unique_ptr<KatexTypesetter> katex_;  // made on the thread that writes, at the first formula
    int typeset_ = 0;                         // formulas typeset in this document
    int leftAsLatex_ = 0;                     // formulas KaTeX could not take
    QString madeKatexFolder_;                 // katex/, where finish() made it
    QStringList notes_;
};

}  // namespace folio
