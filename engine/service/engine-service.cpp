#include "engine/service/engine-service.h"
#include "engine/service/service-impl.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <iterator>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/models/model-registry.h"
#include "engine/service/submission-order.h"
#include "engine/service/task-queue.h"

namespace folio {

const char* service_state_name(ServiceState state) {
    switch (state) {
        case ServiceState::Empty:
            return "empty";
        case ServiceState::Loading:
            return "loading";
        case ServiceState::Ready:
            return "ready";
        case ServiceState::Failed:
            return "failed";
    }
    return "unknown";
}

using detail::final_output;
using detail::RequestState;
using detail::ServiceImpl;

std::optional<RequestOutput> RequestHandle::poll() {
    return wait_for(std::chrono::milliseconds(0));
}

std::optional<RequestOutput> RequestHandle::wait_for(std::chrono::milliseconds timeout) {
    if (!state_ || state_->on_output) {
        return std::nullopt;
    }
    std::unique_lock lock(state_->mutex);
    if (!state_->ready.wait_for(lock, timeout,
                                [&] { return !state_->outputs.empty() || state_->taken_final; }) ||
        state_->outputs.empty()) {
        return std::nullopt;
    }
    RequestOutput out = std::move(state_->outputs.front());
    state_->outputs.pop_front();
    state_->taken_final = out.finish.has_value();
    return out;
}

std::optional<RequestOutput> RequestHandle::next() {
    if (!state_ || state_->on_output) {
        return std::nullopt;
    }
    std::unique_lock lock(state_->mutex);
    state_->ready.wait(lock, [&] { return !state_->outputs.empty() || state_->taken_final; });
    if (state_->outputs.empty()) {
        return std::nullopt;
    }
    RequestOutput out = std::move(state_->outputs.front());
    state_->outputs.pop_front();
    state_->taken_final = out.finish.has_value();
    return out;
}

std::vector<int32_t> RequestHandle::prompt_ids() const {
    if (!state_) {
        return {};
    }
    const std::lock_guard lock(state_->mutex);
    return state_->prompt_ids;
}

int64_t RequestHandle::n_prompt_tokens() const {
    return state_ ? state_->n_prompt_tokens.load() : -1;
}

bool RequestHandle::finished() const {
    if (!state_) {
        return true;
    }
    const std::lock_guard lock(state_->mutex);
    return state_->delivered_final;
}

void RequestHandle::cancel() {
    if (const std::shared_ptr<ServiceImpl> service = service_.lock()) {
        {
            const std::lock_guard lock(service->mutex);
            if (!service->live.contains(id_)) {
                return;
            }
            service->cancel_locked(*state_);
        }
    }
}

EngineService::EngineService() : impl_(std::make_shared<ServiceImpl>()) {}

EngineService::~EngineService() {
    impl_->shutdown();
}

void EngineService::load(ServiceParams params) {
    std::vector<DeviceSpec> devices{params.device};
    devices.insert(devices.end(), params.more_devices.begin(), params.more_devices.end());
    for (const DeviceSpec& device : devices) {
        if (!device.make_backend) {
            fail("engine service: the device ", device.name.empty() ? std::string() : device.name + " ",
                 "has no backend factory");
        }
    }
    if (params.models.empty()) {
        fail("engine service: no model to load");
    }
    unload();
    const std::lock_guard lock(impl_->mutex);
    impl_->status = ServiceStatus{};
    impl_->status.state = ServiceState::Loading;
    impl_->status.progress.n_models = static_cast<int>(params.models.size());
    impl_->routing_block_size = std::max<int64_t>(params.engine.block_size, 1);
    impl_->router.emplace(devices.size(), RouterParams{impl_->routing_block_size});
    for (size_t i = 0; i < devices.size(); ++i) {
        auto replica = std::make_unique<detail::Replica>();
        replica->index = i;
        replica->device = devices[i];
        replica->device_stats.device = devices[i].name;
        impl_->replicas.push_back(std::move(replica));
    }
    // Every replica's thread shares the parameters.
    auto shared = std::make_shared<const ServiceParams>(std::move(params));
    for (const std::unique_ptr<detail::Replica>& replica : impl_->replicas) {
        replica->thread =
            std::thread([impl = impl_.get(), shared, r = replica.get()] { impl->run(*shared, *r); });
    }
}

void EngineService::cancel_load() {
    {
        const std::lock_guard lock(impl_->mutex);
        if (impl_->status.state != ServiceState::Loading) {
            return;
        }
    }
    impl_->shutdown();
}

void EngineService::unload() {
    impl_->shutdown();
}

ServiceState EngineService::wait_loaded(std::chrono::milliseconds timeout) {
    std::unique_lock lock(impl_->mutex);
    impl_->changed.wait_for(lock, timeout, [&] { return impl_->status.state != ServiceState::Loading; });
    return impl_->status.state;
}

ServiceStatus EngineService::status() const {
    const std::lock_guard lock(impl_->mutex);
    return impl_->status;
}

RequestHandle EngineService::submit(RequestSpec spec, SubmitOptions options) {
    auto state = std::make_shared<RequestState>();
    state->group = options.group;
    state->on_output = std::move(options.on_output);
    state->keep_prompt_ids = options.keep_prompt_ids;
    {
        const std::lock_guard lock(impl_->mutex);
        if (!impl_->accepting) {
            fail("engine service: no model is ready (", service_state_name(impl_->status.state), ")",
                 impl_->status.error.empty() ? "" : ": ", impl_->status.error);
        }
        if (options.group != 0) {
            const auto group = impl_->groups.find(options.group);
            if (group == impl_->groups.end()) {
                fail("engine service: unknown group ", options.group);
            }
            ++group->second.n_requests;
            if (group->second.cancelled) {
                state->cancel_requested = true;
            }
        }
        const auto named = std::find(impl_->engine_models.begin(), impl_->engine_models.end(), spec.model);
        if (!spec.model.empty() && named == impl_->engine_models.end()) {
            std::string served;
            for (const std::string& name : impl_->engine_models) {
                served += (served.empty() ? "" : ", ") + name;
            }
            fail("engine service: no model named \"", spec.model, "\" is loaded (serving ", served, ")");
        }
        state->engine = spec.model.empty() ? 0 : static_cast<size_t>(named - impl_->engine_models.begin());
        state->id = impl_->next_id++;
        impl_->live.emplace(state->id, state);
        impl_->order.begin(options.group, state->id);
        // Posted under the lock, so that nothing is posted once stopping began.
        impl_->prepare->post(
            [impl = impl_.get(), state, builder = impl_->builders.at(state->engine), spec = std::move(spec),
             priority = options.priority]() mutable {
                impl->prepare_request(state, *builder, spec, priority);
            },
            options.priority == Priority::Interactive);
    }
    return RequestHandle(state->id, state, impl_);
}

void EngineService::cancel(int64_t id) {
    const std::lock_guard lock(impl_->mutex);
    const auto it = impl_->live.find(id);
    if (it != impl_->live.end()) {
        impl_->cancel_locked(*it->second);
    }
}

int64_t EngineService::create_group() {
    const std::lock_guard lock(impl_->mutex);
    const int64_t id = impl_->next_group++;
    impl_->groups.emplace(id, GroupProgress{});
    return id;
}

void EngineService::cancel_group(int64_t group) {
    {
        const std::lock_guard lock(impl_->mutex);
        const auto it = impl_->groups.find(group);
        if (it == impl_->groups.end()) {
            fail("engine service: unknown group ", group);
        }
        it->second.cancelled = true;
        for (const auto& [id, state] : impl_->live) {
            if (state->group == group) {
                impl_->cancel_locked(*state);
            }
        }
    }
}

GroupProgress EngineService::group_progress(int64_t group) const {
    const std::lock_guard lock(impl_->mutex);
    const auto it = impl_->groups.find(group);
    if (it == impl_->groups.end()) {
        fail("engine service: unknown group ", group);
    }
    return it->second;
}

void EngineService::forget_group(int64_t group) {
    const std::lock_guard lock(impl_->mutex);
    impl_->groups.erase(group);
}

LayoutHandle EngineService::submit_layout(LayoutRequestSpec spec) {
    const std::lock_guard lock(impl_->mutex);
    if (!impl_->accepting) {
        fail("engine service: no model is ready (", service_state_name(impl_->status.state), ")");
    }
    // To the replica with the fewest layout requests waiting.
    detail::Replica* chosen = nullptr;
    size_t fewest = 0;
    for (const std::unique_ptr<detail::Replica>& replica : impl_->replicas) {
        const size_t n = replica->layouts.n_waiting();
        if (!replica->failed && (!chosen || n < fewest)) {
            chosen = replica.get();
            fewest = n;
        }
    }
    if (!chosen) {
        fail("engine service: every engine has stopped after a failure");
    }
    LayoutHandle handle = chosen->layouts.submit(std::move(spec));
    chosen->wake.notify_all();
    return handle;
}

std::optional<LayoutModelInfo> EngineService::layout_model() const {
    const std::lock_guard lock(impl_->mutex);
    for (const std::unique_ptr<detail::Replica>& replica : impl_->replicas) {
        if (replica->loaded) {
            return replica->layouts.info();
        }
    }
    return std::nullopt;
}

namespace {

// On a replica's engine thread: the requests its engines hold end, and they are built again with the
// configuration (the previous one back where that throws).
void reconfigure_replica(ServiceImpl& impl, detail::Served& served, const EngineConfig& config) {
    // The requests the engine holds end; the old cache goes before the new one is planned.
    for (auto& [id, state] : served.in_core) {
        impl.deliver(*state, final_output(id, FinishReason::Cancelled, ErrorKind::Stopped,
                                          "the engine was reconfigured"));
    }
    served.in_core.clear();
    EngineConfig previous;
    {
        // The configuration as given before the engines adapted it to their models.
        const std::lock_guard lock(impl.mutex);
        previous = impl.configured;
    }
    served.cores.clear();
    try {
        impl.build_engines(served, config);
    } catch (const std::exception& e) {
        served.cores.clear();
        try {
            impl.build_engines(served, previous);  // the configuration that worked, back
        } catch (const std::exception& again) {
            const std::lock_guard lock(impl.mutex);
            impl.status.state = ServiceState::Failed;
            impl.status.error_kind = classify_failure(again);
            impl.status.error = again.what();
            impl.status.can_continue = false;
            impl.accepting = false;
            impl.changed.notify_all();
        }
        throw;
    }
    int64_t free_bytes = -1;
    {
        const std::lock_guard lock(impl.mutex);
        free_bytes = impl.replicas.at(served.replica)->device_stats.vram_free_bytes;
    }
    impl.publish(served, free_bytes, 0);
}

// Runs the job on one replica's engine thread and waits for it.
void run_job(ServiceImpl& impl, size_t replica, detail::Job job) {
    std::future<void> done;
    {
        const std::lock_guard lock(impl.mutex);
        if (!impl.accepting) {
            fail("engine service: no model is ready (", service_state_name(impl.status.state), ")");
        }
        detail::Replica& r = *impl.replicas.at(replica);
        if (r.failed) {
            fail("engine service: device ", replica, " has stopped after a failure");
        }
        std::promise<void> promise;
        done = promise.get_future();
        r.jobs.emplace_back(std::move(job), std::move(promise));
        r.wake.notify_all();
    }
    done.get();
}

// The first replica whose engine has not failed.
size_t first_working_replica(const ServiceImpl& impl) {
    const std::lock_guard lock(impl.mutex);
    for (const std::unique_ptr<detail::Replica>& replica : impl.replicas) {
        if (!replica->failed) {
            return replica->index;
        }
    }
    return 0;
}

}  // namespace

void EngineService::run_on_engine_thread(const std::function<void(EngineContext&)>& fn) {
    run_job(*impl_, first_working_replica(*impl_), [&fn](detail::Served& served) {
        std::vector<EngineCore*> cores;
        for (const std::unique_ptr<EngineCore>& core : served.cores) {
            cores.push_back(core.get());
        }
        EngineContext context{served.backend, served.models, *cores.front(), cores};
        fn(context);
    });
}

void EngineService::reconfigure(const EngineConfig& config) {
    size_t n_replicas = 0;
    {
        const std::lock_guard lock(impl_->mutex);
        n_replicas = impl_->replicas.size();
    }
    // Each replica in turn; the previous configuration stays where one cannot take the new one.
    for (size_t r = 0; r < n_replicas; ++r) {
        {
            const std::lock_guard lock(impl_->mutex);
            if (impl_->replicas.at(r)->failed) {
                continue;
            }
        }
        run_job(*impl_, r, [impl = impl_.get(), &config](detail::Served& served) {
            reconfigure_replica(*impl, served, config);
        });
    }
    const std::lock_guard lock(impl_->mutex);
    impl_->configured = config;
}

std::vector<int64_t> EngineService::on_builder(
    const std::string& model, const char* what,
    std::function<std::vector<int64_t>(const RequestBuilder&)> job) const {
    auto counted = std::make_shared<std::promise<std::vector<int64_t>>>();
    std::future<std::vector<int64_t>> result = counted->get_future();
    {
        const std::lock_guard lock(impl_->mutex);
        if (!impl_->accepting) {
            fail("engine service: no model is ready to count ", what, " (",
                 service_state_name(impl_->status.state), ")");
        }
        const auto named = std::find(impl_->engine_models.begin(), impl_->engine_models.end(), model);
        if (!model.empty() && named == impl_->engine_models.end()) {
            fail("engine service: no model named \"", model, "\" is loaded to count ", what);
        }
        const size_t engine = model.empty() ? 0 : static_cast<size_t>(named - impl_->engine_models.begin());
        // Posted under the lock as submit() posts, so that unloading waits for it and the tokenizer stays.
        impl_->prepare->post(
            [builder = impl_->builders.at(engine), job = std::move(job), counted] {
                try {
                    counted->set_value(job(*builder));
                } catch (...) {
                    counted->set_exception(std::current_exception());
                }
            },
            true);
    }
    return result.get();
}

std::vector<int64_t> EngineService::count_tokens(const std::string& model,
                                                 std::vector<std::string> texts) const {
    return on_builder(model, "tokens", [texts = std::move(texts)](const RequestBuilder& builder) {
        return builder.count_tokens(texts);
    });
}

std::vector<int64_t> EngineService::count_media(const std::string& model, std::vector<MediaSize> media,
                                                std::optional<ImagePixelBounds> pixels) const {
    return on_builder(model, "image tokens",
                      [media = std::move(media), pixels](const RequestBuilder& builder) {
                          return builder.count_media(media, pixels);
                      });
}

ServiceStats EngineService::stats() const {
    const int64_t n_preparing = impl_->prepare->n_pending();
    const std::lock_guard lock(impl_->mutex);
    ServiceStats s = impl_->stats;
    s.n_preparing = n_preparing;
    s.tokens_per_second = impl_->rate.per_second(std::chrono::steady_clock::now());
    s.n_callback_errors = impl_->n_callback_errors.load();
    return s;
}

RequestLimits EngineService::limits(const std::string& model) const {
    const std::lock_guard lock(impl_->mutex);
    if (impl_->limits.empty()) {
        return {};
    }
    if (model.empty()) {
        return impl_->limits.front();
    }
    const auto it = std::find(impl_->engine_models.begin(), impl_->engine_models.end(), model);
    return it == impl_->engine_models.end()
               ? RequestLimits{}
               : impl_->limits.at(static_cast<size_t>(it - impl_->engine_models.begin()));
}

std::vector<ModelDescription> EngineService::models() const {
    const std::lock_guard lock(impl_->mutex);
    return impl_->descriptions;
}

}  // namespace folio
