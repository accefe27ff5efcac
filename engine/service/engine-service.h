// The one engine service every front end uses (the desktop app, the document pipeline, folio-cli, a local
// server): a long-lived object that owns the device, the models and the engine, used by several clients at
// once from their own threads.
//
// One engine thread owns the backend: it loads the models (in the background, with progress, cancellable),
// plans their memory together, builds the EngineCore and then runs its steps while there is work. Requests
// are built (prompt, images preprocessed and hashed) on preparation threads, then handed to the engine
// thread. Each request ends with a reason, an error ending that request alone; its outputs reach its handle's
// queue or a callback. A layout model's pages are requests too, queued and run on the engine thread between
// steps (layout-queue.h). Handles stay valid after the service stops or is destroyed.
//
// With several devices (data parallelism) each holds a copy of the models with an engine thread of its own,
// and each built request is routed to one of them (replica-router.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/models/model-loading.h"
#include "engine/runtime/engine-core.h"
#include "engine/service/layout-queue.h"
#include "engine/service/request-builder.h"
#include "engine/service/service-stats.h"

namespace folio {

class CollectiveGroup;

// Where the models run.
struct DeviceSpec {
    // "cuda:0", "cpu": replicas on devices of one name share its memory, each planning its part.
    std::string name;
    // Called on the engine thread, which then owns the backend.
    std::function<std::unique_ptr<Backend>()> make_backend;
    // Bytes free on the device for every process (cudaMemGetInfo); empty where unknown (the CPU). The memory
    // plan leaves what other processes use when loading starts.
    std::function<int64_t()> free_memory;
    // Tensor parallelism: the devices of ranks 1, 2, ... of this engine, this device being rank 0's. Each
    // generative model is split over the ranks, each rank on a thread of its own (TensorParallelRanks);
    // layout models stay on rank 0. The memory plan is rank 0's, the ranks holding alike parts.
    std::vector<DeviceSpec> more_ranks;
    // The collectives of each model split over n ranks; none: the ranks sum on the host (ThreadGroup).
    std::function<std::shared_ptr<CollectiveGroup>(int n_ranks)> make_group;
};

struct ServiceParams {
    DeviceSpec device;
    // Data parallelism: each further device (another card, or the same one again) holds a copy of every model
    // with engines and an engine thread of its own, and requests are routed among them (replica-router.h).
    std::vector<DeviceSpec> more_devices;
    // At least one generative model (recognition or chat), each served by an engine of its own with the cache
    // memory planned together; layout models beside them. A request names its model, else goes to the first
    // generative one.
    std::vector<ModelSlot> models;
    EngineConfig engine;
    const ModelFactory* factory = nullptr;  // the built-in ModelRegistry when null; tests give fakes
    // Called on the engine thread with every change of the loading progress, after status() shows it (a
    // front end's progress display); it must not load, unload or cancel the load, and what it throws fails
    // the load.
    std::function<void(const LoadProgress&)> on_progress;
};

enum class ServiceState { Empty, Loading, Ready, Failed };
const char* service_state_name(ServiceState state);

struct ServiceStatus {
    ServiceState state = ServiceState::Empty;
    LoadProgress progress;
    ErrorKind error_kind = ErrorKind::None;  // Failed: why
    std::string error;                       // Failed: the file and the problem, or what the device did
    bool can_continue = true;                // false once the device is lost: unload and load again
};

struct GroupProgress {
    int64_t n_requests = 0;
    int64_t n_finished = 0;  // stop or length
    int64_t n_cancelled = 0;
    int64_t n_failed = 0;
    int64_t n_tokens = 0;
    bool cancelled = false;  // cancel_group was called: requests submitted to it later end at once

    int64_t n_done() const { return n_finished + n_cancelled + n_failed; }
    bool done() const { return n_done() == n_requests; }
};

using OutputCallback = std::function<void(const RequestOutput&)>;

struct SubmitOptions {
    Priority priority = Priority::Batch;
    // From create_group(); 0: none. A group's requests reach the engine in the order they were submitted.
    int64_t group = 0;
    // Called with every output, on the engine thread (or on a preparation thread for a request refused as it
    // is built); what it throws is caught and counted, and the request goes on. Without it, outputs queue in
    // the handle.
    OutputCallback on_output;
    // The built prompt's token ids kept for RequestHandle::prompt_ids (folio-cli generate --ids).
    bool keep_prompt_ids = false;
};

// What work on the engine thread may use, between steps.
struct EngineContext {
    Backend& backend;
    std::vector<LoadedModel*> models;  // in slot order
    EngineCore& core;                  // the first generative model's engine
    std::vector<EngineCore*> cores;    // every generative model's, in slot order
};

namespace detail {
struct RequestState;
struct ServiceImpl;
}  // namespace detail

class RequestHandle {
public:
    RequestHandle() = default;
    int64_t id() const { return id_; }
    // The next output if one is queued, else nothing at once.
    std::optional<RequestOutput> poll();
    // The next output, waiting up to timeout for it.
    std::optional<RequestOutput> wait_for(std::chrono::milliseconds timeout);
    // The next output, waiting for it; nothing once the final output was taken, or when the request delivers
    // to a callback.
    std::optional<RequestOutput> next();
    // The prompt's tokens once the request is built (before its first output), -1 until then or when it was
    // refused.
    int64_t n_prompt_tokens() const;
    // The prompt's token ids, images and videos expanded, once the request is built, where it was submitted
    // with keep_prompt_ids; empty otherwise.
    std::vector<int32_t> prompt_ids() const;
    // Whether the final output was delivered: queued, or given to the callback and the callback returned.
    bool finished() const;
    // Ends the request: its final output says FinishReason::Cancelled unless it had already ended. Does
    // nothing once the service is gone.
    void cancel();

private:
    friend class EngineService;
    RequestHandle(int64_t id, std::shared_ptr<detail::RequestState> state,
                  std::weak_ptr<detail::ServiceImpl> service)
        : id_(id), state_(std::move(state)), service_(std::move(service)) {}

