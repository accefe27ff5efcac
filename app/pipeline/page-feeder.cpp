#include "app/pipeline/page-feeder.h"

#include <QPointF>
#include <algorithm>

#include "app/documents/page-image.h"
#include "app/pipeline/block-crop.h"
#include "app/pipeline/block-request.h"
#include "engine/layout/layout-labels.h"

namespace folio::pipeline {

namespace {

// The blocks layout found, as a page's results.
std::vector<BlockResult> blocksFromLayout(const std::vector<LayoutDetection>& detections) {
    std::vector<BlockResult> blocks;
    for (const LayoutDetection& d : detections) {
        BlockResult block;
        block.label = QString::fromUtf8(layout_label_name(d.label));
        block.score = d.score;
        block.box = {static_cast<int>(d.box[0]), static_cast<int>(d.box[1]), static_cast<int>(d.box[2]),
                     static_cast<int>(d.box[3])};
        for (const auto& point : d.polygon) {
            block.polygon << QPointF(point[0], point[1]);
        }
        block.order = d.order;
        blocks.push_back(std::move(block));
    }
    return blocks;
}

// What a page's blocks make: the blocks in their final order (a stacked group's blocks together, ids anew)
// and a request for each crop to read, with the crop and its task.
struct CutBlocks {
    std::vector<BlockResult> blocks;
    std::vector<PendingRequest> requests;
    std::vector<std::pair<QImage, QString>> crops;  // a request's crop and task
};

CutBlocks cutBlocks(const std::vector<BlockResult>& blocks, const QImage& image,
                    const RecognitionOptions& recognition) {
    std::vector<QImage> crops;
    std::vector<QString> labels;
    std::vector<BlockBox> boxes;
    std::vector<bool> canStack;
    std::vector<QSize> sizes;
    for (const BlockResult& block : blocks) {
        crops.push_back(cropBlock(image, block.box, block.polygon));
        labels.push_back(block.label);
        boxes.push_back(block.box);
        canStack.push_back(recognition.stackTextBlocks && stackable(block.label, recognition));
        sizes.push_back(crops.back().size());
    }
    const StackPlan plan = planStacks(labels, boxes, canStack, sizes);
    CutBlocks cut;
    std::vector<int> newIds(blocks.size(), -1);  // by index as laid out
    for (const StackPlan::Entry& entry : plan.entries) {
        BlockResult block = blocks[static_cast<size_t>(entry.block)];
        QImage crop = crops[static_cast<size_t>(entry.block)];
        block.id = static_cast<int>(cut.blocks.size());
        newIds[static_cast<size_t>(entry.block)] = block.id;
        const bool follower = entry.group >= 0 && entry.members.empty();
        if (entry.group >= 0) {
            // A group's first block comes before the others in the plan, so its new id is known.
            block.groupId = newIds[static_cast<size_t>(entry.group)];
        }
        if (!entry.members.empty()) {
            std::vector<QImage> parts;
            for (const int m : entry.members) {
                parts.push_back(crops[static_cast<size_t>(m)]);
            }
            crop = stackImages(parts, entry.aligns);
        }
        if (savedAsImage(block.label, recognition)) {
            block.image = crop;
        }
        QString task = taskForLabel(block.label, recognition);
        if (!task.isEmpty() && !follower && !crop.isNull()) {
            crop = cropForTask(crop, task);
            block.task = task;
            const int nBlocks = entry.members.empty() ? 1 : static_cast<int>(entry.members.size());
            cut.requests.push_back({block.id, nBlocks, crop.size(), {}, 0, false, std::nullopt, {}});
            cut.crops.emplace_back(crop, task);
        }
        cut.blocks.push_back(std::move(block));
    }
    return cut;
}

}  // namespace

PageFeeder::PageFeeder(EngineService& service, const PipelineOptions& options,
                       std::optional<LayoutModelInfo> layout, int64_t group,
                       std::shared_ptr<EventQueue> events, const std::atomic<bool>& cancelled)
    : service_(service),
      options_(options),
      layout_(std::move(layout)),
      group_(group),
      events_(std::move(events)),
      cancelled_(cancelled) {}

void PageFeeder::run(const QStringList& inputs, const DocumentOpener& opener) {
    PagePrefetcher::Prepare prepare;
    if (layout_) {
        prepare = [&prepareLayout = layout_->prepare](const PageInput& input) {
            return prepareLayout(toEngineImage(input.image));
        };
    }
    PrefetchParams params;
    params.n_threads = renderThreadCount(options_);
    params.window = std::max(params.n_threads, options_.layoutBatch);
    PagePrefetcher prefetcher(inputs, opener, std::move(prepare), params);
    while (!cancelled_.load()) {
        std::optional<PrefetchedItem> item = prefetcher.next();
        if (!item) {
            break;
        }
        if (item->kind == PrefetchedItem::Kind::Document) {
            startDocument(*item);
            continue;
        }
        if (!events_->admitPage(options_.maxPagesInFlight, cancelled_)) {
            break;
        }
        addPage(std::move(*item));
    }
    prefetcher.stop();
    endDocument();
}

void PageFeeder::startDocument(const PrefetchedItem& item) {
    endDocument();
    if (!item.error.isEmpty()) {
        events_->push(DocumentStarted{item.document, DocumentInfo{item.path, documentStem(item.path), 0}});
        events_->push(DocumentEnded{item.document, item.error});
        return;
    }
    document_ = item.document;
    path_ = item.path;
    pageCount_ = item.pageCount;
    selectedCount_ = item.selectedCount;
    events_->push(DocumentStarted{document_, DocumentInfo{path_, documentStem(path_), selectedCount_}});
}

void PageFeeder::endDocument() {
    layOutBatch();
    if (document_ >= 0) {
        events_->push(DocumentEnded{document_, {}});
    }
    document_ = -1;
}

void PageFeeder::addPage(PrefetchedItem item) {
    if (!item.error.isEmpty()) {
        layOutBatch();
        failPage(item.pageIndex, item.error);
        return;
    }
    const bool last = item.page + 1 == selectedCount_;
    batch_.push_back(std::move(item));
    // The run's first page goes through layout alone, so that its boxes and text come as soon as it is ready
    // instead of with the batch after it.
    if (static_cast<int>(batch_.size()) >= options_.layoutBatch || last || nextSerial_ == 0 ||
        events_->full(options_.maxPagesInFlight)) {
        layOutBatch();
    }
}

void PageFeeder::layOutBatch() {
    if (batch_.empty()) {
        return;
    }
    LayoutResult layout;
    double layoutMs = 0;
    QString error;
    if (layout_) {
        LayoutRequestSpec spec;
        spec.rules = layout_->rules;
        for (PrefetchedItem& p : batch_) {
            spec.pages.push_back({std::move(p.prepared), p.input.image.width(), p.input.image.height()});
        }
        const Clock::time_point t0 = Clock::now();
        try {
            layout = service_.submit_layout(std::move(spec)).wait();
            if (!layout.ok()) {
                fail(layout.error);
            }
        } catch (const std::exception& e) {
            error = QStringLiteral("layout failed: ") + QString::fromUtf8(e.what());
        }
        layoutMs = msSince(t0) / static_cast<double>(batch_.size());
    }
    for (size_t i = 0; i < batch_.size(); ++i) {
        if (!error.isEmpty()) {
            failPage(batch_[i].input.pageIndex, error);
            continue;
        }
        PageTimings timings;
        timings.layoutPreprocessMs = batch_[i].prepareMs;
        timings.layoutMs = layoutMs;
        std::vector<LayoutDetection> detections;
        if (layout_) {
            timings.layoutBatchPages = layout.pages[i].batch_pages;
            detections = std::move(layout.pages[i].blocks);
        }
        beginPage(std::move(batch_[i].input), std::move(detections), timings);
    }
    batch_.clear();
}

void PageFeeder::failPage(int pageIndex, const QString& error) {
    auto page = std::make_shared<PageState>();
    page->document = document_;
    page->result.inputPath = path_;
    page->result.pageIndex = pageIndex;
    page->result.pageCount = pageCount_;
    page->result.error = error;
    events_->push(PageReady{nextSerial_++, page});
}

void PageFeeder::beginPage(PageInput input, std::vector<LayoutDetection> detections, PageTimings timings) {
    const Clock::time_point blocksStart = Clock::now();
    auto page = std::make_shared<PageState>();
    page->document = document_;
    PageResult& result = page->result;
    result.inputPath = path_;
    result.pageIndex = input.pageIndex;
    result.pageCount = pageCount_;
    result.width = input.image.width();
    result.height = input.image.height();
    result.dpi = input.dpi;
    result.timings = timings;
    result.timings.renderMs = input.renderMs;
    result.blocks = blocksFromLayout(detections);
    if (!layout_) {
        BlockResult block;
        block.label = options_.wholePageLabel;
        block.score = 1.0F;
        block.box = {0, 0, result.width, result.height};
        block.order = 1;
        result.blocks.push_back(std::move(block));
    }
    CutBlocks cut = cutBlocks(result.blocks, input.image, options_.recognition);
    result.blocks = std::move(cut.blocks);
    result.image = std::move(input.image);
    page->requests = std::move(cut.requests);
    page->pending = static_cast<int>(page->requests.size());
    const int64_t serial = nextSerial_++;
    result.timings.blocksMs = msSince(blocksStart);
    events_->push(PageReady{serial, page});
    submitRequests(serial, page, cut.crops);
}

void PageFeeder::submitRequests(int64_t serial, const std::shared_ptr<PageState>& page,
                                const std::vector<std::pair<QImage, QString>>& crops) {
    page->submitted = Clock::now();
    for (size_t r = 0; r < page->requests.size(); ++r) {
        const PendingRequest& request = page->requests[r];
        const BlockResult& block = page->result.blocks[static_cast<size_t>(request.block)];
        SubmitOptions submitOptions;
        submitOptions.priority = Priority::Batch;
        submitOptions.group = group_;
        submitOptions.on_output = [events = events_, serial, r](const RequestOutput& output) {
            events->push(BlockOutput{serial, static_cast<int>(r), output});
        };
        try {
            service_.submit(blockRequest(crops[r].first, block.label, crops[r].second, options_.recognition,
                                         options_.sampling),
                            std::move(submitOptions));
        } catch (const std::exception& e) {
            RequestOutput failed;
            failed.finish = FinishReason::Error;
            failed.error = e.what();
            events_->push(BlockOutput{serial, static_cast<int>(r), std::move(failed)});
        }
    }
}

}  // namespace folio::pipeline
