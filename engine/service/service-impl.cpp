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
#include "engine/models/tensor-parallel-ranks.h"

namespace folio::detail {

void ServiceImpl::deliver(RequestState& state, const RequestOutput& out) {
    {
        const std::lock_guard state_lock(state.mutex);
        if (state.sent_final) {
            return;
        }
        state.sent_final = out.finish.has_value();
        if (out.finish || state.group != 0) {
            const std::lock_guard lock(mutex);
            if (out.finish) {
                live.erase(state.id);
                if (state.replica != kUnrouted && router) {
                    router->finished(state.replica, state.weight);
                }
                const bool failed = *out.finish == FinishReason::Error;
                const bool cancelled = *out.finish == FinishReason::Cancelled;
                (failed ? stats.n_failed : cancelled ? stats.n_cancelled : stats.n_finished) += 1;
            }
            const auto group = groups.find(state.group);
            if (group != groups.end()) {
                GroupProgress& g = group->second;
                g.n_tokens += static_cast<int64_t>(out.tokens.size());
                if (out.finish) {
                    (*out.finish == FinishReason::Error       ? g.n_failed
                     : *out.finish == FinishReason::Cancelled ? g.n_cancelled
                                                              : g.n_finished) += 1;
                }
            }
        }
        if (!state.on_output) {
            state.outputs.push_back(out);
            state.delivered_final = state.sent_final;
        }
    }
    if (!state.on_output) {
        state.ready.notify_all();
        return;
    }
    try {
        state.on_output(out);
    } catch (const std::exception& e) {
        ++n_callback_errors;
        log_info("engine service: the output callback of request " + std::to_string(state.id) +
                 " threw: " + e.what());
    } catch (...) {
        ++n_callback_errors;
        log_info("engine service: the output callback of request " + std::to_string(state.id) + " threw");
    }
    // A handle reads as finished only once the callback has seen the final output, so that whoever waits
    // on finished() finds what the callback recorded.
    if (out.finish) {
        const std::lock_guard state_lock(state.mutex);
        state.delivered_final = true;
    }
}

void ServiceImpl::prepare_request(const std::shared_ptr<RequestState>& state, const RequestBuilder& made,
                                  RequestSpec& spec, Priority priority) {
    std::optional<RequestOutput> ended;
    std::optional<Prepared> prepared;
    if (state->cancel_requested.load()) {
        ended = final_output(state->id, FinishReason::Cancelled, ErrorKind::None, {});
    } else {
        try {
            Request request = made.build(std::move(spec));
            request.priority = priority;
            state->n_prompt_tokens.store(static_cast<int64_t>(request.prompt.ids.size()));
            if (state->keep_prompt_ids) {
                const std::lock_guard lock(state->mutex);
                state->prompt_ids = request.prompt.ids;
            }
            prepared.emplace(state, std::move(request));
        } catch (const std::exception& e) {
            ended = final_output(state->id, FinishReason::Error, ErrorKind::InvalidRequest, e.what());
        }
    }
    std::vector<std::shared_ptr<RequestState>> refused;
    std::vector<BlockHash> hashes;
    if (prepared && replicas.size() > 1) {
        hashes = prompt_block_hashes(prepared->second, routing_block_size);
    }
    {
        const std::lock_guard lock(mutex);
        if (stop.load() && prepared) {
            prepared.reset();
            ended = stopped_output(state->id);
        }
        if (prepared) {
            const Request& request = prepared->second;
            const auto n_prompt = static_cast<int64_t>(request.prompt.ids.size());
            const std::optional<ReplicaRouter::Route> route =
                router ? router->route(hashes, n_prompt, n_prompt + request.max_tokens) : std::nullopt;
            if (route) {
                state->replica = route->replica;
                state->weight = n_prompt + request.max_tokens;
            } else {
                prepared.reset();
                ended = final_output(state->id, FinishReason::Error, ErrorKind::Failed,
                                     "every engine has stopped after a failure");
            }
        }
        // Ended or not, its turn in the group passes, which may hand on later ones prepared before it.
        std::vector<std::pair<int64_t, Prepared>> ready =
            order.end(state->group, state->id, std::move(prepared));
        for (auto& entry : ready) {
            Replica& replica = *replicas.at(entry.second.first->replica);
            if (replica.failed) {
                refused.push_back(entry.second.first);  // routed there before its engine failed
                continue;
            }
            replica.pending.push_back(std::move(entry.second));
            replica.wake.notify_all();
        }
    }
    if (ended) {
        deliver(*state, *ended);
    }
    for (const std::shared_ptr<RequestState>& other : refused) {
        deliver(*other, final_output(other->id, FinishReason::Error, ErrorKind::Failed,
                                     "the engine it was routed to stopped after a failure"));
    }
}

namespace {

// "device N (name): " before a message where the models are loaded more than once.
std::string device_prefix(const ServiceImpl& impl, const Replica& replica) {
    if (impl.replicas.size() < 2) {
        return {};
    }
    return "device " + std::to_string(replica.index) +
           (replica.device.name.empty() ? std::string() : " (" + replica.device.name + ")") + ": ";
}

}  // namespace

void ServiceImpl::run(const ServiceParams& params, Replica& replica) {
    const bool reports = replica.index == 0;  // the first replica's progress stands for the load's
    LoadContext context(
        [this, &params, reports](const LoadProgress& p) {
            if (!reports) {
                return;
            }
            {
                const std::lock_guard lock(mutex);
                status.progress = p;
                changed.notify_all();
            }
            if (params.on_progress) {
                params.on_progress(p);
            }
        },
        abandon_load);
    // Replicas on one device share it: each plans its part of the memory, and what other processes use is
    // measured once, by the first, before any of them allocated.
    // A tensor-parallel rank on the same device takes a share as a replica does.
    size_t n_sharing = 0;
    bool first_on_device = true;
    for (const std::unique_ptr<Replica>& other : replicas) {
        if (!replica.device.name.empty() && other->device.name == replica.device.name) {
            ++n_sharing;
            first_on_device = first_on_device && other->index >= replica.index;
        }
        for (const DeviceSpec& rank : other->device.more_ranks) {
            n_sharing += !replica.device.name.empty() && rank.name == replica.device.name ? 1 : 0;
        }
    }
    n_sharing = std::max<size_t>(n_sharing, 1);
    // Released in reverse order, on this thread, however loading ends.
    std::unique_ptr<Backend> backend;
    std::unique_ptr<TensorParallelRanks> ranks;
    std::vector<std::unique_ptr<LoadedModel>> models;
    std::vector<std::unique_ptr<EngineCore>> cores;
    std::optional<Served> served;
    try {
        context.check_cancelled();
        std::optional<int64_t> measured_other;
        if (!first_on_device) {
            std::unique_lock lock(mutex);
            changed.wait(lock, [&] {
                return abandon_load.load() || other_bytes_by_device.contains(replica.device.name);
            });
            context.check_cancelled();
            measured_other = other_bytes_by_device.at(replica.device.name);
        }
        backend = replica.device.make_backend();
        if (!backend) {
            fail("the device gave no backend");
        }
        // What other processes use now, before Folio's models: the plan leaves it.
        int64_t other_bytes = 0;
        if (measured_other) {
            other_bytes = *measured_other;
        } else if (replica.device.free_memory) {
            other_bytes = std::max<int64_t>(
                0, backend->total_memory() - replica.device.free_memory() - backend->memory_stats().in_use);
        }
        if (first_on_device && n_sharing > 1) {
            const std::lock_guard lock(mutex);
            other_bytes_by_device[replica.device.name] = other_bytes;
            changed.notify_all();
        }
        if (!replica.device.more_ranks.empty()) {
            TensorParallelParams tp;
            tp.n_ranks = static_cast<int>(replica.device.more_ranks.size()) + 1;
            tp.make_backend = [&replica](int r) {
                return replica.device.more_ranks.at(static_cast<size_t>(r - 1)).make_backend();
            };
            tp.make_group = replica.device.make_group;
            ranks = std::make_unique<TensorParallelRanks>(*backend, tp);
        }
        const ModelFactory& factory = params.factory ? *params.factory : ModelRegistry::builtin();
        std::vector<LoadedModel*> generative;
        int64_t reserved = 0;
        const int n_models = static_cast<int>(params.models.size());
        for (int i = 0; i < n_models; ++i) {
            context.set_model(i, n_models);
            const ModelSlot& slot = params.models[static_cast<size_t>(i)];
            models.push_back(ranks ? ranks->load(factory, slot, context)
                                   : factory.load(slot, *backend, context));
            if (models.back()->generative()) {
                generative.push_back(models.back().get());
            } else {
                reserved += models.back()->reserved_activation_bytes();
            }
        }
        if (generative.empty()) {
            fail("no generative model among the ", n_models, " model slots");
        }
        std::set<std::string> names;
        for (LoadedModel* m : generative) {
            if (!names.insert(m->description().name).second) {
                fail("two generative models are both named \"", m->description().name,
                     "\"; requests could not tell them apart");
            }
        }
        served.emplace(Served{*backend,
                              replica.index,
                              {},
                              std::move(generative),
                              cores,
                              other_bytes,
                              reserved,
                              1.0 / static_cast<double>(n_sharing),
                              {}});
        for (const std::unique_ptr<LoadedModel>& m : models) {
            served->models.push_back(m.get());
        }
        build_engines(*served, params.engine, [&](CorePhase phase) {
            context.set_phase(phase == CorePhase::MemoryPlan ? LoadPhase::MemoryPlan
                                                             : LoadPhase::GraphCapture);
        });
        context.set_phase(LoadPhase::Ready);
        publish(*served, replica.device.free_memory ? replica.device.free_memory() : -1, 0);
        {
            const std::lock_guard lock(mutex);
            if (replica.index == 0) {
                configured = params.engine;
                descriptions.clear();
                for (const std::unique_ptr<LoadedModel>& m : models) {
                    descriptions.push_back(m->description());
                }
                stats.vram_other_bytes = other_bytes;
            }
            for (const std::unique_ptr<LoadedModel>& m : models) {
                if (m->layout() != nullptr && !replica.layouts.info()) {
                    replica.layouts.attach(*m->layout(), m->description());  // the first layout slot serves
                }
            }
            replica.loaded = true;
            if (++n_loaded == replicas.size() && status.state == ServiceState::Loading) {
                status.state = ServiceState::Ready;
                accepting = true;
            }
            changed.notify_all();
        }
    } catch (const std::exception& e) {
        const bool cancelled = dynamic_cast<const LoadCancelled*>(&e) != nullptr;
        const std::string message = device_prefix(*this, replica) + e.what();
        cores.clear();
        models.clear();
        ranks.reset();
        backend.reset();
        const std::lock_guard lock(mutex);
        if (cancelled) {
            if (status.state != ServiceState::Failed) {
                status = ServiceStatus{};
            }
        } else if (status.state != ServiceState::Failed) {
            status.state = ServiceState::Failed;
            status.error_kind = classify_failure(e);
            status.error = message;
            abandon_load = true;  // the other replicas' loads stop
        }
        changed.notify_all();
        return;
    }
    {
        // Another replica's load failed: this one's models go.
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return status.state != ServiceState::Loading || stop.load(); });
    }
    if (status_ready()) {
        serve(*served, replica);
    }
    // Stopping: no request is being built once the queue is idle (none is posted after stop), then every
    // request left ends, and the engine, the models and the backend go, in that order. A replica that failed
    // alone ends only its own (fail_replica did).
    if (stop.load() || !status_ready()) {
        prepare->wait_idle();
        end_live();
    }
    cores.clear();
    models.clear();
    ranks.reset();
    backend.reset();
}