    int64_t id_ = -1;
    std::shared_ptr<detail::RequestState> state_;
    std::weak_ptr<detail::ServiceImpl> service_;
};

class EngineService {
public:
    EngineService();
    // Stops: requests still running end with FinishReason::Cancelled and ErrorKind::Stopped.
    ~EngineService();
    EngineService(const EngineService&) = delete;
    EngineService& operator=(const EngineService&) = delete;

    // Starts loading in the background, after unloading what is loaded. Throws folio::Error for parameters
    // that can never load (no generative slot, no backend factory).
    void load(ServiceParams params);
    // Stops a load under way; what it made is released and the state goes back to Empty.
    void cancel_load();
    // Ends every request (ErrorKind::Stopped), frees the models, the engine and the backend.
    void unload();
    // Waits until the service is not Loading, up to timeout; the state then.
    ServiceState wait_loaded(std::chrono::milliseconds timeout);
    ServiceStatus status() const;

    // Takes a request and returns its handle at once; it is built off the engine thread and ends with
    // ErrorKind::InvalidRequest where it does not fit. Throws folio::Error unless the service is Ready.
    RequestHandle submit(RequestSpec spec, SubmitOptions options = {});
    void cancel(int64_t id);

    int64_t create_group();
    void cancel_group(int64_t group);
    GroupProgress group_progress(int64_t group) const;
    void forget_group(int64_t group);

    // Takes pages for the layout model (layout-queue.h) and returns their handle at once; they run on the
    // engine thread between two steps, with other requests' pages up to the model's batch. Throws
    // folio::Error unless the service is Ready with a layout model.
    LayoutHandle submit_layout(LayoutRequestSpec spec);
    // The loaded layout model's page preparation, rules and batch; nothing without one.
    std::optional<LayoutModelInfo> layout_model() const;

    // Runs fn on the engine thread between two steps and waits for it; what fn throws is thrown here. For
    // work that needs the device and the models themselves (benchmarks, device statistics). Throws
    // folio::Error unless the service is Ready, or when it stops before fn ran.
    void run_on_engine_thread(const std::function<void(EngineContext&)>& fn);

    // Rebuilds the engine with other options (a settings change that keeps the models: max_num_seqs,
    // gpu_memory_utilization, ...): requests it holds end with ErrorKind::Stopped, the cache is planned anew.
    // Throws what building the engine throws, the previous configuration then back in place.
    void reconfigure(const EngineConfig& config);

    ServiceStats stats() const;
    // The limits requests to the named model (empty: the first generative one) are checked against; zeros
    // unless Ready or where no model has the name.
    RequestLimits limits(const std::string& model = {}) const;
    // The tokens each text takes in the named model's tokenizer (empty: the first generative one), no special
    // tokens added, counted on a preparation thread ahead of queued requests while the caller waits. Throws
    // folio::Error unless the service is Ready, for a model it does not serve and for one without a
    // tokenizer.
    std::vector<int64_t> count_tokens(const std::string& model, std::vector<std::string> texts) const;
    // The tokens each image or video of these sizes takes in the named model's prompts, within the pixel
    // bounds (RequestBuilder::count_media), counted as count_tokens counts. Throws folio::Error as it does,
    // and for a size a request would be refused for.
    std::vector<int64_t> count_media(const std::string& model, std::vector<MediaSize> media,
                                     std::optional<ImagePixelBounds> pixels = std::nullopt) const;
    // What the loaded models offer, in slot order; empty unless Ready.
    std::vector<ModelDescription> models() const;

private:
    // Runs job on a preparation thread with the named model's request builder while the caller waits.
    std::vector<int64_t> on_builder(const std::string& model, const char* what,
                                    std::function<std::vector<int64_t>(const RequestBuilder&)> job) const;

    std::shared_ptr<detail::ServiceImpl> impl_;
};

}  // namespace folio
