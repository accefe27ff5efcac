#include "app/pipeline/document-pipeline.h"

#include <QFileInfo>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "app/pipeline/page-collector.h"
#include "app/pipeline/page-feeder.h"
#include "app/pipeline/page-prefetch.h"
#include "engine/common/error.h"
#include "engine/layout/layout-labels.h"

namespace folio {

int renderThreadCount(const PipelineOptions& options) {
    return options.renderThreads > 0 ? options.renderThreads : PagePrefetcher::default_threads();
}

QString documentStem(const QString& inputPath) {
    return QFileInfo(inputPath).completeBaseName();
}

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

std::optional<LayoutModelInfo> DocumentPipeline::layoutForRun() const {
    if (!options_.useLayout) {
        return std::nullopt;
    }
    std::optional<LayoutModelInfo> layout = service_.layout_model();
    if (!layout) {
        fail("the engine has no layout model loaded; load one or run without layout");
    }
    if (options_.layoutRules) {
        layout->rules = *options_.layoutRules;
    }
    if (!options_.labelThresholds.empty()) {
        LayoutRules& rules = layout->rules;
        rules.thresholds.resize(kLayoutLabelCount, rules.default_threshold);
        for (const auto& [label, threshold] : options_.labelThresholds) {
            rules.thresholds[static_cast<size_t>(layout_label_id(label))] = threshold;
        }
    }
    return layout;
}

int DocumentPipeline::countPages(const QStringList& inputs) const {
    int n = 0;
    for (const QString& input : inputs) {
        try {
            n += opener_(input)->selectedCount();
        } catch (const std::exception&) {
            // Reported when its turn comes.
        }
    }
    return n;
}

void DocumentPipeline::cancel() {
    cancelled_.store(true);
    if (const int64_t group = group_.load(); group != 0) {
        service_.cancel_group(group);
    }
}

PipelineSummary DocumentPipeline::run(const QStringList& inputs, PipelineObserver& observer) {
    cancelled_.store(false);
    std::optional<LayoutModelInfo> layout = layoutForRun();
    const int64_t group = service_.create_group();
    group_.store(group);
    const pipeline::Clock::time_point started = pipeline::Clock::now();
    PipelineProgress progress;
    progress.documentsTotal = static_cast<int>(inputs.size());
    progress.pagesTotal = countPages(inputs);  // for the progress and its estimate

    const auto events = std::make_shared<pipeline::EventQueue>();
    pipeline::PageCollector collector(observer, *events, cancelled_, progress, started);
    pipeline::PageFeeder feeder(service_, options_, std::move(layout), group, events, cancelled_);
    std::string feederError;  // what stopped the reading thread early, where something did
    std::thread reading([&] {
        try {
            feeder.run(inputs, opener_);
        } catch (const std::exception& e) {
            feederError = e.what();
            cancel();
        }
        events->push(pipeline::FeederDone{});
    });
    const auto end = [&] {
        reading.join();
        service_.forget_group(group);
        group_.store(0);
    };
    try {
        collector.run();
    } catch (...) {
        // An observer threw: stop reading and pass the error on; the requests end with the group's cancel.
        cancel();
        events->wake();
        end();
        throw;
    }
    end();
    if (!feederError.empty()) {
        fail("reading documents stopped: ", feederError);
    }
    return collector.finish(cancelled_.load());
}

}  // namespace folio