bool ServiceImpl::status_ready() const {
    const std::lock_guard lock(mutex);
    return status.state == ServiceState::Ready;
}

void ServiceImpl::build_engines(Served& served, const EngineConfig& base,
                                const std::function<void(CorePhase)>& on_phase) {
    const size_t n = served.generative.size();
    std::vector<EngineConfig> configs;
    for (LoadedModel* m : served.generative) {
        EngineConfig config = base;
        config.gpu_memory_utilization *= served.memory_share;
        config.other_process_bytes = served.other_bytes;
        config.reserved_bytes += served.reserved_bytes;
        if (config.max_image_tokens == 0) {
            config.max_image_tokens = m->max_image_tokens();
        }
        config.takes_images = m->description().takes(Modality::Image);
        if (n > 1) {
            // Models side by side: each takes the configured context up to its own.
            config.max_model_len = std::min(config.max_model_len, m->generative()->limits().max_context);
        }
        configs.push_back(std::move(config));
    }
    if (n > 1 && base.num_gpu_blocks_override == 0) {
        // One plan for every cache: the weights of all models and the largest engine's step (their steps run
        // one at a time) leave the rest to share equally, each engine taking no more than it can use.
        if (on_phase) {
            on_phase(CorePhase::MemoryPlan);
        }
        MemoryPlanParams mp;
        mp.total_bytes = served.backend.total_memory();
        mp.utilization = base.gpu_memory_utilization * served.memory_share;
        mp.other_bytes = served.other_bytes;
        mp.reserved_bytes = configs.front().reserved_bytes;
        std::vector<CacheDemand> demands;
        for (size_t i = 0; i < n; ++i) {
            GenerativeModel& model = *served.generative[i]->generative();
            const EngineConfig& c = configs[i];
            mp.activation_peak_bytes = std::max(mp.activation_peak_bytes, measure_activation_peak(model, c));
            const int64_t blocks_per_seq = (c.max_model_len + c.block_size - 1) / c.block_size;
            demands.push_back(
                {kv_block_bytes(kv_cache_params(model, c, 0)), c.max_num_seqs * blocks_per_seq, 1.0});
        }
        mp.weight_bytes = served.backend.memory_stats().in_use;  // every model loaded
        const std::vector<MemoryPlan> plans = plan_kv_caches(mp, demands);
        for (size_t i = 0; i < n; ++i) {
            configs[i].joint_plan = plans[i];
        }
    }
    std::vector<std::shared_ptr<const RequestBuilder>> made;
    std::vector<RequestLimits> made_limits;
    std::vector<std::string> names;
    for (size_t i = 0; i < n; ++i) {
        LoadedModel& m = *served.generative[i];
        const EngineConfig& config = configs[i];
        served.cores.push_back(
            std::make_unique<EngineCore>(*m.generative(), config, m.tokenizer(), on_phase));
        const RequestLimits request_limits{config.max_model_len, config.limit_mm_per_prompt,
                                           config.max_image_tokens, config.limit_video_per_prompt};
        made.push_back(std::make_shared<const RequestBuilder>(m.prompt_format(), request_limits));
        made_limits.push_back(request_limits);
        names.push_back(m.description().name);
    }
    if (served.replica != 0) {
        return;  // every replica's requests are built alike
    }
    const std::lock_guard lock(mutex);
    builders = std::move(made);
    limits = std::move(made_limits);
    engine_models = std::move(names);
}

