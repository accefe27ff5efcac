#include "app/pipeline/document-pipeline.h"

#include <QFileInfo>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <variant>

#include "app/documents/page-image.h"
#include "app/pipeline/block-content.h"
#include "app/pipeline/block-crop.h"
#include "app/pipeline/block-request.h"
#include "app/pipeline/page-prefetch.h"
#include "app/pipeline/spotting.h"
#include "engine/common/error.h"
#include "engine/layout/layout-labels.h"

namespace folio {

int renderThreadCount(const PipelineOptions& options) {
    return options.renderThreads > 0 ? options.renderThreads : PagePrefetcher::default_threads();
}

QString documentStem(const QString& inputPath) {
    return QFileInfo(inputPath).completeBaseName();
}

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// One request: the block it recognises and what came back.
struct BlockRequest {
    int block = 0;    // index into the page's blocks
    int nBlocks = 1;  // the blocks it reads: more than one where blocks were stacked into one crop
    QSize cropSize;   // the image the model saw
    std::string text;
    int nTokens = 0;
    bool done = false;
    std::optional<FinishReason> finish;
    std::string error;
};

struct PageState {
    int document = 0;  // serial of its document
    PageResult result;
    std::vector<BlockRequest> requests;
    int pending = 0;
    Clock::time_point submitted;
};

struct DocumentStarted {
    int document = 0;
    DocumentInfo info;
};
struct PageReady {
    int64_t serial = 0;
    std::shared_ptr<PageState> page;
};
struct BlockOutput {
    int64_t serial = 0;
    int request = 0;
    RequestOutput output;
};
struct DocumentEnded {
    int document = 0;
    QString error;  // could not be opened
};
struct FeederDone {};

using Event = std::variant<DocumentStarted, PageReady, BlockOutput, DocumentEnded, FeederDone>;

}  // namespace

struct DocumentPipeline::Run {
    explicit Run(PipelineObserver& run_observer) : observer(run_observer) {}

    PipelineObserver& observer;
    std::optional<LayoutModelInfo> layout;
    LayoutRules rules;

    std::mutex mutex;
    std::condition_variable changed;  // events queued, or a page left the pipeline
    std::deque<Event> events;
    int inFlight = 0;

    void push(Event event) {
        {
            const std::lock_guard lock(mutex);
            events.push_back(std::move(event));
        }
        changed.notify_all();
    }
};

DocumentPipeline::DocumentPipeline(EngineService& service, DocumentOpener opener, PipelineOptions options)
    : service_(service), opener_(std::move(opener)), options_(std::move(options)) {
    if (options_.maxPagesInFlight < 1) {
        fail("pages in flight must be at least 1, got ", options_.maxPagesInFlight);
    }
    if (options_.layoutBatch < 1) {
        fail("layout batch must be at least 1, got ", options_.layoutBatch);
    }
    if (options_.renderThreads < 0 || options_.renderThreads > 64) {
        fail("render threads must be within 0..64 (0: half the cores), got ", options_.renderThreads);
    }
    const PixelBounds& b = options_.recognition.pixels;
    if (b.minPixels < 1 || b.maxPixels < b.minPixels) {
        fail("crop pixel bounds ", b.minPixels, "..", b.maxPixels, " are not a range");
    }
    if (options_.recognition.maxNewTokens < 1) {
        fail("max new tokens must be at least 1, got ", options_.recognition.maxNewTokens);
    }
    for (const auto& [label, threshold] : options_.labelThresholds) {
        layout_label_id(label);  // throws for a name that is not a layout label
        if (!(threshold >= 0.0F && threshold <= 1.0F)) {
            fail("the layout threshold of ", label, " must be within 0..1, got ", threshold);
        }
    }
}

DocumentPipeline::~DocumentPipeline() = default;

void DocumentPipeline::cancel() {
    cancelled_.store(true);
    if (const int64_t group = group_.load(); group != 0) {
        service_.cancel_group(group);
    }
}

