// Layout requests, the layout model's side of the engine service: pages a client prepared with the model's
// image processor (LayoutModelInfo::prepare, on the client's threads) wait in a queue, and the engine thread
// runs one pass of them between two recognition steps, pages of several requests together up to the model's
// batch. A request's pages may be spread over passes; an error in a pass of several requests has each of them
// run again alone, so that it ends only the request it belongs to. The layout rules (post-processing,
// PaddleOCR's rules) run on the thread that takes the result, never on the engine thread.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/common/failure.h"
#include "engine/layout/layout-output.h"
#include "engine/layout/layout-pipeline.h"
#include "engine/models/layout-model.h"
#include "engine/models/model-description.h"
#include "engine/runtime/sequence.h"

namespace folio {

// One page of a layout request.
struct LayoutPage {
    std::vector<uint8_t> pixels;  // the page through LayoutModelInfo::prepare: its levels
    int width = 0;                // the page's size in pixels, which its blocks' coordinates are in
    int height = 0;
};

struct LayoutRequestSpec {
    std::vector<LayoutPage> pages;
    // Thresholds, NMS, merge modes and the rest (engine/layout/layout-pipeline.h); none: the model's own
    // (LayoutModelInfo::rules). Pages go through the model together only with pages of the same lowest
    // threshold, which sets the masks that come back.
    std::optional<LayoutRules> rules;
};

struct LayoutPageResult {
    std::vector<LayoutDetection> blocks;  // in reading order, after the rules
    int batch_pages = 0;                  // the pages of the model's pass that took this one, of any request
};

struct LayoutResult {
    FinishReason finish = FinishReason::Stop;  // Stop, Cancelled or Error
    ErrorKind error_kind = ErrorKind::None;
    std::string error;
    std::vector<LayoutPageResult> pages;  // with Stop, one a page in the request's order

    bool ok() const { return finish == FinishReason::Stop; }
};

// What a client needs of the loaded layout model, copied out: it stays usable after the service unloads.
struct LayoutModelInfo {
    ModelDescription description;
    LayoutRules rules;  // PaddleOCR-VL's rules for this model
    int max_batch = 0;  // pages of one pass
    LayoutPagePreparation prepare;
};

namespace detail {
struct LayoutState;
}

class LayoutHandle {
public:
    LayoutHandle() = default;
    // The result once the request has ended, else nothing at once. The first call that finds it ended runs
    // the rules on its thread; later calls give the same result.
    std::optional<LayoutResult> poll();
    // The result, waiting up to timeout for the request to end.
    std::optional<LayoutResult> wait_for(std::chrono::milliseconds timeout);
    // The result, waiting for it.
    LayoutResult wait();
    bool finished() const;
    // Ends the request with FinishReason::Cancelled unless it had already ended; its pages not yet run are
    // dropped.
    void cancel();

private:
    friend class LayoutQueue;
    explicit LayoutHandle(std::shared_ptr<detail::LayoutState> state) : state_(std::move(state)) {}
    std::shared_ptr<detail::LayoutState> state_;
};

// The queue the engine service keeps; its owner wakes the engine thread after submit() and calls run_pass()
// there between steps.
class LayoutQueue {
public:
    LayoutQueue();
    ~LayoutQueue();
    LayoutQueue(const LayoutQueue&) = delete;
    LayoutQueue& operator=(const LayoutQueue&) = delete;

    // The model that serves the requests from now on, once loaded; it must stay alive until stop().
    void attach(const LayoutModel& model, ModelDescription description);
    std::optional<LayoutModelInfo> info() const;

    // Queues a request. Throws folio::Error without a layout model, or for a page without a size.
    LayoutHandle submit(LayoutRequestSpec spec);
    // Whether a request waits for the model.
    bool has_work() const;
    // Requests waiting for the model.
    size_t n_waiting() const;
    // On the engine thread: one pass of the model over the pages that wait, up to its batch, the raw outputs
    // to their requests; nothing where none waits.
    void run_pass();
    // Every request not ended ends with ErrorKind::Stopped, and the model is let go.
    void stop();

private:
    struct Part;
    // One call of the model over the parts' pages, each part's outputs to its request; where it fails, each
    // part again alone, and a part that fails alone ends its request with the error.
    static void run_parts(const LayoutModel& model, std::span<const std::vector<uint8_t>> pages,
                          const std::vector<Part>& parts, float mask_min_score);

    mutable std::mutex mutex_;  // guards what follows
    const LayoutModel* model_ = nullptr;
    std::optional<LayoutModelInfo> info_;
    std::deque<std::shared_ptr<detail::LayoutState>> waiting_;
};

}  // namespace folio
