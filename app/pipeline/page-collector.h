// The document pipeline's gathering side, on the thread that runs the pipeline: it takes the events the
// PageFeeder and the engine's output callbacks queue, adds each request's streamed text to its block,
// finishes a page's blocks' content once its last request has ended (finalizeBlock, spotting's lines) and
// hands documents and pages to the observer in document and page order, with the progress and the summary.
// Handing a page over makes room for the feeder to read another.
#pragma once

#include <QString>
#include <atomic>
#include <deque>
#include <map>
#include <memory>

#include "app/pipeline/document-pipeline.h"
#include "app/pipeline/pipeline-events.h"

namespace folio::pipeline {

class PageCollector {
public:
    // `progress`: the documents and pages counted up front. `cancelled`: pages left unfinished by a cancel
    // are dropped.
    PageCollector(PipelineObserver& observer, EventQueue& events, const std::atomic<bool>& cancelled,
                  PipelineProgress progress, Clock::time_point started);

    // Takes events until the feeder is done and every page and document is out. What the observer throws
    // is thrown here.
    void run();
    // The run's summary, with its time and whether it was cancelled; a last progress report.
    PipelineSummary finish(bool cancelled);

private:
    void handle(Event& event);
    // Hands out what is complete at the front of the order.
    void drain();
    void finishPage(PageState& page);
    void report(bool force);

    // A page, or a document's end, in the order the observer gets them.
    struct Slot {
        enum class Kind { Page, DocumentEnd } kind = Kind::Page;
        int64_t serial = 0;
        int document = 0;
        QString error;
    };

    PipelineObserver& observer_;
    EventQueue& events_;
    const std::atomic<bool>& cancelled_;
    PipelineProgress progress_;
    PipelineSummary summary_;
    Clock::time_point started_;
    Clock::time_point lastProgress_;
    std::deque<Slot> slots_;
    std::map<int64_t, std::shared_ptr<PageState>> pages_;
    std::map<int, DocumentInfo> documents_;
    std::map<int, DocumentOutcome> outcomes_;
    bool feederDone_ = false;
};

}  // namespace folio::pipeline