void ServiceImpl::serve(Served& served, Replica& replica) {
    const DeviceSpec& device = replica.device;
    std::unordered_map<int64_t, std::shared_ptr<RequestState>>& in_core = served.in_core;
    auto last_probe = std::chrono::steady_clock::now();
    int64_t free_bytes = device.free_memory ? device.free_memory() : -1;
    publish(served, free_bytes, 0);
    for (;;) {
        std::vector<Prepared> taken;
        std::vector<int64_t> cancelled;
        std::vector<std::pair<Job, std::promise<void>>> work;
        {
            std::unique_lock lock(mutex);
            replica.wake.wait(lock, [&] {
                return stop.load() || !replica.pending.empty() || !replica.cancels.empty() ||
                       !replica.jobs.empty() || replica.layouts.has_work() || served.has_unfinished();
            });
            if (stop.load()) {
                return;
            }
            taken.swap(replica.pending);
            if (taken.size() > 1 && !served.has_unfinished()) {
                // An idle engine starts the first request alone, an interactive one before the rest: its
                // first token comes after a step of its own instead of after every other prompt's, and the
                // rest follow in the next step.
                const auto first =
                    std::min_element(taken.begin(), taken.end(), [](const auto& a, const auto& b) {
                        const bool a_chat = a.second.priority == Priority::Interactive;
                        const bool b_chat = b.second.priority == Priority::Interactive;
                        return a_chat != b_chat ? a_chat : a.first->id < b.first->id;
                    });
                std::iter_swap(taken.begin(), first);
                std::move(taken.begin() + 1, taken.end(), std::back_inserter(replica.pending));
                taken.resize(1);
            }
            cancelled.swap(replica.cancels);
            work.swap(replica.jobs);
        }
        for (auto& [fn, done] : work) {
            try {
                fn(served);
                done.set_value();
            } catch (...) {
                done.set_exception(std::current_exception());
            }
        }
        if (served.cores.empty()) {
            return;  // reconfigure could not build the engines: the service failed
        }
        if (!stop.load()) {
            replica.layouts.run_pass();  // one pass of waiting layout pages between two steps
        }
        // In the order they were submitted, as far as their preparation allows.
        std::sort(taken.begin(), taken.end(),
                  [](const auto& a, const auto& b) { return a.first->id < b.first->id; });
        for (auto& [state, request] : taken) {
            EngineCore& core = *served.cores.at(state->engine);
            try {
                core.add(std::move(request), state->id);
                in_core.emplace(state->id, state);
                if (state->cancel_requested.load()) {
                    core.cancel(state->id);
                }
            } catch (const std::exception& e) {
                const ErrorKind kind =
                    core.fatal_error() != ErrorKind::None ? core.fatal_error() : ErrorKind::InvalidRequest;
                deliver(*state, final_output(state->id, FinishReason::Error, kind, e.what()));
            }
        }
        for (const int64_t id : cancelled) {
            if (const auto it = in_core.find(id); it != in_core.end()) {
                served.cores.at(it->second->engine)->cancel(id);
            }
        }
        // Each engine with work takes a step in turn.
        std::vector<RequestOutput> outputs;
        try {
            for (const std::unique_ptr<EngineCore>& core : served.cores) {
                if (core->has_unfinished()) {
                    std::vector<RequestOutput> out = core->step();
                    std::move(out.begin(), out.end(), std::back_inserter(outputs));
                }
            }
        } catch (const std::exception& e) {
            // A failure outside any step's recovery: the engine cannot be trusted to go on.
            fail_replica(served, replica, ErrorKind::Failed, e.what());
            return;
        }
        // The snapshot first, so that a client seeing an output sees the statistics of its step.
        int64_t n_new = 0;
        for (const RequestOutput& out : outputs) {
            n_new += static_cast<int64_t>(out.tokens.size());
        }
        if (device.free_memory &&
            std::chrono::steady_clock::now() - last_probe > std::chrono::milliseconds(500)) {
            free_bytes = device.free_memory();
            last_probe = std::chrono::steady_clock::now();
        }
        publish(served, free_bytes, n_new);
        for (const RequestOutput& out : outputs) {
            const auto it = in_core.find(out.id);
            if (it == in_core.end()) {
                continue;
            }
            const std::shared_ptr<RequestState> state = it->second;
            if (out.finish) {
                in_core.erase(it);
            }
            if (out.finish == FinishReason::Error && out.error_kind != ErrorKind::InvalidRequest &&
                replicas.size() > 1) {
                RequestOutput named = out;  // which device failed it
                named.error = device_prefix(*this, replica) + out.error;
                deliver(*state, named);
                continue;
            }
            deliver(*state, out);
        }
        for (const std::unique_ptr<EngineCore>& core : served.cores) {
            if (core->fatal_error() != ErrorKind::None) {
                fail_replica(served, replica, core->fatal_error(),
                             std::string("the engine stopped after a failure: ") +
                                 error_kind_name(core->fatal_error()));
                return;
            }
        }
    }
}

