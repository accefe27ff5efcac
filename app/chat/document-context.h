// "Ask the document" in the desktop app: a document's recognised blocks as the part of a conversation that
// the chat model answers from, each block behind a short reference ("p3.b5": page 3, its fifth block given),
// and the citations of those references that come back in the answers; the Qt face of app/ask's
// DocumentPassages, which holds the rules. A document longer than the context is cut by a stated rule: whole
// pages, those holding most of the question's words first, then single blocks ranked the same way, and the
// prompt and the chat panel name the pages left out and those given in part.
#pragma once

#include <QList>
#include <QString>
#include <QStringList>
#include <cstdint>
#include <vector>

#include "app/ask/document-passages.h"
#include "app/documents/page-result.h"

namespace folio {

// One block as the model sees it.
struct DocumentPassage {
    QString ref;   // "p3.b5"
    int page = 0;  // position in the document, from 0
    int blockId = 0;
    QString text;  // plain text: markup removed, a table's cells row by row, a formula's LaTeX
};

// What select() puts in the conversation.
struct DocumentSelection {
    QString text;        // instructions and the passages, ahead of the first question
    QList<int> pages;    // pages given, whole or in part, ascending
    QList<int> inPart;   // of those, pages only some of whose blocks fit, ascending
    QList<int> leftOut;  // pages none of whose blocks fit, ascending
    int64_t estimatedTokens = 0;
};

// A conservative count of the tokens a text takes: one for every 3 bytes of its UTF-8 (English runs near one
// token for 4 bytes, Chinese near one for each 3-byte character). Budgets are set in these units.
int64_t estimateTokens(const QString& text);

struct CitationSpan;

class DocumentContext {
public:
    DocumentContext() = default;
    // The blocks of each page with a result, in reading order (blocks outside the order after them), those
    // with text only: images, failed blocks and empty ones have nothing to cite.
    static DocumentContext fromPages(const std::vector<PageResult>& pages);

    bool empty() const { return passages_.empty(); }
    const std::vector<DocumentPassage>& passages() const { return passages_; }
    // The passage a reference names; nullptr for one the document does not have.
    const DocumentPassage* find(const QString& ref) const;

    // The document part for a question within tokenBudget (estimateTokens), as DocumentPassages::select
    // chooses it: every page where all fit; otherwise whole pages by how many of the question's words they
    // hold, then single blocks of the other pages the same way, while they fit, each counted by countTokens.
    // Empty text where not even one block fits.
    DocumentSelection select(const QString& question, int64_t tokenBudget,
                             const TokenCounter& countTokens = estimate_tokens) const;
    // The document part for a conversation's next answer (DocumentPassages::select_for_chat): the passages
    // and the turns counted together by countTexts, beside the turns, their attachments and the answer's
    // room.
    DocumentSelection selectForChat(const ChatBudget& chat, const TextsCounter& countTexts) const;
    // The texts select() counts, for counting them with the model's tokenizer (DocumentPassages).
    std::vector<std::string> textsToCount() const { return core_.texts_to_count(); }

private:
    friend QList<CitationSpan> findCitations(const QString& answer, const DocumentContext& context);
    friend QString linkCitations(const QString& answer, const DocumentContext& context);

    DocumentPassages core_;
    std::vector<DocumentPassage> passages_;  // core_'s, as QStrings
};

// A bracket of citations in an answer: "[p3.b5]" or "[p3.b5, p4.b1]". A bracket holding anything else is not
// a citation and stays text.
struct CitationSpan {
    qsizetype start = 0;   // of the '['
    qsizetype length = 0;  // through the ']'
    QStringList refs;
    QList<bool> known;  // each ref is a passage of the context
};
QList<CitationSpan> findCitations(const QString& answer, const DocumentContext& context);

// The answer with each known reference a Markdown link to kCitationScheme:REF (so that a click can select
// the block); unknown references are kept as text, struck through, so that the reader sees the model
// named a block the document does not have.
QString linkCitations(const QString& answer, const DocumentContext& context);

}  // namespace folio
