// Runs documents through the pipeline on a worker thread and applies what it reports to the document model
// on the GUI thread, so that the GUI never waits on the engine. Also the block actions that go to the engine:
// re-running one block with another task and recognising a box drawn by hand (interactive priority).
//
// The pipeline's callbacks are queued as events under a lock and drained on the GUI thread in slices of a few
// milliseconds; a block's streamed text is coalesced, so a burst of tokens costs one update.
#pragma once

#include <QHash>
#include <QList>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QStringList>
#include <memory>
#include <thread>

#include "app/document-model/document-model.h"
#include "app/documents/document-source.h"
#include "app/pipeline/block-task.h"
#include "app/pipeline/document-pipeline.h"

namespace folio {

class JobController : public QObject {
    Q_OBJECT

public:
    JobController(EngineService& service, DocumentModel& model, QObject* parent = nullptr);
    ~JobController() override;

    void setPipelineOptions(const PipelineOptions& options) { pipelineOptions_ = options; }
    const PipelineOptions& pipelineOptions() const { return pipelineOptions_; }
    void setDocumentOptions(const DocumentOptions& options) { documentOptions_ = options; }
    const DocumentOptions& documentOptions() const { return documentOptions_; }
    // How documents are opened; default: files on disk (sourceOpener). Tests give generated documents.
    void setOpener(DocumentOpener opener) { opener_ = std::move(opener); }

    // Queues the model's documents for a run of the scope's pages; they start when the run under way ends.
    // The results of those pages are cleared as they start; other pages keep theirs. A document with nothing
    // to run in the scope is not queued.
    void run(const QList<int>& documents, RunScope scope = RunScope::All);
    // Stops the run under way (pages finished stay; pages laid out become Partial), drops the queued
    // documents and stops the block requests under way.
    void cancel();
    bool isRunning() const { return worker_.joinable(); }
    // While held, queued documents wait (the engine applies new settings); releasing starts them.
    void setHeld(bool held);
    bool isHeld() const { return held_; }
    const PipelineProgress& progress() const { return progress_; }

    // Runs one block again with another task (a prompt of blockTaskChoices()); its label follows the task.
    // Needs the page image (pages that went through layout): where the model let go of it, the request waits
    // for it (pageImageNeeded asks for it). Undoable: a command on the document's undo stack.
    void rerunBlock(int doc, int page, int blockId, const QString& prompt);
    // A box drawn on a page (page pixels) as a new block, recognised with the task; its id, or -1. Undoable.
    int recognizeRegion(int doc, int page, const BlockBox& box, const QString& prompt);
    // Block requests under way or waiting for their page's image (re-runs and drawn boxes).
    int pendingBlockRequests() const {
        return static_cast<int>(blockRequests_.size() + waitingForImage_.size());
    }
    // Whether a request for this block is under way or waiting.
    bool isRecognizing(int doc, int page, int blockId) const;
    // Stops the block requests of a document (all of them with blockId -1).
    void cancelBlockRequests(int doc, int page = -1, int blockId = -1);

public Q_SLOTS:
    // Starts queued documents once the engine is ready (run() queues them while it loads).
    void startQueued();

Q_SIGNALS:
    void runningChanged(bool running);
    // A block request waits for the image of a page that the model let go of.
    void pageImageNeeded(int doc, int page);
    void progressChanged(const folio::PipelineProgress& progress);
    void documentStarted(int doc);
    void documentFinished(int doc, const folio::DocumentOutcome& outcome);
    void jobFinished(const folio::PipelineSummary& summary);
    void blockRecognized(int doc, int page, int blockId);
    // Something failed (a document, a page, a block, the run): a message for the error panel.
    void errorOccurred(const QString& message);

private:
    struct Inbox;
    struct Observer;
    // A block request's block: its position, and its box and task, which find it again when the page's
    // blocks were renumbered (a deletion, undo, redo).
    struct BlockRequest {
        int doc = 0;
        int page = 0;
        int blockId = 0;
        BlockBox box;
        QString prompt;
        RequestHandle handle;
    };

    // Whether the page can have a block request now; where not, says why (errorOccurred).
    bool canRecognize(int doc, int page);
    // Submits the block's request (the work of rerunBlock, without the undo command).
    void submitBlock(int doc, int page, int blockId, const QString& prompt);
    void onBlocksRenumbered(int doc, int page);
    void onDocumentClosed(int doc);
    void startNext();
    void drain();
    int docOf(const QString& path) const { return jobDocuments_.value(path, -1); }

    EngineService& service_;
    DocumentModel& model_;
    bool held_ = false;
    QList<BlockRequest> waitingForImage_;
    PipelineOptions pipelineOptions_;
    DocumentOptions documentOptions_;
    DocumentOpener opener_;
    std::shared_ptr<Inbox> inbox_;
    std::unique_ptr<DocumentPipeline> pipeline_;
    std::unique_ptr<Observer> observer_;
    std::thread worker_;
    QList<int> queue_;
    QHash<int, RunScope> queuedScopes_;  // each queued document's scope
    QHash<QString, int> jobDocuments_;   // the run's inputs: path to document
    QList<int> requeueAfterCancel_;      // documents of a run cancelled for another's closing, to go on
    PipelineProgress progress_;
    QHash<int64_t, BlockRequest> blockRequests_;  // serial to block
    int64_t nextSerial_ = 1;
};

}  // namespace folio

Q_DECLARE_METATYPE(folio::PipelineProgress)
Q_DECLARE_METATYPE(folio::DocumentOutcome)
Q_DECLARE_METATYPE(folio::PipelineSummary)
