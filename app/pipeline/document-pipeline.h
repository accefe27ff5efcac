// The document pipeline: documents in, pages out in order, each with its layout blocks and their recognised
// content, as PaddleOCR's PaddleOCR-VL pipeline makes them.
//
// A few threads open the documents and render their pages ahead, with the layout model's image processor (a
// PagePrefetcher); a reading thread (PageFeeder, page-feeder.h) takes the pages in order, sends a few at a
// time to the layout model as a layout request to the engine service, cuts each block's crop and submits one
// request a block (block-request.h), all documents' blocks into one group so that batching fills the device.
// The calling thread (PageCollector, page-collector.h) gathers the streamed text, finishes each block's
// content and hands pages to the observer in document and page order as they complete. At most
// max_pages_in_flight pages are held at once.
#pragma once

#include <QString>
#include <QStringList>
#include <atomic>
#include <cstdint>
#include <map>
#include <optional>

#include "app/documents/page-result.h"
#include "app/pipeline/block-task.h"
#include "app/pipeline/page-input.h"
#include "engine/layout/layout-pipeline.h"
#include "engine/service/engine-service.h"

namespace folio {

struct PipelineOptions {
    RecognitionOptions recognition;
    // Without layout each page is one block of this label ("ocr", "table", "formula", "chart", "seal",
    // "spotting"); with layout (the service holds a layout model) it is ignored.
    bool useLayout = true;
    QString wholePageLabel = QStringLiteral("ocr");
    // The layout rules; empty: PaddleOCR-VL's for PP-DocLayoutV2, PaddleOCR-VL-1.5's for V3.
    std::optional<LayoutRules> layoutRules;
    // Score thresholds by label name over those of the rules (a user's settings), each in 0..1.
    std::map<std::string, float> labelThresholds;
    // Pages between rendering and their last block's text. Each holds its image; enough of them keep the
    // device's batches full while every page's blocks decode to their ends.
    int maxPagesInFlight = 32;
    int layoutBatch = 4;    // pages through the layout model together
    int renderThreads = 0;  // threads rendering pages and preparing them for layout; 0: half the cores, 1..4
    SamplingParams sampling;  // greedy by default, as PaddleOCR-VL's pipeline decodes
};

// The threads a pipeline with these options renders pages on.
int renderThreadCount(const PipelineOptions& options);

// Where the whole run stands.
struct PipelineProgress {
    int documentsDone = 0;
    int documentsTotal = 0;
    int pagesDone = 0;
    int pagesTotal = 0;  // every selected page of the documents opened so far and those counted up front
    int blocksDone = 0;
    int blocksTotal = 0;  // of the pages laid out so far
    int64_t tokens = 0;
    double elapsedSeconds = 0;
    double tokensPerSecond = 0;
    std::optional<double> etaSeconds;
};

struct DocumentOutcome {
    int pagesDone = 0;
    int pagesFailed = 0;  // pages that could not be rendered or laid out (written with their error)
    int blocksFailed = 0;
    bool cancelled = false;
    QString error;  // the document could not be opened
};

// Called on the thread that runs the pipeline, in document and page order.
class PipelineObserver {
public:
    virtual ~PipelineObserver() = default;
    virtual void documentStarted(const DocumentInfo& /*document*/) {}
    // A page's blocks as layout found them, before recognition (views draw the boxes).
    virtual void pageLaidOut(const DocumentInfo& /*document*/, const PageResult& /*page*/) {}
    // A block's text so far, while it is generated.
    virtual void blockText(const DocumentInfo& /*document*/, int /*pageIndex*/, int /*blockId*/,
                           const QString& /*text*/) {}
    virtual void pageFinished(const DocumentInfo& /*document*/, const PageResult& /*page*/) {}
    virtual void documentFinished(const DocumentInfo& /*document*/, const DocumentOutcome& /*outcome*/) {}
    virtual void progressChanged(const PipelineProgress& /*progress*/) {}
};

struct PipelineSummary {
    int documents = 0;
    int documentsFailed = 0;
    int pages = 0;
    int pagesFailed = 0;
    int blocks = 0;
    int blocksFailed = 0;
    int64_t tokens = 0;
    double seconds = 0;
    bool cancelled = false;
};

class DocumentPipeline {
public:
    // The service must be Ready; with options.useLayout it must hold a layout model.
    DocumentPipeline(EngineService& service, DocumentOpener opener, PipelineOptions options);
    ~DocumentPipeline();
    DocumentPipeline(const DocumentPipeline&) = delete;
    DocumentPipeline& operator=(const DocumentPipeline&) = delete;

    // Processes the inputs in order and returns when every page is out or the run was cancelled. Throws
    // folio::Error for options that cannot run (no layout model, bad bounds); a document or page that
    // fails is reported to the observer and the run goes on.
    PipelineSummary run(const QStringList& inputs, PipelineObserver& observer);
    // Stops a run from any thread: no new page is read, requests end within one engine step, and pages
    // not finished are dropped (their documents end with DocumentOutcome::cancelled).
    void cancel();
    bool cancelled() const { return cancelled_.load(); }

private:
    // The layout model with this run's rules (the options' over the model's own); none without layout.
    std::optional<LayoutModelInfo> layoutForRun() const;
    // Every input's selected pages, those that cannot be opened left out.
    int countPages(const QStringList& inputs) const;

    EngineService& service_;
    DocumentOpener opener_;
    PipelineOptions options_;
    std::atomic<bool> cancelled_{false};
    std::atomic<int64_t> group_{0};
};

// The output file name stem of an input: its file name without the last suffix.
QString documentStem(const QString& inputPath);

}  // namespace folio
