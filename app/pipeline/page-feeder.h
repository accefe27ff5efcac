// The document pipeline's reading side, on a thread of its own: pages from the PagePrefetcher in document and
// page order, a few at a time through the layout model (a layout request to the engine service), each page's
// blocks cut into crops (text blocks stacked as PaddleOCR-VL stacks them) and one block request a crop
// submitted to the run's group; documents, pages and every request's outputs go to the EventQueue. It reads a
// page only while fewer than max_pages_in_flight are held.
#pragma once

#include <QImage>
#include <QString>
#include <QStringList>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "app/pipeline/document-pipeline.h"
#include "app/pipeline/page-input.h"
#include "app/pipeline/page-prefetch.h"
#include "app/pipeline/pipeline-events.h"
#include "engine/service/engine-service.h"

namespace folio::pipeline {

class PageFeeder {
public:
    // `layout`: the layout model with the run's rules, none without layout. The requests' output callbacks
    // share `events`, so that a run that ends early (an observer threw) need not wait for them. Stops reading
    // once `cancelled`.
    PageFeeder(EngineService& service, const PipelineOptions& options, std::optional<LayoutModelInfo> layout,
               int64_t group, std::shared_ptr<EventQueue> events, const std::atomic<bool>& cancelled);

    // Reads the inputs to their end or to a cancel. Throws what stops it early; a document or page that fails
    // goes to the events with its error.
    void run(const QStringList& inputs, const DocumentOpener& opener);

private:
    void startDocument(const PrefetchedItem& item);
    void endDocument();
    void addPage(PrefetchedItem item);
    // The pages waiting for layout through it, each then begun.
    void layOutBatch();
    void failPage(int pageIndex, const QString& error);
    // A laid-out page: its blocks, crops and requests.
    void beginPage(PageInput input, std::vector<LayoutDetection> detections, PageTimings timings);
    // The page's requests to the engine service, one a crop with its task; their outputs come back as events.
    void submitRequests(int64_t serial, const std::shared_ptr<PageState>& page,
                        const std::vector<std::pair<QImage, QString>>& crops);

    EngineService& service_;
    const PipelineOptions& options_;
    std::optional<LayoutModelInfo> layout_;
    int64_t group_;
    std::shared_ptr<EventQueue> events_;
    const std::atomic<bool>& cancelled_;

    int document_ = -1;  // the document being read
    QString path_;
    int pageCount_ = 0;
    int selectedCount_ = 0;
    std::vector<PrefetchedItem> batch_;  // pages waiting for layout
    int64_t nextSerial_ = 0;
};

}  // namespace folio::pipeline
