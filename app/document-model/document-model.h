// The documents open in the desktop app, their pages and blocks as the pipeline and the user's edits leave
// them: a widget-free document core that the views observe through its signals, with an undo stack a document
// for the user's block actions. Lives on the GUI thread.
#pragma once

#include <QDateTime>
#include <QImage>
#include <QObject>
#include <QSize>
#include <QString>
#include <QUndoCommand>
#include <QUndoStack>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "app/documents/page-result.h"

namespace folio {

// Pending: not laid out (not run yet, or waiting in a run); LaidOut: boxes known, recognition under way;
// Partial: laid out, but the run stopped before every block was recognised.
enum class PageState { Pending, LaidOut, Partial, Done, Failed };
enum class DocumentState { Opening, Idle, Queued, Running, Done, Failed, Cancelled, Closed };

// Which pages of a document a run takes: every page; the pages without a result (not finished, not
// changed by the user: what a cancelled run left); or every page the user has not changed.
enum class RunScope { All, Missing, Unedited };

// One page: its size in page pixels (the pipeline's rendering), a small preview for thumbnails, and the
// result as far as it got.
struct PageEntry {
    QSize size;      // page pixels; invalid until known
    QImage preview;  // small rendering for thumbnails and the view before layout
    PageResult
        result;  // blocks (streamed text in content while recognition runs), the page image after layout
    PageState state = PageState::Pending;
    bool edited =
        false;  // the user changed its blocks: text edited, blocks deleted, boxes drawn, blocks re-run
    int generation = 0;  // counts the runs that replaced its blocks: undo commands of an earlier one lapse
};

struct DocumentEntry {
    QString path;
    QString name;  // the file name, for lists and titles
    DocumentInfo info;
    std::vector<PageEntry> pages;
    DocumentState state = DocumentState::Opening;
    QString error;
    int pagesDone = 0;                 // pages with a result (done or failed)
    std::unique_ptr<QUndoStack> undo;  // the user's block actions; none once closed
    // Restored from the session file, the file had changed since its results were saved: they may not match
    // it (a run of every page replaces them). The saved results' file size and time.
    bool changedOnDisk = false;
    qint64 savedFileSize = -1;
    QDateTime savedFileModified;
};

// A page's blocks as one undo command saw them before or after its action.
struct PageSnapshot {
    std::vector<BlockResult> blocks;
    bool edited = false;
};

class DocumentModel : public QObject {
    Q_OBJECT

public:
    explicit DocumentModel(QObject* parent = nullptr);
    ~DocumentModel() override;

    // Every document added, closed ones included: indices stay valid for the model's life.
    int documentCount() const { return static_cast<int>(documents_.size()); }
    const DocumentEntry& document(int doc) const;
    // Whether the index names a document that is still open.
    bool isOpen(int doc) const;
    const PageEntry& page(int doc, int page) const;
    // nullptr where the indices do not name a block.
    const BlockResult* block(int doc, int page, int blockId) const;
    bool hasPage(int doc, int page) const;
    // The open document of this path, or -1.
    int findDocument(const QString& path) const;

    // A new document (not opened yet); its index.
    int addDocument(const QString& path);
    // The state a document's pages give it when nothing runs: opening without pages yet, done with every
    // page's result, cancelled with some, not run with none (a document restored, or opened again).
    static DocumentState stateOfPages(const DocumentEntry& entry);
    // A document with its pages as a session file kept them; its index. Its state follows its pages.
    int addRestoredDocument(const QString& path, std::vector<PageEntry> pages, bool changedOnDisk,
                            qint64 savedFileSize, const QDateTime& savedFileModified);
    void setDocumentState(int doc, DocumentState state, const QString& error = {});
    // Pages as the document was opened: their sizes in page pixels.
    void setPageSizes(int doc, const std::vector<QSize>& sizes);
    void setPreview(int doc, int page, const QImage& preview);
    // Closes a document: its pages, images and undo history go; the index stays, closed.
    void closeDocument(int doc);