void ServiceImpl::fail_replica(Served& served, Replica& replica, ErrorKind kind, const std::string& message) {
    const std::string what = device_prefix(*this, replica) + message;
    std::vector<std::shared_ptr<RequestState>> ended;
    for (auto& [id, state] : served.in_core) {
        ended.push_back(state);
    }
    served.in_core.clear();
    bool last = false;
    {
        const std::lock_guard lock(mutex);
        replica.failed = true;
        replica.device_stats.failed = true;
        if (router) {
            router->set_failed(replica.index);
        }
        for (Prepared& p : replica.pending) {
            ended.push_back(p.first);
        }
        replica.pending.clear();
        replica.cancels.clear();
        for (auto& job : replica.jobs) {
            job.second.set_exception(std::make_exception_ptr(Error("engine service: " + what)));
        }
        replica.jobs.clear();
        last = std::all_of(replicas.begin(), replicas.end(), [](const auto& r) { return r->failed; });
        if (last && status.state != ServiceState::Failed) {
            status.state = ServiceState::Failed;
            status.error_kind = kind;
            status.error = what;
            status.can_continue = false;
            accepting = false;
        }
        aggregate_stats_locked();
        changed.notify_all();
    }
    for (const std::shared_ptr<RequestState>& state : ended) {
        deliver(*state, final_output(state->id, FinishReason::Error, kind, what));
    }
    // Its layout requests waiting end too; the others' layout queues go on.
    replica.layouts.stop();
    log_info("engine service: " + what + (last ? "" : "; the other devices go on"));
}

