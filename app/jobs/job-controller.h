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

    // Queues the model's documents for a run; they start when the one under way ends. Their results are
    // cleared.
    void run(const QList<int>& documents);
    // Stops the run under way (pages finished stay) and drops the queued documents.
    void cancel();
    bool isRunning() const { return worker_.joinable(); }
    // While held, queued documents wait (the engine applies new settings); releasing starts them.
    void setHeld(bool held);
    bool isHeld() const { return held_; }
    const PipelineProgress& progress() const { return progress_; }

    // Runs one block again with another task (a prompt of blockTaskChoices()); its label follows the task.
    // Needs the page image (pages that went through layout): where the model let go of it, the request waits
    // for it (pageImageNeeded asks for it).
    void rerunBlock(int doc, int page, int blockId, const QString& prompt);
    // A box drawn on a page (page pixels) as a new block, recognised with the task; its id, or -1.
    int recognizeRegion(int doc, int page, const BlockBox& box, const QString& prompt);
    // Removes a block, keeping requests under way for the page's other blocks pointed at them.
    void removeBlock(int doc, int page, int blockId);
    // Block requests under way (re-runs and drawn boxes).
    int pendingBlockRequests() const { return static_cast<int>(blockRequests_.size()); }

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
    struct BlockRequest {
        int doc = 0;
        int page = 0;
        int blockId = 0;
    };

    void startNext();
    void drain();
    int docOf(const QString& path) const { return jobDocuments_.value(path, -1); }

    EngineService& service_;
    DocumentModel& model_;
    bool held_ = false;
    struct WaitingRerun {
        int doc = 0;
        int page = 0;
        int blockId = 0;
        QString prompt;
    };
    QList<WaitingRerun> waitingForImage_;
    PipelineOptions pipelineOptions_;
    DocumentOptions documentOptions_;
    DocumentOpener opener_;
    std::shared_ptr<Inbox> inbox_;
    std::unique_ptr<DocumentPipeline> pipeline_;
    std::unique_ptr<Observer> observer_;
    std::thread worker_;
    QList<int> queue_;
    QHash<QString, int> jobDocuments_;  // the run's inputs: path to document
    PipelineProgress progress_;
    QHash<int64_t, BlockRequest> blockRequests_;  // serial to block
    int64_t nextSerial_ = 1;
};

}  // namespace folio

Q_DECLARE_METATYPE(folio::PipelineProgress)
Q_DECLARE_METATYPE(folio::DocumentOutcome)
Q_DECLARE_METATYPE(folio::PipelineSummary)
