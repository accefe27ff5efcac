#include "app/document-model/document-search.h"

#include <algorithm>
#include <tuple>

#include "app/export/block-plain-text.h"

namespace folio {

namespace {

// Orders matches by page, block and place in the block.
auto position(const SearchMatch& m) {
    return std::tuple(m.page, m.blockId, m.start);
}

}  // namespace

QString searchableText(const BlockResult& block) {
    return block.image.isNull() ? blockPlainLines(block).join(u'\n') : QString();
}

namespace {

// The occurrences of text in one block's searchable text, appended to matches.
void findInBlock(const QString& haystack, int page, int blockId, const QString& text, Qt::CaseSensitivity cs,
                 std::vector<SearchMatch>& matches) {
    for (qsizetype at = haystack.indexOf(text, 0, cs); at >= 0;
         at = haystack.indexOf(text, at + text.size(), cs)) {
        matches.push_back({page, blockId, static_cast<int>(at), static_cast<int>(text.size())});
    }
}

}  // namespace

std::vector<SearchMatch> findMatches(const DocumentEntry& document, const QString& text,
                                     Qt::CaseSensitivity cs) {
    std::vector<SearchMatch> matches;
    if (text.isEmpty()) {
        return matches;
    }
    for (int page = 0; page < static_cast<int>(document.pages.size()); ++page) {
        for (const BlockResult& block : document.pages[static_cast<size_t>(page)].result.blocks) {
            findInBlock(searchableText(block), page, block.id, text, cs, matches);
        }
    }
    return matches;
}

DocumentSearch::DocumentSearch(const DocumentModel& model, QObject* parent) : QObject(parent), model_(model) {
    connect(&model_, &DocumentModel::pageChanged, this, &DocumentSearch::onModelChanged);
    connect(&model_, &DocumentModel::blockChanged, this,
            [this](int doc, int page, int) { onModelChanged(doc, page); });
    connect(&model_, &DocumentModel::blocksRenumbered, this, &DocumentSearch::onModelChanged);
    connect(&model_, &DocumentModel::documentClosed, this, [this](int doc) {
        if (doc == doc_) {
            setDocument(-1);
        }
    });
    refreshTimer_.setSingleShot(true);
    refreshTimer_.setInterval(250);
    connect(&refreshTimer_, &QTimer::timeout, this, [this] { refreshNow(); });
}

const SearchMatch* DocumentSearch::current() const {
    return current_ >= 0 && current_ < count() ? &matches_[static_cast<size_t>(current_)] : nullptr;
}

void DocumentSearch::setDocument(int doc) {
    doc_ = model_.isOpen(doc) ? doc : -1;
    pageTexts_.clear();
    refreshTimer_.stop();
    refresh(std::nullopt);
}

void DocumentSearch::setQuery(const QString& text, Qt::CaseSensitivity cs, int page, int blockId) {
    text_ = text;
    cs_ = cs;
    refreshTimer_.stop();
    refresh(SearchMatch{page, blockId, 0, 0});
    if (const SearchMatch* m = current()) {
        Q_EMIT currentMoved(m->page, m->blockId);
    }
}

void DocumentSearch::next() {
    move(1);
}

void DocumentSearch::previous() {
    move(-1);
}

void DocumentSearch::move(int step) {
    if (refreshTimer_.isActive()) {
        refreshNow();
    }
    if (matches_.empty()) {
        return;
    }
    current_ = current_ < 0 ? (step > 0 ? 0 : count() - 1) : (current_ + step + count()) % count();
    Q_EMIT changed();
    const SearchMatch& m = matches_[static_cast<size_t>(current_)];
    Q_EMIT currentMoved(m.page, m.blockId);
}

void DocumentSearch::onModelChanged(int doc, int page) {
    if (doc != doc_) {
        return;
    }
    if (page >= 0 && page < static_cast<int>(pageTexts_.size())) {
        pageTexts_[static_cast<size_t>(page)].reset();
    }
    // A run changes a block at each token: the matches are found again at most every refresh interval.
    if (!text_.isEmpty() && !refreshTimer_.isActive()) {
        refreshTimer_.start();
    }
}

void DocumentSearch::refreshNow() {
    refreshTimer_.stop();
    const SearchMatch* at = current();
    refresh(at != nullptr ? std::optional(*at) : std::nullopt);
}

void DocumentSearch::refresh(const std::optional<SearchMatch>& from) {
    matches_.clear();
    if (doc_ >= 0 && model_.isOpen(doc_) && !text_.isEmpty()) {
        const DocumentEntry& document = model_.document(doc_);
        pageTexts_.resize(document.pages.size());
        for (int page = 0; page < static_cast<int>(document.pages.size()); ++page) {
            const std::vector<BlockResult>& blocks = document.pages[static_cast<size_t>(page)].result.blocks;
            std::optional<std::vector<QString>>& texts = pageTexts_[static_cast<size_t>(page)];
            if (!texts || texts->size() != blocks.size()) {
                texts.emplace();
                for (const BlockResult& block : blocks) {
                    texts->push_back(searchableText(block));
                }
            }
            for (size_t b = 0; b < blocks.size(); ++b) {
                findInBlock((*texts)[b], page, blocks[b].id, text_, cs_, matches_);
            }
        }
    }
    current_ = -1;
    if (from && !matches_.empty()) {
        const auto at = std::find_if(matches_.begin(), matches_.end(),
                                     [&](const SearchMatch& m) { return position(m) >= position(*from); });
        current_ = at == matches_.end() ? 0 : static_cast<int>(at - matches_.begin());
    }
    Q_EMIT changed();
}

}  // namespace folio