void ServiceImpl::publish(const Served& served, int64_t free_bytes, int64_t n_new_tokens) {
    const int64_t used_bytes = served.backend.memory_stats().in_use;
    std::vector<EngineStats> engines;
    for (const std::unique_ptr<EngineCore>& core : served.cores) {
        engines.push_back(core->stats());
    }
    const std::lock_guard lock(mutex);
    Replica& replica = *replicas.at(served.replica);
    rate.add(std::chrono::steady_clock::now(), n_new_tokens);
    replica.engines.clear();
    DeviceStats& d = replica.device_stats;
    d.device = replica.device.name;
    d.failed = replica.failed;
    d.vram_used_bytes = used_bytes;
    d.vram_free_bytes = free_bytes;
    d.n_kv_blocks = d.n_kv_blocks_used = d.n_running = d.n_waiting = 0;
    for (size_t i = 0; i < served.cores.size(); ++i) {
        const EngineStats& engine = engines[i];
        const Scheduler& scheduler = served.cores[i]->scheduler();
        ModelEngineStats& e = replica.engines.emplace_back();
        e.model = i < engine_models.size() ? engine_models[i] : std::string();
        e.n_kv_blocks = engine.n_kv_blocks;
        e.n_kv_blocks_used = engine.n_kv_blocks - engine.n_free_blocks;
        e.memory_plan = served.cores[i]->memory_plan();
        for (const Priority p : {Priority::Interactive, Priority::Batch}) {
            e.n_running += scheduler.n_running(p);
            e.n_waiting += scheduler.n_waiting(p);
        }
        d.n_kv_blocks += e.n_kv_blocks;
        d.n_kv_blocks_used += e.n_kv_blocks_used;
        d.n_running += e.n_running;
        d.n_waiting += e.n_waiting;
    }
    replica.engine_stats = std::move(engines);
    // Running and waiting by priority, which ModelEngineStats does not keep, from this replica's schedulers.
    replica_by_priority(replica, served);
    aggregate_stats_locked();
}