    // What a run of the scope takes: page positions, ascending. Empty where the document's pages are not
    // known yet (then a run takes them all) or nothing is left to run (hasPagesToRun() tells which).
    std::vector<int> pagesToRun(int doc, RunScope scope) const;
    bool hasPagesToRun(int doc, RunScope scope) const;
    // Pages the user changed (edited, deleted or drawn blocks, re-runs).
    int editedPageCount(int doc) const;
    // Whether the document has user actions to undo: changes a close would lose.
    bool hasUnsavedEdits(int doc) const;

    // The pipeline's events, in its order.
    void resetResults(int doc);
    // Clears the results of these pages (positions) for a run of them; other pages keep theirs.
    void resetPages(int doc, const std::vector<int>& pages);
    void documentStarted(int doc, const DocumentInfo& info);
    void pageLaidOut(int doc, int page, const PageResult& result);
    void blockText(int doc, int page, int blockId, const QString& text);
    void pageFinished(int doc, int page, const PageResult& result);
    // A run of the document ended before its pages did: pages laid out but not finished become Partial.
    void runStopped(int doc);

    // Edits, as they are: not undoable (runs and block requests use them).
    void setBlock(int doc, int page, const BlockResult& block);  // replaces the block of block.id
    void setBlockContent(int doc, int page, int blockId, const QString& content);
    void removeBlock(int doc, int page, int blockId);    // later blocks' ids move down by one
    int addBlock(int doc, int page, BlockResult block);  // appended; its id
    void setPageEdited(int doc, int page);

    // The user's block actions, through the document's undo stack.
    void editBlockText(int doc, int page, int blockId, const QString& content);
    void deleteBlock(int doc, int page, int blockId);
    QUndoStack* undoStack(int doc) const;

    // What undo commands save and put back: a page's blocks and whether the user changed it.
    PageSnapshot snapshot(int doc, int page) const;
    void restore(int doc, int page, const PageSnapshot& snapshot);

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
    void documentClosed(int doc);                       // after its pages went
    void pageChanged(int doc, int page);                // layout, results, preview or blocks added or removed
    void blockChanged(int doc, int page, int blockId);  // one block's text or content
    // The page's blocks were removed or put back (a deletion, undo, redo): block ids may have moved.
    void blocksRenumbered(int doc, int page);

private:
    PageEntry* mutablePage(int doc, int page);
    DocumentEntry* mutableDocument(int doc);
    void countPagesDone(DocumentEntry& entry);
    // The page's image counts as the most recent; the least recent beyond the budget are let go of.
    void holdPageImage(int doc, int page);
    void forgetPageImage(int doc, int page);

    std::vector<DocumentEntry> documents_;
    int imageBudget_ = 24;
    std::list<std::pair<int, int>> imageOrder_;  // pages holding an image, the most recently used first
};

// An undo command over one page: the first redo() runs its action, undo() puts back the blocks as they were
// before, a later redo() the blocks as they were when it was undone. Once a run replaced the page's blocks
// (or the document closed) the command lapses and leaves the stack.
class PageCommand : public QUndoCommand {
public:
    PageCommand(DocumentModel& model, int doc, int page, const QString& text, std::function<void()> action);
    void redo() override;
    void undo() override;

protected:
    // Whether the page's blocks after the action are complete when it is undone; where not (a block request
    // still under way), a redo runs the action again rather than putting back half a result.
    virtual bool resultComplete() const { return true; }
    int document() const { return doc_; }
    int pageIndex() const { return page_; }

private:
    bool current() const;

    DocumentModel& model_;
    int doc_;
    int page_;
    int generation_;
    std::function<void()> action_;
    PageSnapshot before_;
    std::optional<PageSnapshot> after_;
    bool done_ = false;  // the action ran once
};

// The state's name in English, marked for translation in the "folio::DocumentState" context.
const char* documentStateName(DocumentState state);

}  // namespace folio