PipelineSummary DocumentPipeline::run(const QStringList& inputs, PipelineObserver& observer) {
    cancelled_.store(false);
    Run run(observer);
    if (options_.useLayout) {
        run.layout = service_.layout_model();
        if (!run.layout) {
            fail("the engine has no layout model loaded; load one or run without layout");
        }
        run.rules = options_.layoutRules ? *options_.layoutRules : run.layout->rules;
        if (!options_.labelThresholds.empty()) {
            run.rules.thresholds.resize(kLayoutLabelCount, run.rules.default_threshold);
            for (const auto& [label, threshold] : options_.labelThresholds) {
                run.rules.thresholds[static_cast<size_t>(layout_label_id(label))] = threshold;
            }
        }
    }
    const int64_t group = service_.create_group();
    group_.store(group);
    const Clock::time_point started = Clock::now();

    PipelineSummary summary;
    PipelineProgress progress;
    progress.documentsTotal = static_cast<int>(inputs.size());
    // Page counts up front, for the progress and its estimate; a document that cannot be opened is reported
    // when its turn comes.
    for (const QString& input : inputs) {
        try {
            progress.pagesTotal += opener_(input)->selectedCount();
        } catch (const std::exception&) {
        }
    }

    // Submits a page's recognition requests; the outputs come back as events.
    const auto submit = [&](int64_t serial, const std::shared_ptr<PageState>& page,
                            std::vector<std::pair<QImage, QString>> crops) {
        page->submitted = Clock::now();
        for (size_t r = 0; r < page->requests.size(); ++r) {
            BlockRequest& request = page->requests[r];
            const BlockResult& block = page->result.blocks[static_cast<size_t>(request.block)];
            SubmitOptions submit_options;
            submit_options.priority = Priority::Batch;
            submit_options.group = group;
            submit_options.on_output = [&run, serial, r](const RequestOutput& output) {
                run.push(BlockOutput{serial, static_cast<int>(r), output});
            };
            try {
                service_.submit(blockRequest(crops[r].first, block.label, crops[r].second,
                                             options_.recognition, options_.sampling),
                                std::move(submit_options));
            } catch (const std::exception& e) {
                RequestOutput failed;
                failed.finish = FinishReason::Error;
                failed.error = e.what();
                run.push(BlockOutput{serial, static_cast<int>(r), std::move(failed)});
            }
        }
    };

    // Turns laid-out pages into blocks, crops and requests.
    int64_t next_serial = 0;
    const auto begin_page = [&](int document, const QString& path, int pageCount, PageInput input,
                                std::vector<LayoutDetection> detections, PageTimings timings) {
        const Clock::time_point blocksStart = Clock::now();
        auto page = std::make_shared<PageState>();
        page->document = document;
        PageResult& result = page->result;
        result.inputPath = path;
        result.pageIndex = input.pageIndex;
        result.pageCount = pageCount;
        result.width = input.image.width();
        result.height = input.image.height();
        result.dpi = input.dpi;
        result.timings = timings;
        result.timings.renderMs = input.renderMs;
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
            result.blocks.push_back(std::move(block));
        }
        if (!options_.useLayout) {
            BlockResult block;
            block.label = options_.wholePageLabel;
            block.score = 1.0F;
            block.box = {0, 0, result.width, result.height};
            block.order = 1;
            result.blocks.push_back(std::move(block));
        }

        // Crops, stacked as the pipeline stacks text blocks.
        const RecognitionOptions& recognition = options_.recognition;
        std::vector<QImage> crops;
        std::vector<QString> labels;
        std::vector<BlockBox> boxes;
        std::vector<bool> canStack;
        std::vector<QSize> sizes;
        for (const BlockResult& block : result.blocks) {
            crops.push_back(cropBlock(input.image, block.box, block.polygon));
            labels.push_back(block.label);
            boxes.push_back(block.box);
            canStack.push_back(recognition.stackTextBlocks && stackable(block.label, recognition));
            sizes.push_back(crops.back().size());
        }
        const StackPlan plan = planStacks(labels, boxes, canStack, sizes);
        std::vector<BlockResult> ordered;
        std::vector<std::pair<QImage, QString>> requestCrops;
        std::vector<int> newIds(result.blocks.size(), -1);  // by index as laid out
        for (const StackPlan::Entry& entry : plan.entries) {
            BlockResult block = result.blocks[static_cast<size_t>(entry.block)];
            QImage crop = crops[static_cast<size_t>(entry.block)];
            block.id = static_cast<int>(ordered.size());
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
                page->requests.push_back({block.id, nBlocks, crop.size(), {}, 0, false, std::nullopt, {}});
                requestCrops.emplace_back(crop, task);
            }
            ordered.push_back(std::move(block));
        }
        result.blocks = std::move(ordered);
        result.image = std::move(input.image);
        page->pending = static_cast<int>(page->requests.size());
        const int64_t serial = next_serial++;
        result.timings.blocksMs = msSince(blocksStart);
        run.push(PageReady{serial, page});
        submit(serial, page, std::move(requestCrops));
    };

    // The reading thread: pages as the prefetcher's threads render and prepare them, layout a batch at a
    // time, requests.
    std::string feederError;  // what stopped the reading thread early, where something did
    std::thread feeder([&] {
        try {
            PagePrefetcher::Prepare prepare;
            if (options_.useLayout) {
                prepare = [&run](const PageInput& input) {
                    return run.layout->prepare(toEngineImage(input.image));
                };
            }
            PrefetchParams prefetch_params;
            prefetch_params.n_threads = renderThreadCount(options_);
            prefetch_params.window = std::max(prefetch_params.n_threads, options_.layoutBatch);
            PagePrefetcher prefetcher(inputs, opener_, std::move(prepare), prefetch_params);

            int d = -1;  // the document being read
            QString path;
            int pageCount = 0;
            int n_selected = 0;
            std::vector<PrefetchedItem> batch;
            const auto flush = [&] {
                if (batch.empty()) {
                    return;
                }
                LayoutResult layout;
                double layoutMs = 0;
                QString error;
                if (options_.useLayout) {
                    LayoutRequestSpec spec;
                    spec.rules = run.rules;
                    for (PrefetchedItem& p : batch) {
                        spec.pages.push_back(
                            {std::move(p.prepared), p.input.image.width(), p.input.image.height()});
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
                    layoutMs = msSince(t0) / static_cast<double>(batch.size());
                }
                for (size_t i = 0; i < batch.size(); ++i) {
                    if (!error.isEmpty()) {
                        auto page = std::make_shared<PageState>();
                        page->document = d;
                        page->result.inputPath = path;
                        page->result.pageIndex = batch[i].input.pageIndex;
                        page->result.pageCount = pageCount;
                        page->result.error = error;
                        run.push(PageReady{next_serial++, page});
                        continue;
                    }
                    PageTimings timings;
                    timings.layoutPreprocessMs = batch[i].prepareMs;
                    timings.layoutMs = layoutMs;
                    std::vector<LayoutDetection> detections;
                    if (options_.useLayout) {
                        timings.layoutBatchPages = layout.pages[i].batch_pages;
                        detections = std::move(layout.pages[i].blocks);
                    }
                    begin_page(d, path, pageCount, std::move(batch[i].input), std::move(detections), timings);
                }
                batch.clear();
            };
            const auto end_document = [&] {
                flush();
                if (d >= 0) {
                    run.push(DocumentEnded{d, {}});
                }
                d = -1;
            };
            while (!cancelled_.load()) {
                std::optional<PrefetchedItem> item = prefetcher.next();
                if (!item) {
                    break;
                }
                if (item->kind == PrefetchedItem::Kind::Document) {
                    end_document();
                    if (!item->error.isEmpty()) {
                        run.push(DocumentStarted{item->document,
                                                 DocumentInfo{item->path, documentStem(item->path), 0}});
                        run.push(DocumentEnded{item->document, item->error});
                        continue;
                    }
                    d = item->document;
                    path = item->path;
                    pageCount = item->pageCount;
                    n_selected = item->selectedCount;
                    run.push(DocumentStarted{d, DocumentInfo{path, documentStem(path), n_selected}});
                    continue;
                }
                {
                    std::unique_lock lock(run.mutex);
                    run.changed.wait(
                        lock, [&] { return cancelled_.load() || run.inFlight < options_.maxPagesInFlight; });
                    if (cancelled_.load()) {
                        break;
                    }
                    ++run.inFlight;
                }
                if (!item->error.isEmpty()) {
                    flush();
                    auto page = std::make_shared<PageState>();
                    page->document = d;
                    page->result.inputPath = path;
                    page->result.pageIndex = item->pageIndex;
                    page->result.pageCount = pageCount;
                    page->result.error = item->error;
                    run.push(PageReady{next_serial++, page});
                    continue;
                }
                const bool last = item->page + 1 == n_selected;
                batch.push_back(std::move(*item));
                // The run's first page goes through layout alone, so that its boxes and text come as soon as
                // it is ready instead of with the batch after it.
                bool full =
                    static_cast<int>(batch.size()) >= options_.layoutBatch || last || next_serial == 0;
                {
                    const std::lock_guard lock(run.mutex);
                    full = full || run.inFlight >= options_.maxPagesInFlight;
                }
                if (full) {
                    flush();
                }
            }
            prefetcher.stop();
            end_document();
        } catch (const std::exception& e) {
            feederError = e.what();
            cancel();
        }
        run.push(FeederDone{});
    });

    // This thread: outputs gathered, pages finished and handed over in order.
    struct Slot {
        enum class Kind { Page, DocumentEnd } kind = Kind::Page;
        int64_t serial = 0;
        int document = 0;
        QString error;
    };
    std::deque<Slot> slots;
    std::map<int64_t, std::shared_ptr<PageState>> pages;
    std::map<int, DocumentInfo> documents;
    std::map<int, DocumentOutcome> outcomes;
    bool feederDone = false;
    Clock::time_point lastProgress = Clock::now() - std::chrono::seconds(1);

    const auto report = [&](bool force) {
        if (!force && Clock::now() - lastProgress < std::chrono::milliseconds(100)) {
            return;
        }
        lastProgress = Clock::now();
        progress.elapsedSeconds = msSince(started) / 1000.0;
        progress.tokens = summary.tokens;
        progress.tokensPerSecond = progress.elapsedSeconds > 0 ? summary.tokens / progress.elapsedSeconds : 0;
        if (progress.pagesDone > 0 && progress.pagesTotal > progress.pagesDone) {
            progress.etaSeconds =
                progress.elapsedSeconds / progress.pagesDone * (progress.pagesTotal - progress.pagesDone);
        } else {
            progress.etaSeconds.reset();
        }
        observer.progressChanged(progress);
    };

    const auto finish_page = [&](PageState& page) {
        PageResult& result = page.result;
        if (!page.requests.empty()) {
            result.timings.recognitionMs = msSince(page.submitted);
        }
        for (BlockRequest& request : page.requests) {
            BlockResult& block = result.blocks[static_cast<size_t>(request.block)];
            block.nTokens = request.nTokens;
            block.truncated = request.finish == FinishReason::Length;
            if (request.finish == FinishReason::Error) {
                block.error = QString::fromStdString(request.error);
                ++outcomes[page.document].blocksFailed;
                ++summary.blocksFailed;
            }
            block.rawText = QString::fromStdString(request.text);
            if (block.label == QLatin1String("spotting")) {
                SpottingResult spotted =
                    parseSpotting(block.rawText, request.cropSize.width(), request.cropSize.height());
                result.spotting = std::move(spotted.lines);
                block.rawText = spotted.text;
                block.content = spotted.text;
            } else {
                finalizeBlock(block);
            }
        }
    };

    const auto drain = [&] {
        while (!slots.empty()) {
            Slot& slot = slots.front();
            if (slot.kind == Slot::Kind::DocumentEnd) {
                DocumentOutcome& outcome = outcomes[slot.document];
                outcome.error = slot.error;
                const DocumentInfo& info = documents[slot.document];
                outcome.cancelled =
                    cancelled_.load() && outcome.pagesDone + outcome.pagesFailed < info.pageCount;
                if (!slot.error.isEmpty()) {
                    ++summary.documentsFailed;
                }
                ++summary.documents;
                ++progress.documentsDone;
                observer.documentFinished(info, outcome);
                slots.pop_front();
                continue;
            }
            const auto it = pages.find(slot.serial);
            PageState& page = *it->second;
            if (page.pending > 0) {
                return;
            }
            const bool incomplete =
                std::any_of(page.requests.begin(), page.requests.end(),
                            [](const BlockRequest& r) { return r.finish == FinishReason::Cancelled; });
            if (!(incomplete && cancelled_.load())) {
                finish_page(page);
                DocumentOutcome& outcome = outcomes[page.document];
                if (page.result.error.isEmpty()) {
                    ++outcome.pagesDone;
                    ++summary.pages;
                } else {
                    ++outcome.pagesFailed;
                    ++summary.pagesFailed;
                }
                ++progress.pagesDone;
                observer.pageFinished(documents[page.document], page.result);
            }
            pages.erase(it);
            slots.pop_front();
            {
                const std::lock_guard lock(run.mutex);
                --run.inFlight;
            }
            run.changed.notify_all();
            report(true);
        }
    };

    const auto handle = [&](Event& event) {
        if (auto* started_doc = std::get_if<DocumentStarted>(&event)) {
            documents[started_doc->document] = started_doc->info;
            outcomes[started_doc->document] = {};
            observer.documentStarted(started_doc->info);
        } else if (auto* ready = std::get_if<PageReady>(&event)) {
            PageState& page = *ready->page;
            for (const BlockRequest& request : page.requests) {
                progress.blocksTotal += request.nBlocks;
                summary.blocks += request.nBlocks;
            }
            pages[ready->serial] = ready->page;
            slots.push_back({Slot::Kind::Page, ready->serial, page.document, {}});
            if (page.result.error.isEmpty()) {
                observer.pageLaidOut(documents[page.document], page.result);
            }
        } else if (auto* output = std::get_if<BlockOutput>(&event)) {
            PageState& page = *pages.at(output->serial);
            BlockRequest& request = page.requests.at(static_cast<size_t>(output->request));
            if (request.done) {
                return;
            }
            request.text += output->output.text;
            const auto n_new = static_cast<int>(output->output.tokens.size());
            if (n_new > 0 && page.result.timings.firstTokenMs == 0) {
                page.result.timings.firstTokenMs = msSince(page.submitted);
            }
            request.nTokens += n_new;
            summary.tokens += n_new;
            if (!output->output.text.empty()) {
                observer.blockText(documents[page.document], page.result.pageIndex, request.block,
                                   QString::fromStdString(output->output.text));
            }
            if (output->output.finish) {
                request.done = true;
                request.finish = output->output.finish;
                request.error = output->output.error;
                --page.pending;
                progress.blocksDone += request.nBlocks;
            }
            report(false);
        } else if (auto* ended = std::get_if<DocumentEnded>(&event)) {
            slots.push_back({Slot::Kind::DocumentEnd, 0, ended->document, ended->error});
        } else {
            feederDone = true;
        }
    };

    report(true);
    try {
        while (!(feederDone && slots.empty())) {
            std::deque<Event> batch;
            {
                std::unique_lock lock(run.mutex);
                run.changed.wait(lock, [&] { return !run.events.empty(); });
                batch.swap(run.events);
            }
            for (Event& event : batch) {
                handle(event);
            }
            drain();
        }
    } catch (...) {
        // An observer threw: stop reading, let the requests end, then pass the error on.
        cancel();
        run.changed.notify_all();
        feeder.join();
        // Every request must end before the run's state goes away: their outputs point into it.
        for (;;) {
            bool pending = false;
            for (auto& [serial, page] : pages) {
                pending = pending || page->pending > 0;
            }
            if (!pending) {
                break;
            }
            std::deque<Event> batch;
            {
                std::unique_lock lock(run.mutex);
                run.changed.wait(lock, [&] { return !run.events.empty(); });
                batch.swap(run.events);
            }
            for (Event& event : batch) {
                if (auto* output = std::get_if<BlockOutput>(&event)) {
                    if (output->output.finish) {
                        --pages.at(output->serial)->pending;
                    }
                } else if (auto* ready = std::get_if<PageReady>(&event)) {
                    pages[ready->serial] = ready->page;
                }
            }
        }
        service_.forget_group(group);
        group_.store(0);
        throw;
    }
    feeder.join();
    service_.forget_group(group);
    group_.store(0);
    if (!feederError.empty()) {
        fail("reading documents stopped: ", feederError);
    }
    summary.cancelled = cancelled_.load();
    summary.seconds = msSince(started) / 1000.0;
    report(true);
    return summary;
}

}  // namespace folio