void ServiceImpl::replica_by_priority(Replica& replica, const Served& served) {
    replica.n_running = {};
    replica.n_waiting = {};
    for (const std::unique_ptr<EngineCore>& core : served.cores) {
        for (const Priority p : {Priority::Interactive, Priority::Batch}) {
            const auto k = static_cast<size_t>(p);
            replica.n_running[k] += core->scheduler().n_running(p);
            replica.n_waiting[k] += core->scheduler().n_waiting(p);
        }
    }
}

void ServiceImpl::aggregate_stats_locked() {
    stats.n_kv_blocks = stats.n_kv_blocks_free = stats.n_kv_blocks_used = 0;
    stats.n_running = {};
    stats.n_waiting = {};
    stats.engines.clear();
    stats.devices.clear();
    stats.vram_used_bytes = 0;
    int64_t n_lookup = 0, n_hit = 0;
    for (const std::unique_ptr<Replica>& replica : replicas) {
        DeviceStats d = replica->device_stats;
        d.device = replica->device.name;
        d.failed = replica->failed;
        d.load_tokens = router ? router->load(replica->index) : 0;
        d.n_requests = router ? router->n_routed(replica->index) : 0;
        stats.devices.push_back(d);
        if (replica->failed) {
            continue;
        }
        stats.vram_used_bytes += d.vram_used_bytes;
        for (size_t i = 0; i < replica->engines.size(); ++i) {
            const ModelEngineStats& e = replica->engines[i];
            if (stats.engines.size() <= i) {
                stats.engines.push_back(e);
            } else {
                ModelEngineStats& sum = stats.engines[i];
                sum.n_kv_blocks += e.n_kv_blocks;
                sum.n_kv_blocks_used += e.n_kv_blocks_used;
                sum.n_running += e.n_running;
                sum.n_waiting += e.n_waiting;
            }
            stats.n_kv_blocks += e.n_kv_blocks;
            stats.n_kv_blocks_used += e.n_kv_blocks_used;
        }
        for (const EngineStats& engine : replica->engine_stats) {
            stats.n_kv_blocks_free += engine.n_free_blocks;
            n_lookup += engine.n_prefix_lookup_blocks;
            n_hit += engine.n_prefix_hit_blocks;
        }
        for (size_t k = 0; k < kNumPriorities; ++k) {
            stats.n_running[k] += replica->n_running[k];
            stats.n_waiting[k] += replica->n_waiting[k];
        }
    }
    const Replica* first = replicas.empty() ? nullptr : replicas.front().get();
    stats.vram_free_bytes = first ? first->device_stats.vram_free_bytes : -1;
    stats.prefix_cache_hit_rate =
        n_lookup > 0 ? static_cast<double>(n_hit) / static_cast<double>(n_lookup) : 0.0;
    if (first && !first->engines.empty()) {
        stats.memory_plan = first->engines.front().memory_plan;
        stats.engine = first->engine_stats.front();
    }
}

