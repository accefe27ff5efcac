#include "engine.h"

#include "error.h"

namespace folio {

std::optional<RequestOutput> RequestHandle::next() {
    std::unique_lock lock(state_->mutex);
    if (state_->on_output) {
        return std::nullopt;
    }
    state_->ready.wait(lock, [&] { return !state_->outputs.empty() || state_->taken; });
    if (state_->outputs.empty()) {
        return std::nullopt;
    }
    RequestOutput out = std::move(state_->outputs.front());
    state_->outputs.pop_front();
    if (out.finish) {
        state_->taken = true;
    }
    return out;
}

void RequestHandle::cancel() {
    engine_->cancel(id_);
}

Engine::Engine(GenerativeModel& model, const EngineConfig& config, const Tokenizer* tokenizer)
    : core_(model, config, tokenizer), thread_([this] { run(); }) {}

Engine::~Engine() {
    {
        const std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
    std::vector<int64_t> unfinished;
    for (const auto& entry : handles_) {
        unfinished.push_back(entry.first);
    }
    for (const int64_t id : unfinished) {  // deliver() forgets each handle as it ends
        deliver({id, {}, {}, FinishReason::Cancelled, "the engine stopped"});
    }
}

RequestHandle Engine::submit(Request request, std::function<void(const RequestOutput&)> on_output) {
    core_.validate(request);
    auto state = std::make_shared<RequestHandle::State>();
    state->on_output = std::move(on_output);
    int64_t id = 0;
    {
        const std::lock_guard lock(mutex_);
        id = next_id_++;
        handles_.emplace(id, state);
        pending_.emplace_back(id, std::move(request));
    }
    wake_.notify_all();
    return RequestHandle(id, std::move(state), this);
}

void Engine::cancel(int64_t id) {
    {
        const std::lock_guard lock(mutex_);
        cancels_.push_back(id);
    }
    wake_.notify_all();
}

void Engine::deliver(const RequestOutput& output) {
    std::shared_ptr<RequestHandle::State> state;
    {
        const std::lock_guard lock(mutex_);
        const auto it = handles_.find(output.id);
        if (it == handles_.end()) {
            return;
        }
        state = it->second;
        if (output.finish) {
            handles_.erase(it);
        }
    }
    if (state->on_output) {
        state->on_output(output);
    }
    if (!state->on_output) {
        {
            const std::lock_guard lock(state->mutex);
            state->outputs.push_back(output);
        }
        state->ready.notify_all();
    }
}

void Engine::run() {
    for (;;) {
        std::vector<std::pair<int64_t, Request>> pending;
        std::vector<int64_t> cancels;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] {
                return stop_ || !pending_.empty() || !cancels_.empty() || core_.has_unfinished();
            });
            if (stop_) {
                return;
            }
            pending.swap(pending_);
            cancels.swap(cancels_);
        }
        for (auto& [id, request] : pending) {
            try {
                core_.add(std::move(request), id);
            } catch (const std::exception& e) {
                deliver({id, {}, {}, FinishReason::Cancelled, e.what()});
            }
        }
        for (const int64_t id : cancels) {
            core_.cancel(id);
        }
        std::vector<RequestOutput> outputs;
        try {
            outputs = core_.step();
        } catch (const std::exception& e) {
            // The step failed as a whole: every request still running ends with the reason.
            std::vector<int64_t> active;
            {
                const std::lock_guard lock(mutex_);
                for (const auto& [id, state] : handles_) {
                    active.push_back(id);
                }
            }
            for (const int64_t id : active) {
                core_.cancel(id);
                deliver({id, {}, {}, FinishReason::Cancelled, e.what()});
            }
            continue;
        }
        for (const RequestOutput& out : outputs) {
            deliver(out);
        }
    }
}

}  // namespace folio
