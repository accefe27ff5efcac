// NCCL opened at run time: the version scheme, a library that is missing, one that is not NCCL, one too old,
// and calls through a stand-in library (fake-nccl) on machines without NCCL; the system's NCCL where one is
// found (FOLIO_NCCL_LIBRARY, or libnccl.so.2 on the loader's path). The tensor-parallel group over NCCL
// through the stand-in's one rank on host memory.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/nccl-group.h"
#include "engine/backend/nccl-library.h"
#include "engine/common/error.h"

using namespace folio;

namespace {

std::string error_of(const std::string& path) {
    try {
        NcclLibrary library(path);
    } catch (const Error& e) {
        return e.what();
    }
    return "(opened)";
}

TEST(NcclLibrary, VersionCodesReadAsNcclWritesThem) {
    EXPECT_EQ(nccl_version_text(22105), "2.21.5");
    EXPECT_EQ(nccl_version_text(21000), "2.10.0");
    EXPECT_EQ(nccl_version_text(2708), "2.7.8");
}

TEST(NcclLibrary, AMissingLibraryIsNamedWithTheWayToGetOne) {
    const std::string message = error_of("/nonexistent/libnccl.so.2");
    EXPECT_NE(message.find("NCCL library /nonexistent/libnccl.so.2 cannot be opened"), std::string::npos)
        << message;
    EXPECT_NE(message.find("FOLIO_NCCL_LIBRARY"), std::string::npos) << message;
}

TEST(NcclLibrary, ALibraryThatIsNotNcclIsRefused) {
    const std::string message = error_of("libz.so.1");
    EXPECT_NE(message.find("libz.so.1: no function ncclGetVersion"), std::string::npos) << message;
}

TEST(NcclLibrary, CallsGoThroughAndFailuresCarryNcclsMessage) {
    const NcclLibrary nccl(FOLIO_FAKE_NCCL);
    EXPECT_EQ(nccl.version(), "2.23.4");
    const nccl::UniqueId id = nccl.unique_id();
    EXPECT_EQ(id.internal[0], 7);
    nccl::Comm comm = nccl.init_rank(1, id, 0);
    ASSERT_NE(comm, nullptr);
    const std::vector<float> send = {1.5f, -2.0f, 3.25f};
    std::vector<float> recv(3, 0.0f);
    nccl.group_start();
    nccl.all_reduce_sum(send.data(), recv.data(), send.size(), nccl::DataType::Float32, comm, nullptr);
    nccl.group_end();
    EXPECT_EQ(recv, send);
    nccl.destroy(comm);
    try {
        nccl.init_rank(2, id, 1);
        FAIL() << "two ranks of the stand-in";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("NCCL ncclCommInitRank failed: invalid usage (error 5, "),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(nccl.init_rank(2, id, 2), Error) << "a rank outside the communicator";
}

// A group over the stand-in: a rank joins with its backend's stream, sums float32 and int32 in place on that
// stream, refuses other types, and once the group is aborted every later sum and join says why.
TEST(NcclGroup, RanksSumOnTheirStreamsUntilTheGroupIsAborted) {
    const NcclLibrary nccl(FOLIO_FAKE_NCCL);
    const auto backend = make_cpu_backend(1);
    int n_streams_asked = 0;
    const auto group = NcclGroup::create(nccl, 1, [&](Backend& b) -> void* {
        EXPECT_EQ(&b, backend.get());
        ++n_streams_asked;
        return nullptr;  // the stand-in's queue: the host
    });
    ASSERT_EQ(group->n_ranks(), 1);
    std::unique_ptr<Collectives> rank = group->join(0, *backend);
    EXPECT_EQ(rank->rank(), 0);
    EXPECT_EQ(rank->n_ranks(), 1);
    EXPECT_THROW((void)group->join(0, *backend), Error) << "a rank joins once";
    EXPECT_THROW((void)group->join(1, *backend), Error) << "a rank outside the group";

    const std::vector<float> values = {1.5f, -2.0f, 3.25f, 8.0f};
    Tensor whole = backend->upload(values, {4});
    Tensor tail = whole.view(1, {3});
    rank->all_reduce_sum(*backend, tail);
    EXPECT_EQ(backend->download(whole), values);
    EXPECT_GE(n_streams_asked, 2);
    // int32 values (a step's positions and cache rows) go as NCCL's int32, four bytes each.
    Tensor ids = backend->upload_i32(std::vector<int32_t>{1, 2, 16'777'217}, {3});
    rank->all_reduce_sum(*backend, ids);
    EXPECT_EQ(backend->download_i32(ids), (std::vector<int32_t>{1, 2, 16'777'217}));
    Tensor halves = backend->upload(values, {4});
    halves.dtype = ScalarType::BF16;
    try {
        rank->all_reduce_sum(*backend, halves);
        FAIL() << "a bfloat16 sum";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("not float32 or int32"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(group->can_record()) << "NCCL's sums are kernels on the rank's stream";

    group->abort("rank 1 lost its device");
    try {
        rank->all_reduce_sum(*backend, whole);
        FAIL() << "a sum on an aborted group";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "tensor-parallel rank 0: rank 1 lost its device");
    }
    EXPECT_THROW((void)NcclGroup::create(nccl, 0, [](Backend&) -> void* { return nullptr; }), Error);
    // Two ranks of the stand-in: NCCL's own refusal, named.
    const auto pair = NcclGroup::create(nccl, 2, [](Backend&) -> void* { return nullptr; });
    try {
        (void)pair->join(1, *backend);
        FAIL() << "two ranks of the stand-in";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("ncclCommInitRank failed: invalid usage"), std::string::npos)
            << e.what();
    }
}

TEST(NcclLibrary, AnOldNcclIsRefusedWithItsVersion) {
    ::setenv("FAKE_NCCL_VERSION", "20903", 1);
    const std::string message = error_of(FOLIO_FAKE_NCCL);
    ::unsetenv("FAKE_NCCL_VERSION");
    EXPECT_NE(message.find("is version 2.9.3; Folio needs 2.10.0 or later"), std::string::npos) << message;
}

TEST(NcclLibrary, TheSystemsNcclWhereOneIsFound) {
    const std::string path = NcclLibrary::system_path();
    try {
        const NcclLibrary& nccl = NcclLibrary::system();
        EXPECT_GE(nccl.version_code(), NcclLibrary::kMinVersionCode);
        std::printf("NCCL %s from %s\n", nccl.version().c_str(), path.c_str());
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
        GTEST_SKIP() << "skipped: no NCCL here (" << e.what() << ")";
    }
}

}  // namespace