void ServiceImpl::end_live() {
    std::vector<std::shared_ptr<RequestState>> left;
    {
        const std::lock_guard lock(mutex);
        for (const auto& entry : live) {
            left.push_back(entry.second);
        }
        order.clear();
        for (const std::unique_ptr<Replica>& replica : replicas) {
            replica->pending.clear();
            replica->cancels.clear();
            for (auto& job : replica->jobs) {
                job.second.set_exception(
                    std::make_exception_ptr(Error("engine service: stopped before the work ran")));
            }
            replica->jobs.clear();
            replica->layouts.stop();
        }
    }
    for (const std::shared_ptr<RequestState>& state : left) {
        deliver(*state, stopped_output(state->id));
    }
}

void ServiceImpl::shutdown() {
    {
        const std::lock_guard lock(mutex);
        accepting = false;
        stop = true;
        abandon_load = true;
        for (const std::unique_ptr<Replica>& replica : replicas) {
            replica->wake.notify_all();
        }
        changed.notify_all();
    }
    for (const std::unique_ptr<Replica>& replica : replicas) {
        if (replica->thread.joinable()) {
            replica->thread.join();
        }
    }
    prepare->wait_idle();
    end_live();
    const std::lock_guard lock(mutex);
    status = ServiceStatus{};
    builders.clear();
    limits.clear();
    engine_models.clear();
    descriptions.clear();
    stats = ServiceStats{};
    replicas.clear();
    router.reset();
    other_bytes_by_device.clear();
    n_loaded = 0;
    stop = false;
    abandon_load = false;
    changed.notify_all();
}

void ServiceImpl::cancel_locked(RequestState& state) {
    state.cancel_requested = true;
    if (state.replica != kUnrouted && state.replica < replicas.size()) {
        Replica& replica = *replicas[state.replica];
        replica.cancels.push_back(state.id);
        replica.wake.notify_all();
    }
}

}  // namespace folio::detail
