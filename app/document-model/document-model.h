// The documents open in the desktop app, their pages and blocks as the pipeline and the user's edits leave
// them: a widget-free model that the views observe through its signals. Lives on the GUI thread.
#pragma once

#include <QImage>
#include <QObject>
#include <QSize>
#include <QString>
#include <list>
#include <utility>
#include <vector>

#include "app/documents/page-result.h"

namespace folio {

enum class PageState { Pending, LaidOut, Done, Failed };
enum class DocumentState { Opening, Idle, Queued, Running, Done, Failed, Cancelled };

// One page: its size in page pixels (the pipeline's rendering), a small preview for thumbnails, and the
// result as far as it got.
struct PageEntry {
    QSize size;      // page pixels; invalid until known
    QImage preview;  // small rendering for thumbnails and the view before layout
    PageResult
        result;  // blocks (streamed text in content while recognition runs), the page image after layout
    PageState state = PageState::Pending;
};

struct DocumentEntry {
    QString path;
    QString name;  // the file name, for lists and titles
    DocumentInfo info;
    std::vector<PageEntry> pages;
    DocumentState state = DocumentState::Opening;
    QString error;
    int pagesDone = 0;
};

class DocumentModel : public QObject {
    Q_OBJECT

public:
    explicit DocumentModel(QObject* parent = nullptr);

    int documentCount() const { return static_cast<int>(documents_.size()); }
    const DocumentEntry& document(int doc) const;
    const PageEntry& page(int doc, int page) const;
    // nullptr where the indices do not name a block.
    const BlockResult* block(int doc, int page, int blockId) const;
    bool hasPage(int doc, int page) const;
    // The document of this path, or -1.
    int findDocument(const QString& path) const;

    // A new document (not opened yet); its index.
    int addDocument(const QString& path);
    void setDocumentState(int doc, DocumentState state, const QString& error = {});
    // Pages as the document was opened: their sizes in page pixels.
    void setPageSizes(int doc, const std::vector<QSize>& sizes);
    void setPreview(int doc, int page, const QImage& preview);

    // The pipeline's events, in its order.
    void resetResults(int doc);
    void documentStarted(int doc, const DocumentInfo& info);
    void pageLaidOut(int doc, int page, const PageResult& result);
    void blockText(int doc, int page, int blockId, const QString& text);
    void pageFinished(int doc, int page, const PageResult& result);

    // Edits.
    void setBlock(int doc, int page, const BlockResult& block);  // replaces the block of block.id
    void setBlockContent(int doc, int page, int blockId, const QString& content);
    void removeBlock(int doc, int page, int blockId);    // later blocks' ids move down by one
    int addBlock(int doc, int page, BlockResult block);  // appended; its id

    // Page images: at 200 DPI one is about 11 MB, so the model keeps the most recently used ones only (the
    // budget, in pages) and lets go of the others' (their previews stay); PageRenderer makes them again.
    void setPageImageBudget(int pages);
    int pageImagesHeld() const { return static_cast<int>(imageOrder_.size()); }
    // Marks a page's image as just used (a view shows it), so that it is the last to go.
    void touchPageImage(int doc, int page);
    // Whether the page went through layout but its image was let go of.
    bool needsPageImage(int doc, int page) const;
    // A page image made again; ignored unless the page still needs it.
    void setPageImage(int doc, int page, const QImage& image);

    // Position of a pipeline page (PageResult::pageIndex) in its document's page list.
    static int pagePosition(int pageIndex) { return pageIndex < 0 ? 0 : pageIndex; }

Q_SIGNALS:
    void documentAdded(int doc);
    void documentChanged(int doc);                      // state, progress, error, page count
    void pageChanged(int doc, int page);                // layout, results, preview or blocks added or removed
    void blockChanged(int doc, int page, int blockId);  // one block's text or content

private:
    PageEntry* mutablePage(int doc, int page);
    // The page's image counts as the most recent; the least recent beyond the budget are let go of.
    void holdPageImage(int doc, int page);
    void forgetPageImage(int doc, int page);

    std::vector<DocumentEntry> documents_;
    int imageBudget_ = 24;
    std::list<std::pair<int, int>> imageOrder_;  // pages holding an image, the most recently used first
};

const char* documentStateName(DocumentState state);

}  // namespace folio
