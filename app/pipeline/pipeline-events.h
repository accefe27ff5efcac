// What the document pipeline's reading thread (PageFeeder) hands to the thread that gathers the results
// (PageCollector): documents opened and ended, pages laid out with their block requests, each request's
// streamed outputs; and the count of pages held between the two, which bounds the reading.
#pragma once

#include <QSize>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "app/documents/page-result.h"
#include "engine/runtime/engine-core.h"

namespace folio::pipeline {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start);

// One request of a page: the block it recognises and what came back.
struct PendingRequest {
    int block = 0;    // index into the page's blocks
    int nBlocks = 1;  // the blocks it reads: more than one where blocks were stacked into one crop
    QSize cropSize;   // the image the model saw
    std::string text;
    int nTokens = 0;
    bool done = false;
    std::optional<FinishReason> finish;
    std::string error;
};

// A page between layout and the observer.
struct PageState {
    int document = 0;  // serial of its document
    PageResult result;
    std::vector<PendingRequest> requests;
    int pending = 0;  // requests not ended
    Clock::time_point submitted;
};

struct DocumentStarted {
    int document = 0;
    DocumentInfo info;
};
struct PageReady {
    int64_t serial = 0;  // the page's place in the run
    std::shared_ptr<PageState> page;
};
struct BlockOutput {
    int64_t serial = 0;
    int request = 0;  // index into the page's requests
    RequestOutput output;
};
struct DocumentEnded {
    int document = 0;
    QString error;  // could not be opened
};
struct FeederDone {};

using Event = std::variant<DocumentStarted, PageReady, BlockOutput, DocumentEnded, FeederDone>;

class EventQueue {
public:
    // From any thread (the engine thread's output callbacks among them).
    void push(Event event);
    // Waits for events and takes all that are queued.
    std::deque<Event> take();

    // The feeder, before a page: waits until fewer than `limit` pages are held or `stop` is set, then counts
    // the page in. False when stopped.
    bool admitPage(int limit, const std::atomic<bool>& stop);
    // Whether `limit` pages are held.
    bool full(int limit);
    // The collector: a page handed over or dropped.
    void releasePage();
    // Wakes a feeder waiting for room, to look at its stop flag again.
    void wake();

private:
    std::mutex mutex_;
    std::condition_variable changed_;  // events queued, or a page left
    std::deque<Event> events_;
    int held_ = 0;
};

}  // namespace folio::pipeline
