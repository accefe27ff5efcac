#include "app/chat/document-context.h"

#include <QRegularExpression>
#include <QSet>
#include <algorithm>
#include <map>

#include "app/export/block-plain-text.h"

namespace folio {

namespace {

// The words of a question that rank pages: letters or digits, 3 or more, lower case.
QSet<QString> questionWords(const QString& question) {
    static const QRegularExpression word(QStringLiteral(R"([\p{L}\p{N}]{3,})"));
    QSet<QString> words;
    for (auto it = word.globalMatch(question.toLower()); it.hasNext();) {
        words.insert(it.next().captured());
    }
    return words;
}

QString pageList(const QList<int>& pages) {
    // Runs of pages as ranges, numbered from 1: "4-9, 12".
    QStringList parts;
    for (qsizetype i = 0; i < pages.size();) {
        qsizetype j = i;
        while (j + 1 < pages.size() && pages[j + 1] == pages[j] + 1) {
            ++j;
        }
        parts.append(j == i ? QString::number(pages[i] + 1)
                            : QStringLiteral("%1-%2").arg(pages[i] + 1).arg(pages[j] + 1));
        i = j + 1;
    }
    return parts.join(QStringLiteral(", "));
}

const QString kInstructions = QStringLiteral(
    "Answer from the document below. It is split into blocks, each starting with its reference in brackets, "
    "such as [p1.b1] for the first block of page 1. After each statement, cite the blocks it comes from by "
    "their references in brackets, for example [p2.b3] or [p2.b3, p4.b1]. If the document does not answer "
    "the question, say so.");

}  // namespace

int64_t estimateTokens(const QString& text) {
    return (text.toUtf8().size() + 2) / 3;
}

DocumentContext DocumentContext::fromPages(const std::vector<PageResult>& pages) {
    DocumentContext context;
    for (size_t p = 0; p < pages.size(); ++p) {
        int n = 0;
        for (const BlockResult& block : pages[p].blocks) {
            const QString text = blockPlainLines(block).join(QLatin1Char('\n')).trimmed();
            if (text.isEmpty()) {
                continue;
            }
            const int page = static_cast<int>(p);
            context.passages_.push_back(
                {QStringLiteral("p%1.b%2").arg(page + 1).arg(++n), page, block.id, text});
        }
    }
    return context;
}

const DocumentPassage* DocumentContext::find(const QString& ref) const {
    const auto it = std::find_if(passages_.begin(), passages_.end(),
                                 [&](const DocumentPassage& p) { return p.ref == ref; });
    return it == passages_.end() ? nullptr : &*it;
}

DocumentSelection DocumentContext::select(const QString& question, int64_t tokenBudget) const {
    // Each page's passages as the prompt has them, its tokens and its score.
    struct Page {
        QString text;
        int64_t tokens = 0;
        int score = 0;
    };
    std::map<int, Page> pages;
    for (const DocumentPassage& p : passages_) {
        Page& page = pages[p.page];
        page.text += QStringLiteral("[%1] %2\n").arg(p.ref, p.text);
    }
    const QSet<QString> words = questionWords(question);
    for (auto& [index, page] : pages) {
        page.tokens = estimateTokens(page.text);
        const QString lower = page.text.toLower();
        for (const QString& w : words) {
            page.score += static_cast<int>(lower.count(w));
        }
    }
    const QString head = kInstructions + QStringLiteral("\n\n<document>\n");
    const QString tail = QStringLiteral("</document>");
    // Room for the note naming left-out pages, whatever their numbers.
    const int64_t fixed = estimateTokens(head + tail) + 64;
    int64_t all = fixed;
    for (const auto& [index, page] : pages) {
        all += page.tokens;
    }
    QList<int> order;
    for (const auto& [index, page] : pages) {
        order.append(index);
    }
    DocumentSelection selection;
    if (all > tokenBudget) {
        std::stable_sort(order.begin(), order.end(),
                         [&](int a, int b) { return pages.at(a).score > pages.at(b).score; });
    }
    int64_t used = fixed;
    for (const int index : order) {
        if (used + pages.at(index).tokens <= tokenBudget) {
            used += pages.at(index).tokens;
            selection.pages.append(index);
        } else {
            selection.leftOut.append(index);
        }
    }
    std::sort(selection.pages.begin(), selection.pages.end());
    std::sort(selection.leftOut.begin(), selection.leftOut.end());
    if (selection.pages.isEmpty()) {
        return selection;
    }
    QString text = head;
    for (const int index : selection.pages) {
        text += pages.at(index).text;
    }
    text += tail;
    if (!selection.leftOut.isEmpty()) {
        text += QStringLiteral("\nThe document is longer than the context: pages %1 are left out.")
                    .arg(pageList(selection.leftOut));
    }
    selection.text = text;
    selection.estimatedTokens = estimateTokens(text);
    return selection;
}

QList<CitationSpan> findCitations(const QString& answer, const DocumentContext& context) {
    // A bracket of one or more references separated by commas (spaces allowed), nothing else inside.
    static const QRegularExpression bracket(
        QStringLiteral(R"(\[\s*(p\d+\.b\d+(?:\s*[,;]\s*p\d+\.b\d+)*)\s*\])"),
        QRegularExpression::CaseInsensitiveOption);
    static const QRegularExpression ref(QStringLiteral(R"(p\d+\.b\d+)"),
                                        QRegularExpression::CaseInsensitiveOption);
    QList<CitationSpan> spans;
    for (auto it = bracket.globalMatch(answer); it.hasNext();) {
        const QRegularExpressionMatch m = it.next();
        CitationSpan span;
        span.start = m.capturedStart();
        span.length = m.capturedLength();
        for (auto r = ref.globalMatch(m.captured(1)); r.hasNext();) {
            const QString name = r.next().captured().toLower();
            span.refs.append(name);
            span.known.append(context.find(name) != nullptr);
        }
        spans.append(span);
    }
    return spans;
}

QString linkCitations(const QString& answer, const DocumentContext& context) {
    QString out;
    qsizetype at = 0;
    for (const CitationSpan& span : findCitations(answer, context)) {
        out += answer.mid(at, span.start - at);
        QStringList parts;
        for (qsizetype i = 0; i < span.refs.size(); ++i) {
            parts.append(span.known[i]
                             ? QStringLiteral("[%1](%2:%1)").arg(span.refs[i], QLatin1String(kCitationScheme))
                             : QStringLiteral("~~%1~~").arg(span.refs[i]));
        }
        out += QStringLiteral("\\[") + parts.join(QStringLiteral(", ")) + QStringLiteral("\\]");
        at = span.start + span.length;
    }
    out += answer.mid(at);
    return out;
}

}  // namespace folio
