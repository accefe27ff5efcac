#include "app/chat/document-context.h"

#include <algorithm>

#include "app/export/block-plain-text.h"

namespace folio {

int64_t estimateTokens(const QString& text) {
    return estimate_tokens(text.toUtf8().toStdString());
}

DocumentContext DocumentContext::fromPages(const std::vector<PageResult>& pages) {
    DocumentContext context;
    for (size_t p = 0; p < pages.size(); ++p) {
        for (const BlockResult& block : pages[p].blocks) {
            context.core_.add(static_cast<int>(p), block.id,
                              blockPlainLines(block).join(QLatin1Char('\n')).toStdString());
        }
    }
    for (const Passage& p : context.core_.passages()) {
        context.passages_.push_back(
            {QString::fromStdString(p.ref), p.page, p.block_id, QString::fromStdString(p.text)});
    }
    return context;
}

const DocumentPassage* DocumentContext::find(const QString& ref) const {
    const auto it = std::find_if(passages_.begin(), passages_.end(),
                                 [&](const DocumentPassage& p) { return p.ref == ref; });
    return it == passages_.end() ? nullptr : &*it;
}

namespace {

DocumentSelection selectionOf(const PassageSelection& chosen) {
    DocumentSelection selection;
    selection.text = QString::fromStdString(chosen.text);
    selection.pages = QList<int>(chosen.pages.begin(), chosen.pages.end());
    selection.inPart = QList<int>(chosen.in_part.begin(), chosen.in_part.end());
    selection.leftOut = QList<int>(chosen.left_out.begin(), chosen.left_out.end());
    selection.estimatedTokens = chosen.estimated_tokens;
    return selection;
}

}  // namespace

DocumentSelection DocumentContext::select(const QString& question, int64_t tokenBudget,
                                          const TokenCounter& countTokens) const {
    return selectionOf(core_.select(question.toStdString(), tokenBudget, countTokens));
}

DocumentSelection DocumentContext::selectForChat(const ChatBudget& chat,
                                                 const TextsCounter& countTexts) const {
    return selectionOf(core_.select_for_chat(chat, countTexts));
}

QList<CitationSpan> findCitations(const QString& answer, const DocumentContext& context) {
    // The rules work on UTF-8; the spans are given back in the QString's units.
    const QByteArray bytes = answer.toUtf8();
    const auto units = [&](size_t offset) {
        return QString::fromUtf8(bytes.constData(), static_cast<qsizetype>(offset)).size();
    };
    QList<CitationSpan> spans;
    for (const Citation& c : find_citations(
             std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())), context.core_)) {
        CitationSpan span;
        span.start = units(c.start);
        span.length = units(c.start + c.length) - span.start;
        for (size_t i = 0; i < c.refs.size(); ++i) {
            span.refs.append(QString::fromStdString(c.refs[i]));
            span.known.append(c.known[i]);
        }
        spans.append(span);
    }
    return spans;
}

QString linkCitations(const QString& answer, const DocumentContext& context) {
    return QString::fromStdString(link_citations(answer.toStdString(), context.core_));
}

}  // namespace folio
