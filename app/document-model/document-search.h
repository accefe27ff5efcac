// Finding text in a document's results, as the desktop app's find bar does: the matches of a text in each
// block's searchable text (what the result view shows of it), in page order and each page's reading order,
// and which of them is current. Follows the model: when a run or an edit changes blocks, the matches are
// found again (at most every quarter of a second while a run streams) and the current one stays where it
// was, or moves to the next.
#pragma once

#include <QObject>
#include <QString>
#include <QTimer>
#include <optional>
#include <vector>

#include "app/document-model/document-model.h"

namespace folio {

// One occurrence: the block, and where it lies in the block's searchable text.
struct SearchMatch {
    int page = 0;
    int blockId = 0;
    int start = 0;
    int length = 0;
};

// The text of a block that a search looks in: its lines without markup, as the searchable PDF carries them
// (blockPlainLines); nothing for blocks kept as images.
QString searchableText(const BlockResult& block);

// Every occurrence of text in the document's blocks, pages in order and blocks in their page's order;
// occurrences do not overlap. Empty for an empty text.
std::vector<SearchMatch> findMatches(const DocumentEntry& document, const QString& text,
                                     Qt::CaseSensitivity cs);

class DocumentSearch : public QObject {
    Q_OBJECT

public:
    explicit DocumentSearch(const DocumentModel& model, QObject* parent = nullptr);

    // The document searched (-1: none); the matches are found again, none of them current until next() or
    // previous() goes to the first or the last.
    void setDocument(int doc);
    int document() const { return doc_; }
    // The text and case sensitivity; the current match becomes the first at or after the block at
    // (page, blockId), so that typing keeps the view near where the user is.
    void setQuery(const QString& text, Qt::CaseSensitivity cs, int page = 0, int blockId = 0);
    const QString& text() const { return text_; }
    Qt::CaseSensitivity caseSensitivity() const { return cs_; }

    int count() const { return static_cast<int>(matches_.size()); }
    // The current match's position, -1 where there is none (no matches, or none gone to yet).
    int currentIndex() const { return current_; }
    const SearchMatch* current() const;
    const std::vector<SearchMatch>& matches() const { return matches_; }

    // The next or the previous match, past the last back to the first and the other way; from none, the
    // first or the last.
    void next();
    void previous();

Q_SIGNALS:
    // The matches or the current one changed (count(), currentIndex()).
    void changed();
    // The user asked for a match (setQuery, next, previous): the views go to its block.
    void currentMoved(int page, int blockId);

private:
    // Finds the matches again and makes current the first at or after `from` (page, blockId, start), or
    // none without it.
    void refresh(const std::optional<SearchMatch>& from);
    // The same from the current match, if any.
    void refreshNow();
    void onModelChanged(int doc, int page);
    void move(int step);

    const DocumentModel& model_;
    int doc_ = -1;
    QString text_;
    Qt::CaseSensitivity cs_ = Qt::CaseInsensitive;
    std::vector<SearchMatch> matches_;
    int current_ = -1;
    QTimer refreshTimer_;
    // Each page's blocks' searchable texts, made again for a page that changed: markup is stripped once a
    // change, not at every refresh.
    std::vector<std::optional<std::vector<QString>>> pageTexts_;
};

}  // namespace folio
