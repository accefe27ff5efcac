// The engine service with its models on two devices (data parallelism), driven by fake models on CPU
// backends: requests spread by load, a conversation kept with the replica that holds its prefix, a replica
// that fails while the other goes on, a load that fails on one device, and replicas sharing one device's
// memory. Built into test-engine-service (and its ThreadSanitizer build).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <string>
#include <vector>

#include "engine-service-fixture.h"

using namespace folio;
using namespace folio::testing;
using namespace std::chrono_literals;

namespace {

// Two replicas of the models (data parallelism), each on a CPU backend of its own; backends[i] is replica i's
// once it is made.
ServiceParams two_replicas(const FakeFactory& factory, std::array<std::atomic<const Backend*>, 2>& backends,
                           const std::string& second_name = "cpu:1") {
    ServiceParams p = params_for(factory);
    p.device.name = "cpu:0";
    p.device.make_backend = [&backends] {
        std::unique_ptr<Backend> b = make_cpu_backend(1);
        backends[0] = b.get();
        return b;
    };
    DeviceSpec second;
    second.name = second_name;
    second.make_backend = [&backends] {
        std::unique_ptr<Backend> b = make_cpu_backend(1);
        backends[1] = b.get();
        return b;
    };
    p.more_devices.push_back(second);
    return p;
}

// The replica a loaded fake model belongs to.
size_t replica_of(const FakeModel& m, const std::array<std::atomic<const Backend*>, 2>& backends) {
    return &m.backend() == backends[0].load() ? 0 : 1;
}

}  // namespace

// Requests spread over the replicas by load; a conversation's next turn goes back to the replica that holds
// its prefix in its cache, though the other has less work.
TEST_F(EngineServiceTest, DataParallelRequestsSpreadAndConversationsStayTogether) {
    FakeFactory factory;
    factory.configure = [](FakeModel& m) { m.step_delay = 1ms; };
    std::array<std::atomic<const Backend*>, 2> backends{};
    EngineService service;
    service.load(two_replicas(factory, backends));
    ASSERT_EQ(service.wait_loaded(10s), ServiceState::Ready) << service.status().error;
    EXPECT_EQ(g_live_models.load(), 2) << "a copy of the model a replica";
    ASSERT_EQ(service.stats().devices.size(), 2u);
    EXPECT_EQ(service.stats().devices[1].device, "cpu:1");

    std::vector<RequestHandle> many;
    for (int32_t i = 0; i < 8; ++i) {
        many.push_back(service.submit(spec(text_request({static_cast<int32_t>(10 + i)}, 40))));
    }
    for (int32_t i = 0; i < 8; ++i) {
        const Collected c = collect(many[static_cast<size_t>(i)]);
        EXPECT_EQ(c.tokens, chain(10 + i, 40)) << "request " << i;
    }
    std::array<size_t, 2> n_fed{};
    for (const FakeLoaded* m : factory.loaded) {
        n_fed[replica_of(m->model, backends)] += m->model.fed.size();
    }
    EXPECT_GT(n_fed[0], 80u) << "both replicas ran requests";
    EXPECT_GT(n_fed[1], 80u) << "both replicas ran requests";

    // A long request keeps replica 0 busy; the conversation's first turn goes to replica 1.
    RequestHandle busy0 = service.submit(spec(text_request({1}, 100)));
    ASSERT_TRUE(busy0.next());
    const std::vector<int32_t> turn1 = chain(20, 16);
    RequestHandle first = service.submit(spec(text_request(turn1, 4)));
    const Collected answer = collect(first);
    ASSERT_EQ(answer.last->finish, FinishReason::Length);
    // Then more work lands on replica 1 than replica 0 holds, and the next turn still goes there.
    RequestHandle busy1 = service.submit(spec(text_request({2}, 230)));
    ASSERT_TRUE(busy1.next());
    std::vector<int32_t> turn2 = turn1;
    turn2.insert(turn2.end(), answer.tokens.begin(), answer.tokens.end());
    turn2.insert(turn2.end(), {30, 31, 32});
    RequestHandle second = service.submit(spec(text_request(turn2, 3)));
    const std::optional<RequestOutput> out = second.next();
    ASSERT_TRUE(out);
    EXPECT_GE(out->n_cached_tokens, 16) << "the second turn ran where the first left its prefix";
    const ServiceStats s = service.stats();
    EXPECT_GT(s.devices[1].load_tokens, s.devices[0].load_tokens);
    busy0.cancel();
    busy1.cancel();
    EXPECT_EQ(collect(second).last->finish, FinishReason::Length);
}

