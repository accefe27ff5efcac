#include "app/document-model/document-model.h"

#include <QFileInfo>
#include <algorithm>
#include <numeric>

#include "app/document-model/edited-table.h"
#include "app/pipeline/table-html.h"
#include "engine/common/error.h"

namespace folio {

DocumentModel::DocumentModel(QObject* parent) : QObject(parent) {}

DocumentModel::~DocumentModel() = default;

const DocumentEntry& DocumentModel::document(int doc) const {
    if (doc < 0 || doc >= documentCount()) {
        fail("no document ", doc);
    }
    return documents_[static_cast<size_t>(doc)];
}

bool DocumentModel::isOpen(int doc) const {
    return doc >= 0 && doc < documentCount() &&
           documents_[static_cast<size_t>(doc)].state != DocumentState::Closed;
}

bool DocumentModel::hasPage(int doc, int page) const {
    return doc >= 0 && doc < documentCount() && page >= 0 &&
           page < static_cast<int>(documents_[static_cast<size_t>(doc)].pages.size());
}

const PageEntry& DocumentModel::page(int doc, int page) const {
    if (!hasPage(doc, page)) {
        fail("no page ", page, " in document ", doc);
    }
    return documents_[static_cast<size_t>(doc)].pages[static_cast<size_t>(page)];
}

const BlockResult* DocumentModel::block(int doc, int page, int blockId) const {
    if (!hasPage(doc, page)) {
        return nullptr;
    }
    const std::vector<BlockResult>& blocks = this->page(doc, page).result.blocks;
    if (blockId < 0 || blockId >= static_cast<int>(blocks.size())) {
        return nullptr;
    }
    return &blocks[static_cast<size_t>(blockId)];
}

int DocumentModel::findDocument(const QString& path) const {
    for (int i = 0; i < documentCount(); ++i) {
        if (documents_[static_cast<size_t>(i)].path == path && isOpen(i)) {
            return i;
        }
    }
    return -1;
}

PageEntry* DocumentModel::mutablePage(int doc, int page) {
    if (!hasPage(doc, page)) {
        return nullptr;
    }
    return &documents_[static_cast<size_t>(doc)].pages[static_cast<size_t>(page)];
}

DocumentEntry* DocumentModel::mutableDocument(int doc) {
    return isOpen(doc) ? &documents_[static_cast<size_t>(doc)] : nullptr;
}

int DocumentModel::addDocument(const QString& path) {
    DocumentEntry entry;
    entry.path = path;
    entry.name = QFileInfo(path).fileName();
    entry.info.inputPath = path;
    entry.undo = std::make_unique<QUndoStack>();
    documents_.push_back(std::move(entry));
    const int doc = documentCount() - 1;
    Q_EMIT documentAdded(doc);
    return doc;
}

int DocumentModel::addRestoredDocument(const QString& path, std::vector<PageEntry> pages, bool changedOnDisk,
                                       qint64 savedFileSize, const QDateTime& savedFileModified) {
    DocumentEntry entry;
    entry.path = path;
    entry.name = QFileInfo(path).fileName();
    entry.info.inputPath = path;
    entry.info.stem = QFileInfo(path).completeBaseName();
    entry.info.pageCount = static_cast<int>(pages.size());
    entry.pages = std::move(pages);
    entry.changedOnDisk = changedOnDisk;
    entry.savedFileSize = savedFileSize;
    entry.savedFileModified = savedFileModified;
    entry.undo = std::make_unique<QUndoStack>();
    countPagesDone(entry);
    entry.state = stateOfPages(entry);
    documents_.push_back(std::move(entry));
    const int doc = documentCount() - 1;
    Q_EMIT documentAdded(doc);
    return doc;
}

DocumentState DocumentModel::stateOfPages(const DocumentEntry& entry) {
    const bool anyResult = std::any_of(entry.pages.begin(), entry.pages.end(),
                                       [](const PageEntry& p) { return p.state != PageState::Pending; });
    return entry.pages.empty()                                       ? DocumentState::Opening
           : entry.pagesDone == static_cast<int>(entry.pages.size()) ? DocumentState::Done
           : anyResult                                               ? DocumentState::Cancelled
                                                                     : DocumentState::Idle;
}

void DocumentModel::setDocumentState(int doc, DocumentState state, const QString& error) {
    DocumentEntry* found = mutableDocument(doc);
    if (found == nullptr || state == DocumentState::Closed) {
        return;
    }
    DocumentEntry& entry = *found;
    entry.state = state;
    if (!error.isEmpty()) {
        entry.error = error;
    }
    Q_EMIT documentChanged(doc);
}

void DocumentModel::setPageSizes(int doc, const std::vector<QSize>& sizes) {
    DocumentEntry* found = mutableDocument(doc);
    if (found == nullptr) {
        return;
    }
    DocumentEntry& entry = *found;
    if (entry.pages.size() < sizes.size()) {
        entry.pages.resize(sizes.size());
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
        if (!entry.pages[i].size.isValid()) {
            entry.pages[i].size = sizes[i];
        }
    }
    Q_EMIT documentChanged(doc);
}

void DocumentModel::setPreview(int doc, int page, const QImage& preview) {
    if (PageEntry* p = mutablePage(doc, page)) {
        p->preview = preview;
        Q_EMIT pageChanged(doc, page);
    }
}

void DocumentModel::closeDocument(int doc) {
    DocumentEntry* entry = mutableDocument(doc);
    if (entry == nullptr) {
        return;
    }
    for (size_t i = 0; i < entry->pages.size(); ++i) {
        forgetPageImage(doc, static_cast<int>(i));
    }
    entry->pages.clear();
    entry->pages.shrink_to_fit();
    entry->pagesDone = 0;
    entry->state = DocumentState::Closed;
    entry->undo.reset();
    Q_EMIT documentClosed(doc);
}

std::vector<int> DocumentModel::pagesToRun(int doc, RunScope scope) const {
    std::vector<int> pages;
    if (!isOpen(doc)) {
        return pages;
    }
    const DocumentEntry& entry = documents_[static_cast<size_t>(doc)];
    for (size_t i = 0; i < entry.pages.size(); ++i) {
        const PageEntry& p = entry.pages[i];
        const bool keep = (scope == RunScope::Missing && (p.state == PageState::Done || p.edited)) ||
                          (scope == RunScope::Unedited && p.edited);
        if (!keep) {
            pages.push_back(static_cast<int>(i));
        }
    }
    return pages;
}

bool DocumentModel::hasPagesToRun(int doc, RunScope scope) const {
    return isOpen(doc) && (document(doc).pages.empty() || !pagesToRun(doc, scope).empty());
}

int DocumentModel::editedPageCount(int doc) const {
    if (!isOpen(doc)) {
        return 0;
    }
    const std::vector<PageEntry>& pages = document(doc).pages;
    return static_cast<int>(
        std::count_if(pages.begin(), pages.end(), [](const PageEntry& p) { return p.edited; }));
}

bool DocumentModel::hasUnsavedEdits(int doc) const {
    return isOpen(doc) && document(doc).undo && !document(doc).undo->isClean();
}

void DocumentModel::resetResults(int doc) {
    if (!isOpen(doc)) {
        return;
    }
    std::vector<int> all(document(doc).pages.size());
    std::iota(all.begin(), all.end(), 0);
    documents_[static_cast<size_t>(doc)].changedOnDisk = false;  // the results to come are the file's
    resetPages(doc, all);
}

void DocumentModel::resetPages(int doc, const std::vector<int>& pages) {
    DocumentEntry* found = mutableDocument(doc);
    if (found == nullptr) {
        return;
    }
    DocumentEntry& entry = *found;
    entry.error.clear();
    for (const int i : pages) {
        if (i < 0 || i >= static_cast<int>(entry.pages.size())) {
            continue;
        }
        PageEntry& p = entry.pages[static_cast<size_t>(i)];
        p.result.blocks.clear();
        p.result.spotting.clear();
        p.result.error.clear();
        p.result.image = QImage();
        forgetPageImage(doc, i);
        p.state = PageState::Pending;
        p.edited = false;
        ++p.generation;
        Q_EMIT pageChanged(doc, i);
    }
    countPagesDone(entry);
    Q_EMIT documentChanged(doc);
}

void DocumentModel::countPagesDone(DocumentEntry& entry) {
    entry.pagesDone =
        static_cast<int>(std::count_if(entry.pages.begin(), entry.pages.end(), [](const PageEntry& p) {
            return p.state == PageState::Done || p.state == PageState::Failed;
        }));
}

void DocumentModel::runStopped(int doc) {
    DocumentEntry* entry = mutableDocument(doc);
    if (entry == nullptr) {
        return;
    }
    for (size_t i = 0; i < entry->pages.size(); ++i) {
        if (entry->pages[i].state == PageState::LaidOut) {
            entry->pages[i].state = PageState::Partial;
            Q_EMIT pageChanged(doc, static_cast<int>(i));
        }
    }
}

void DocumentModel::documentStarted(int doc, const DocumentInfo& info) {
    DocumentEntry* found = mutableDocument(doc);
    if (found == nullptr) {
        return;
    }
    DocumentEntry& entry = *found;
    entry.info = info;
    // A run of some pages counts those; the document keeps its whole length.
    entry.info.pageCount = std::max(info.pageCount, static_cast<int>(entry.pages.size()));
    entry.state = DocumentState::Running;
    if (static_cast<int>(entry.pages.size()) < info.pageCount) {
        entry.pages.resize(static_cast<size_t>(info.pageCount));
    }
    Q_EMIT documentChanged(doc);
}

void DocumentModel::pageLaidOut(int doc, int page, const PageResult& result) {
    if (isOpen(doc) && !hasPage(doc, page)) {
        documents_[static_cast<size_t>(doc)].pages.resize(static_cast<size_t>(page) + 1);
    }
    if (PageEntry* p = mutablePage(doc, page)) {
        p->result = result;
        p->size = QSize(result.width, result.height);
        p->state = result.error.isEmpty() ? PageState::LaidOut : PageState::Failed;
        p->edited = false;
        ++p->generation;
        holdPageImage(doc, page);
        Q_EMIT pageChanged(doc, page);
    }
}

void DocumentModel::blockText(int doc, int page, int blockId, const QString& text) {
    PageEntry* p = mutablePage(doc, page);
    if (p == nullptr || blockId < 0 || blockId >= static_cast<int>(p->result.blocks.size())) {
        return;
    }
    BlockResult& block = p->result.blocks[static_cast<size_t>(blockId)];
    block.rawText = text;
    block.content = text;
    Q_EMIT blockChanged(doc, page, blockId);
}

void DocumentModel::pageFinished(int doc, int page, const PageResult& result) {
    if (isOpen(doc) && !hasPage(doc, page)) {
        documents_[static_cast<size_t>(doc)].pages.resize(static_cast<size_t>(page) + 1);
    }
    if (PageEntry* p = mutablePage(doc, page)) {
        const bool counted = p->state == PageState::Done || p->state == PageState::Failed;
        p->result = result;
        p->size = QSize(result.width, result.height);
        holdPageImage(doc, page);
        p->state = result.error.isEmpty() ? PageState::Done : PageState::Failed;
        DocumentEntry& entry = documents_[static_cast<size_t>(doc)];
        if (!counted) {
            ++entry.pagesDone;
        }
        Q_EMIT pageChanged(doc, page);
        Q_EMIT documentChanged(doc);
    }
}

void DocumentModel::setPageImageBudget(int pages) {
    imageBudget_ = std::max(1, pages);
    while (static_cast<int>(imageOrder_.size()) > imageBudget_) {
        const auto [doc, page] = imageOrder_.back();
        imageOrder_.pop_back();
        mutablePage(doc, page)->result.image = QImage();
    }
}

void DocumentModel::holdPageImage(int doc, int page) {
    forgetPageImage(doc, page);
    if (mutablePage(doc, page)->result.image.isNull()) {
        return;
    }
    imageOrder_.emplace_front(doc, page);
    setPageImageBudget(imageBudget_);
}

void DocumentModel::forgetPageImage(int doc, int page) {
    imageOrder_.remove(std::pair{doc, page});
}

void DocumentModel::touchPageImage(int doc, int page) {
    if (hasPage(doc, page) && !this->page(doc, page).result.image.isNull()) {
        holdPageImage(doc, page);
    }
}

bool DocumentModel::needsPageImage(int doc, int page) const {
    if (!hasPage(doc, page)) {
        return false;
    }
    const PageEntry& p = this->page(doc, page);
    return p.state != PageState::Pending && p.result.image.isNull() && p.result.width > 0 &&
           !p.result.inputPath.isEmpty();
}

void DocumentModel::setPageImage(int doc, int page, const QImage& image) {
    if (!needsPageImage(doc, page) || image.isNull()) {
        return;
    }
    mutablePage(doc, page)->result.image = image;
    holdPageImage(doc, page);
    Q_EMIT pageChanged(doc, page);
}

void DocumentModel::setBlock(int doc, int page, const BlockResult& block) {
    PageEntry* p = mutablePage(doc, page);
    if (p == nullptr || block.id < 0 || block.id >= static_cast<int>(p->result.blocks.size())) {
        return;
    }
    p->result.blocks[static_cast<size_t>(block.id)] = block;
    Q_EMIT blockChanged(doc, page, block.id);
}

void DocumentModel::setBlockContent(int doc, int page, int blockId, const QString& content) {
    PageEntry* p = mutablePage(doc, page);
    if (p == nullptr || blockId < 0 || blockId >= static_cast<int>(p->result.blocks.size())) {
        return;
    }
    BlockResult& block = p->result.blocks[static_cast<size_t>(blockId)];
    block.content = content;
    block.rawText = content;
    block.table.reset();
    if (block.label == QLatin1String("table")) {
        // A table edited as HTML or Markdown becomes a grid again, shown and exported as recognised tables
        // are (its content the grid's HTML; its text as typed stays in rawText).
        if (std::optional<TableGrid> grid = parseEditedTable(content)) {
            block.content = tableHtml(*grid);
            block.table = std::move(grid);
        }
    }
    block.edited = true;
    p->edited = true;
    Q_EMIT blockChanged(doc, page, blockId);
}

void DocumentModel::removeBlock(int doc, int page, int blockId) {
    PageEntry* p = mutablePage(doc, page);
    if (p == nullptr || blockId < 0 || blockId >= static_cast<int>(p->result.blocks.size())) {
        return;
    }
    std::vector<BlockResult>& blocks = p->result.blocks;
    const int removedOrder = blocks[static_cast<size_t>(blockId)].order;
    blocks.erase(blocks.begin() + blockId);
    for (size_t i = 0; i < blocks.size(); ++i) {
        BlockResult& b = blocks[i];
        b.id = static_cast<int>(i);
        if (removedOrder > 0 && b.order > removedOrder) {
            --b.order;
        }
        if (b.groupId == blockId) {
            b.groupId = -1;
        } else if (b.groupId > blockId) {
            --b.groupId;
        }
    }
    p->edited = true;
    Q_EMIT blocksRenumbered(doc, page);
    Q_EMIT pageChanged(doc, page);
}

int DocumentModel::addBlock(int doc, int page, BlockResult block) {
    PageEntry* p = mutablePage(doc, page);
    if (p == nullptr) {
        return -1;
    }
    std::vector<BlockResult>& blocks = p->result.blocks;
    block.id = static_cast<int>(blocks.size());
    int lastOrder = 0;
    for (const BlockResult& b : blocks) {
        lastOrder = std::max(lastOrder, b.order);
    }
    block.order = lastOrder + 1;
    blocks.push_back(std::move(block));
    p->edited = true;
    Q_EMIT pageChanged(doc, page);
    return static_cast<int>(blocks.size()) - 1;
}

void DocumentModel::setPageEdited(int doc, int page) {
    if (PageEntry* p = mutablePage(doc, page)) {
        p->edited = true;
    }
}

QUndoStack* DocumentModel::undoStack(int doc) const {
    return isOpen(doc) ? documents_[static_cast<size_t>(doc)].undo.get() : nullptr;
}

void DocumentModel::editBlockText(int doc, int page, int blockId, const QString& content) {
    const BlockResult* current = block(doc, page, blockId);
    if (current == nullptr || current->content == content) {
        return;
    }
    undoStack(doc)->push(new PageCommand(
        *this, doc, page, tr("Edit block %1").arg(blockId + 1),
        [this, doc, page, blockId, content] { setBlockContent(doc, page, blockId, content); }));
}

void DocumentModel::deleteBlock(int doc, int page, int blockId) {
    if (block(doc, page, blockId) == nullptr) {
        return;
    }
    undoStack(doc)->push(new PageCommand(*this, doc, page, tr("Delete block %1").arg(blockId + 1),
                                         [this, doc, page, blockId] { removeBlock(doc, page, blockId); }));
}

PageSnapshot DocumentModel::snapshot(int doc, int page) const {
    if (!hasPage(doc, page)) {
        return {};
    }
    const PageEntry& p = this->page(doc, page);
    return {p.result.blocks, p.edited};
}

void DocumentModel::restore(int doc, int page, const PageSnapshot& snapshot) {
    PageEntry* p = mutablePage(doc, page);
    if (p == nullptr) {
        return;
    }
    std::vector<BlockResult> blocks = snapshot.blocks;
    // A block that was being recognised when the snapshot was taken keeps the result that came since.
    for (BlockResult& b : blocks) {
        if (!b.recognising) {
            continue;
        }
        for (const BlockResult& now : p->result.blocks) {
            if (!now.recognising && now.task == b.task && now.box.x1 == b.box.x1 && now.box.y1 == b.box.y1 &&
                now.box.x2 == b.box.x2 && now.box.y2 == b.box.y2) {
                const int id = b.id;
                const int order = b.order;
                const int group = b.groupId;
                b = now;
                b.id = id;
                b.order = order;
                b.groupId = group;
                break;
            }
        }
    }
    p->result.blocks = std::move(blocks);
    p->edited = snapshot.edited;
    Q_EMIT blocksRenumbered(doc, page);
    Q_EMIT pageChanged(doc, page);
}

PageCommand::PageCommand(DocumentModel& model, int doc, int page, const QString& text,
                         std::function<void()> action)
    : QUndoCommand(text),
      model_(model),
      doc_(doc),
      page_(page),
      generation_(model.hasPage(doc, page) ? model.page(doc, page).generation : -1),
      action_(std::move(action)) {}

bool PageCommand::current() const {
    return model_.hasPage(doc_, page_) && model_.page(doc_, page_).generation == generation_;
}

void PageCommand::redo() {
    if (!current()) {
        setObsolete(true);
        return;
    }
    if (!done_ || !after_) {
        before_ = model_.snapshot(doc_, page_);
        done_ = true;
        action_();
        return;
    }
    model_.restore(doc_, page_, *after_);
}

void PageCommand::undo() {
    if (!current()) {
        setObsolete(true);
        return;
    }
    if (resultComplete()) {
        after_ = model_.snapshot(doc_, page_);
    } else {
        after_.reset();
    }
    model_.restore(doc_, page_, before_);
}

const char* documentStateName(DocumentState state) {
    switch (state) {
        case DocumentState::Opening:
            return QT_TRANSLATE_NOOP("folio::DocumentState", "opening");
        case DocumentState::Idle:
            return QT_TRANSLATE_NOOP("folio::DocumentState", "not run");
        case DocumentState::Queued:
            return QT_TRANSLATE_NOOP("folio::DocumentState", "queued");
        case DocumentState::Running:
            return QT_TRANSLATE_NOOP("folio::DocumentState", "running");
        case DocumentState::Done:
            return QT_TRANSLATE_NOOP("folio::DocumentState", "done");
        case DocumentState::Failed:
            return QT_TRANSLATE_NOOP("folio::DocumentState", "failed");
        case DocumentState::Cancelled:
            return QT_TRANSLATE_NOOP("folio::DocumentState", "cancelled");
        case DocumentState::Closed:
            return QT_TRANSLATE_NOOP("folio::DocumentState", "closed");
    }
    return "";
}

}  // namespace folio
