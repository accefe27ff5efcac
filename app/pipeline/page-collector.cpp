#include "app/pipeline/page-collector.h"

#include <algorithm>
#include <variant>

#include "app/pipeline/block-content.h"
#include "app/pipeline/spotting.h"

namespace folio::pipeline {

PageCollector::PageCollector(PipelineObserver& observer, EventQueue& events,
                             const std::atomic<bool>& cancelled, PipelineProgress progress,
                             Clock::time_point started)
    : observer_(observer),
      events_(events),
      cancelled_(cancelled),
      progress_(progress),
      started_(started),
      lastProgress_(Clock::now() - std::chrono::seconds(1)) {}

void PageCollector::run() {
    report(true);
    while (!(feederDone_ && slots_.empty())) {
        for (Event& event : events_.take()) {
            handle(event);
        }
        drain();
    }
}

PipelineSummary PageCollector::finish(bool cancelled) {
    summary_.cancelled = cancelled;
    summary_.seconds = msSince(started_) / 1000.0;
    report(true);
    return summary_;
}

void PageCollector::report(bool force) {
    if (!force && Clock::now() - lastProgress_ < std::chrono::milliseconds(100)) {
        return;
    }
    lastProgress_ = Clock::now();
    PipelineProgress& p = progress_;
    p.elapsedSeconds = msSince(started_) / 1000.0;
    p.tokens = summary_.tokens;
    p.tokensPerSecond = p.elapsedSeconds > 0 ? summary_.tokens / p.elapsedSeconds : 0;
    if (p.pagesDone > 0 && p.pagesTotal > p.pagesDone) {
        p.etaSeconds = p.elapsedSeconds / p.pagesDone * (p.pagesTotal - p.pagesDone);
    } else {
        p.etaSeconds.reset();
    }
    observer_.progressChanged(p);
}

void PageCollector::handle(Event& event) {
    if (auto* started = std::get_if<DocumentStarted>(&event)) {
        documents_[started->document] = started->info;
        outcomes_[started->document] = {};
        observer_.documentStarted(started->info);
    } else if (auto* ready = std::get_if<PageReady>(&event)) {
        PageState& page = *ready->page;
        for (const PendingRequest& request : page.requests) {
            progress_.blocksTotal += request.nBlocks;
            summary_.blocks += request.nBlocks;
        }
        pages_[ready->serial] = ready->page;
        slots_.push_back({Slot::Kind::Page, ready->serial, page.document, {}});
        if (page.result.error.isEmpty()) {
            observer_.pageLaidOut(documents_[page.document], page.result);
        }
    } else if (auto* output = std::get_if<BlockOutput>(&event)) {
        PageState& page = *pages_.at(output->serial);
        PendingRequest& request = page.requests.at(static_cast<size_t>(output->request));
        if (request.done) {
            return;
        }
        request.text += output->output.text;
        const auto n_new = static_cast<int>(output->output.tokens.size());
        if (n_new > 0 && page.result.timings.firstTokenMs == 0) {
            page.result.timings.firstTokenMs = msSince(page.submitted);
        }
        request.nTokens += n_new;
        summary_.tokens += n_new;
        if (!output->output.text.empty()) {
            observer_.blockText(documents_[page.document], page.result.pageIndex, request.block,
                                QString::fromStdString(output->output.text));
        }
        if (output->output.finish) {
            request.done = true;
            request.finish = output->output.finish;
            request.error = output->output.error;
            --page.pending;
            if (request.finish != FinishReason::Cancelled) {
                progress_.blocksDone += request.nBlocks;  // a cancelled block is not done
            }
        }
        report(false);
    } else if (auto* ended = std::get_if<DocumentEnded>(&event)) {
        slots_.push_back({Slot::Kind::DocumentEnd, 0, ended->document, ended->error});
    } else {
        feederDone_ = true;
    }
}

void PageCollector::drain() {
    while (!slots_.empty()) {
        const Slot& slot = slots_.front();
        if (slot.kind == Slot::Kind::DocumentEnd) {
            DocumentOutcome& outcome = outcomes_[slot.document];
            outcome.error = slot.error;
            const DocumentInfo& info = documents_[slot.document];
            outcome.cancelled = cancelled_.load() && outcome.pagesDone + outcome.pagesFailed < info.pageCount;
            if (!slot.error.isEmpty()) {
                ++summary_.documentsFailed;
            }
            ++summary_.documents;
            ++progress_.documentsDone;
            observer_.documentFinished(info, outcome);
            slots_.pop_front();
            continue;
        }
        const auto it = pages_.find(slot.serial);
        PageState& page = *it->second;
        if (page.pending > 0) {
            return;
        }
        const bool incomplete =
            std::any_of(page.requests.begin(), page.requests.end(),
                        [](const PendingRequest& r) { return r.finish == FinishReason::Cancelled; });
        if (!(incomplete && cancelled_.load())) {
            finishPage(page);
            DocumentOutcome& outcome = outcomes_[page.document];
            if (page.result.error.isEmpty()) {
                ++outcome.pagesDone;
                ++summary_.pages;
            } else {
                ++outcome.pagesFailed;
                ++summary_.pagesFailed;
            }
            ++progress_.pagesDone;
            observer_.pageFinished(documents_[page.document], page.result);
        }
        pages_.erase(it);
        slots_.pop_front();
        events_.releasePage();
        report(true);
    }
}

void PageCollector::finishPage(PageState& page) {
    PageResult& result = page.result;
    if (!page.requests.empty()) {
        result.timings.recognitionMs = msSince(page.submitted);
    }
    for (PendingRequest& request : page.requests) {
        BlockResult& block = result.blocks[static_cast<size_t>(request.block)];
        block.nTokens = request.nTokens;
        block.truncated = request.finish == FinishReason::Length;
        if (request.finish == FinishReason::Error) {
            block.error = QString::fromStdString(request.error);
            ++outcomes_[page.document].blocksFailed;
            ++summary_.blocksFailed;
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
}

}  // namespace folio::pipeline
