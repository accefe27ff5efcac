#include "engine/service/layout-queue.h"

#include <algorithm>
#include <condition_variable>
#include <span>
#include <utility>

#include "engine/common/error.h"

namespace folio {

namespace detail {

// A layout request: what it asked for, set at submit, and what has come back.
struct LayoutState {
    LayoutRules rules;
    float mask_min_score = 0.0F;  // the rules' lowest threshold, which passes are formed by
    std::vector<int> widths;
    std::vector<int> heights;

    std::mutex mutex;  // guards what follows
    std::condition_variable changed;
    std::vector<std::vector<uint8_t>> pixels;  // each page until a pass takes it
    size_t next_page = 0;                      // the first page no pass has taken
    std::vector<LayoutRawOutput> raw;
    std::vector<int> batch_pages;
    size_t n_done = 0;
    bool ended = false;
    FinishReason finish = FinishReason::Stop;
    ErrorKind error_kind = ErrorKind::None;
    std::string error;
    std::optional<LayoutResult> result;  // once a caller took it

    size_t n_pages() const { return widths.size(); }

    // Under the lock.
    void end(FinishReason reason, ErrorKind kind, std::string message) {
        ended = true;
        finish = reason;
        error_kind = kind;
        error = std::move(message);
        pixels.clear();
        changed.notify_all();
    }
};

namespace {

// Under the state's lock, once it has ended: the result, the rules run on the raw outputs the first time.
LayoutResult take_result(LayoutState& s) {
    if (!s.result) {
        LayoutResult r;
        r.finish = s.finish;
        r.error_kind = s.error_kind;
        r.error = s.error;
        if (s.finish == FinishReason::Stop) {
            try {
                for (size_t i = 0; i < s.n_pages(); ++i) {
                    r.pages.push_back({detect_layout_blocks(s.raw[i], s.widths[i], s.heights[i], s.rules),
                                       s.batch_pages[i]});
                }
            } catch (const std::exception& e) {
                r.pages.clear();
                r.finish = FinishReason::Error;
                r.error_kind = ErrorKind::Failed;
                r.error = e.what();
            }
        }
        s.raw = {};
        s.result = std::move(r);
    }
    return *s.result;
}

}  // namespace

}  // namespace detail

using detail::LayoutState;

std::optional<LayoutResult> LayoutHandle::poll() {
    return wait_for(std::chrono::milliseconds(0));
}

std::optional<LayoutResult> LayoutHandle::wait_for(std::chrono::milliseconds timeout) {
    if (!state_) {
        return std::nullopt;
    }
    std::unique_lock lock(state_->mutex);
    if (!state_->changed.wait_for(lock, timeout, [&] { return state_->ended; })) {
        return std::nullopt;
    }
    return detail::take_result(*state_);
}

LayoutResult LayoutHandle::wait() {
    if (!state_) {
        fail("layout handle: no request");
    }
    std::unique_lock lock(state_->mutex);
    state_->changed.wait(lock, [&] { return state_->ended; });
    return detail::take_result(*state_);
}

bool LayoutHandle::finished() const {
    if (!state_) {
        return true;
    }
    const std::lock_guard lock(state_->mutex);
    return state_->ended;
}

void LayoutHandle::cancel() {
    if (!state_) {
        return;
    }
    const std::lock_guard lock(state_->mutex);
    if (!state_->ended) {
        state_->end(FinishReason::Cancelled, ErrorKind::None, {});
    }
}

// Some consecutive pages of one request within a pass.
struct LayoutQueue::Part {
    std::shared_ptr<LayoutState> state;
    size_t first = 0;   // its first page in the request
    size_t offset = 0;  // its first page in the pass
    size_t count = 0;
};

LayoutQueue::LayoutQueue() = default;
LayoutQueue::~LayoutQueue() = default;

void LayoutQueue::attach(const LayoutModel& model, ModelDescription description) {
    LayoutModelInfo info{std::move(description), model.default_rules(), model.max_batch(),
                         model.page_preparation()};
    const std::lock_guard lock(mutex_);
    model_ = &model;
    info_ = std::move(info);
}

std::optional<LayoutModelInfo> LayoutQueue::info() const {
    const std::lock_guard lock(mutex_);
    return info_;
}

LayoutHandle LayoutQueue::submit(LayoutRequestSpec spec) {
    auto state = std::make_shared<LayoutState>();
    for (size_t i = 0; i < spec.pages.size(); ++i) {
        const LayoutPage& page = spec.pages[i];
        if (page.width < 1 || page.height < 1) {
            fail("layout request: page ", i, " has no size (", page.width, "x", page.height, ")");
        }
        state->widths.push_back(page.width);
        state->heights.push_back(page.height);
        state->pixels.push_back(std::move(spec.pages[i].pixels));
    }
    state->raw.resize(state->n_pages());
    state->batch_pages.resize(state->n_pages());
    const std::lock_guard lock(mutex_);
    if (model_ == nullptr) {
        fail("engine service: no layout model is loaded; load one beside the recognition model");
    }
    state->rules = spec.rules ? std::move(*spec.rules) : info_->rules;
    state->mask_min_score = state->rules.lowest_threshold();
    if (state->n_pages() == 0) {
        state->ended = true;  // nothing to run
    } else {
        waiting_.push_back(state);
    }
    return LayoutHandle(state);
}

bool LayoutQueue::has_work() const {
    const std::lock_guard lock(mutex_);
    return model_ != nullptr && !waiting_.empty();
}

size_t LayoutQueue::n_waiting() const {
    const std::lock_guard lock(mutex_);
    return waiting_.size();
}

void LayoutQueue::run_pass() {
    std::vector<Part> parts;
    std::vector<std::vector<uint8_t>> pages;
    std::optional<float> mask_min_score;
    const LayoutModel* model = nullptr;
    {
        const std::lock_guard lock(mutex_);
        if (model_ == nullptr) {
            return;
        }
        model = model_;
        const auto batch = static_cast<size_t>(std::max(info_->max_batch, 1));
        // Pages in the order they were submitted, of the requests that share the first one's threshold.
        for (auto it = waiting_.begin(); it != waiting_.end() && pages.size() < batch;) {
            LayoutState& s = **it;
            const std::lock_guard state_lock(s.mutex);
            if (s.ended) {  // cancelled
                it = waiting_.erase(it);
                continue;
            }
            if (mask_min_score && s.mask_min_score != *mask_min_score) {
                ++it;
                continue;
            }
            mask_min_score = s.mask_min_score;
            Part part{*it, s.next_page, pages.size(), 0};
            for (; s.next_page < s.n_pages() && pages.size() < batch; ++s.next_page, ++part.count) {
                pages.push_back(std::move(s.pixels[s.next_page]));
            }
            parts.push_back(std::move(part));
            if (s.next_page == s.n_pages()) {
                s.pixels.clear();
                it = waiting_.erase(it);
            } else {
                ++it;
            }
        }
    }
    if (!pages.empty()) {
        run_parts(*model, pages, parts, *mask_min_score);
    }
}

void LayoutQueue::run_parts(const LayoutModel& model, std::span<const std::vector<uint8_t>> pages,
                            const std::vector<Part>& parts, float mask_min_score) {
    std::vector<LayoutRawOutput> raw;
    try {
        raw = model.detect_prepared(pages, mask_min_score);
        if (raw.size() != pages.size()) {
            fail("the layout model gave ", raw.size(), " outputs for ", pages.size(), " pages");
        }
    } catch (const std::exception& e) {
        if (parts.size() > 1) {
            // Each request alone, so that the error ends only its own.
            for (const Part& part : parts) {
                Part alone = part;
                alone.offset = 0;
                run_parts(model, pages.subspan(part.offset, part.count), {alone}, mask_min_score);
            }
            return;
        }
        LayoutState& s = *parts.front().state;
        const std::lock_guard lock(s.mutex);
        if (!s.ended) {
            s.end(FinishReason::Error, classify_failure(e), e.what());
        }
        return;
    }
    for (const Part& part : parts) {
        LayoutState& s = *part.state;
        const std::lock_guard lock(s.mutex);
        if (s.ended) {
            continue;  // cancelled while it ran
        }
        for (size_t i = 0; i < part.count; ++i) {
            s.raw[part.first + i] = std::move(raw[part.offset + i]);
            s.batch_pages[part.first + i] = static_cast<int>(pages.size());
        }
        s.n_done += part.count;
        if (s.n_done == s.n_pages()) {
            s.end(FinishReason::Stop, ErrorKind::None, {});
        }
    }
}

void LayoutQueue::stop() {
    std::deque<std::shared_ptr<LayoutState>> left;
    {
        const std::lock_guard lock(mutex_);
        left.swap(waiting_);
        model_ = nullptr;
        info_.reset();
    }
    for (const std::shared_ptr<LayoutState>& state : left) {
        const std::lock_guard lock(state->mutex);
        if (!state->ended) {
            state->end(FinishReason::Cancelled, ErrorKind::Stopped, "the service stopped");
        }
    }
}

}  // namespace folio