// A replica whose device is lost ends its own requests with the error; the other replica's requests go on,
// and later ones (a conversation that was there too) run on the replica left.
TEST_F(EngineServiceTest, AFailedReplicaEndsItsRequestsWhileTheOthersGoOn) {
    std::array<std::atomic<const Backend*>, 2> backends{};
    FakeFactory factory;
    factory.configure = [&backends](FakeModel& m) {
        m.step_delay = 200us;
        if (&m.backend() == backends[1].load()) {
            m.fail_on_token = 60;
            m.fail_message = "cudaMemcpyAsync failed: unspecified launch failure";
        }
    };
    EngineService service;
    service.load(two_replicas(factory, backends));
    ASSERT_EQ(service.wait_loaded(10s), ServiceState::Ready) << service.status().error;
    RequestHandle on0 = service.submit(spec(text_request({1}, 50)));
    ASSERT_TRUE(on0.next());
    RequestHandle on1 = service.submit(spec(text_request({57}, 6)));
    const Collected lost = collect(on1);
    EXPECT_EQ(lost.last->finish, FinishReason::Error);
    EXPECT_EQ(lost.last->error_kind, ErrorKind::DeviceLost);
    EXPECT_NE(lost.last->error.find("device 1 (cpu:1)"), std::string::npos) << lost.last->error;
    EXPECT_EQ(collect(on0).last->finish, FinishReason::Length) << "the other replica's request went on";
    EXPECT_EQ(service.status().state, ServiceState::Ready);
    EXPECT_TRUE(service.status().can_continue);
    const ServiceStats s = service.stats();
    EXPECT_TRUE(s.devices[1].failed);
    EXPECT_FALSE(s.devices[0].failed);
    std::vector<RequestHandle> after;
    for (int32_t i = 0; i < 6; ++i) {
        after.push_back(service.submit(spec(text_request({static_cast<int32_t>(55 + i)}, 8))));
    }
    for (int32_t i = 0; i < 6; ++i) {
        EXPECT_EQ(collect(after[static_cast<size_t>(i)]).tokens, chain(55 + i, 8)) << "request " << i;
    }
    EXPECT_EQ(service.stats().n_failed, 1);
    int64_t n_running_work = 0;
    service.run_on_engine_thread([&](EngineContext& c) { n_running_work = c.core.config().max_num_seqs; });
    EXPECT_EQ(n_running_work, 8) << "work runs on the replica left";
}

TEST_F(EngineServiceTest, ALoadThatFailsOnOneDeviceNamesItAndKeepsNothing) {
    FakeFactory factory;
    std::array<std::atomic<const Backend*>, 2> backends{};
    ServiceParams p = two_replicas(factory, backends);
    p.more_devices[0].make_backend = [] { return std::unique_ptr<Backend>(); };
    EngineService service;
    service.load(p);
    EXPECT_EQ(service.wait_loaded(10s), ServiceState::Failed);
    EXPECT_NE(service.status().error.find("device 1 (cpu:1): the device gave no backend"), std::string::npos)
        << service.status().error;
    EXPECT_THROW(service.submit(spec(text_request({1}, 2))), Error);
    service.unload();
    EXPECT_EQ(g_live_models.load(), 0);
}

// Replicas on one device plan their caches in a part of its memory each.
TEST_F(EngineServiceTest, ReplicasOnOneDeviceShareItsMemory) {
    FakeFactory factory;
    EngineConfig planned = service_config();
    planned.num_gpu_blocks_override = 0;
    planned.max_num_seqs = 256;
    planned.max_model_len = 4096;
    const auto free = [] { return int64_t{4} << 20; };
    ServiceParams alone = params_for(factory, planned);
    alone.device.name = "cpu";
    alone.device.free_memory = free;
    EngineService service;
    service.load(alone);
    ASSERT_EQ(service.wait_loaded(10s), ServiceState::Ready) << service.status().error;
    const int64_t n_alone = service.stats().n_kv_blocks;
    ASSERT_LT(n_alone, 256 * 4096 / 4) << "the memory, not the sequences, bounds the cache";

    std::array<std::atomic<const Backend*>, 2> backends{};
    ServiceParams shared = two_replicas(factory, backends, "cpu");
    shared.engine = planned;
    shared.device.name = "cpu";
    shared.device.free_memory = free;
    shared.more_devices[0].free_memory = free;
    service.load(shared);
    ASSERT_EQ(service.wait_loaded(10s), ServiceState::Ready) << service.status().error;
    const ServiceStats s = service.stats();
    ASSERT_EQ(s.devices.size(), 2u);
    for (const DeviceStats& d : s.devices) {
        EXPECT_GT(d.n_kv_blocks, n_alone / 4);
        EXPECT_LT(d.n_kv_blocks, n_alone * 6 / 10);
    }
    RequestHandle h = service.submit(spec(text_request({3}, 5)));
    EXPECT_EQ(collect(h).tokens, chain(3, 5));
}
