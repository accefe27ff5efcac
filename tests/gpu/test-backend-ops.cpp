// The CUDA backend's tensors, memory, transfers and recorded work against the CPU reference backend;
// skipped where no CUDA device is present. The operations have files of their own: test-backend-ops-linear,
// -attention and -rows.
#include "backend-ops-fixture.h"

namespace folio::backend_ops_test {
namespace {

TEST_F(BackendOpsTest, AllocUploadDownloadCopy) {
    const Tensor zeros = gpu_->alloc({3, 5});
    EXPECT_EQ(gpu_->download(zeros), std::vector<float>(15, 0.0f));
    for (const int64_t n : {1, 7, 1000, 130 * 96}) {
        const auto values = random_values(n, seed_++);
        Tensor t = gpu_->upload(values, {n});
        EXPECT_EQ(gpu_->download(t), values);
        const Tensor c = gpu_->copy(t);
        gpu_->gelu_erf(t);
        EXPECT_EQ(gpu_->download(c), values) << "a copy is independent of its source";
        EXPECT_EQ(c.shape, t.shape);
    }
    const Tensor empty = gpu_->alloc({0, 4});
    EXPECT_TRUE(gpu_->download(empty).empty());
    EXPECT_THROW(gpu_->alloc({2, -1}), Error);
    EXPECT_THROW(gpu_->upload(std::vector<float>(5), {2, 3}), Error);
    EXPECT_THROW(gpu_->download(cpu_->alloc({4})), Error) << "a CPU tensor is refused";
    EXPECT_THROW(gpu_->download(gpu_->upload_i32(std::vector<int32_t>{1, 2}, {2})), Error)
        << "int32 elements";
}

// Key/value caches of every element type: zeros from alloc_kv, rounded values from upload_kv (exactly what
// the host's rounding gives), copies of their own type; other types are refused. 8-bit levels keep each row's
// largest value exactly and every other within half a level.
TEST_F(BackendOpsTest, KeyValueCacheTensors) {
    EXPECT_EQ(gpu_->kv_dtype(AttentionPrecision::Bf16), ScalarType::BF16);
    EXPECT_EQ(gpu_->kv_dtype(AttentionPrecision::F32), ScalarType::F32);
    for (const ScalarType dtype : kCacheTypes) {
        const Tensor zeros = gpu_->alloc_kv({6, 2, 5}, dtype);
        EXPECT_EQ(zeros.dtype, dtype);
        EXPECT_EQ(gpu_->download(zeros), std::vector<float>(60, 0.0f));
        for (const int64_t n : {1, 7, 1000}) {
            const auto values = random_values(n, seed_++);
            const Tensor t = gpu_->upload_kv(values, {n}, dtype);
            const std::vector<float> expected = rounded(values, dtype);
            EXPECT_EQ(gpu_->download(t), expected) << dtype_name(dtype) << " " << n;
            const Tensor c = gpu_->copy(t);
            EXPECT_EQ(c.dtype, dtype);
            EXPECT_EQ(gpu_->download(c), expected);
            if (dtype == ScalarType::Q8) {
                EXPECT_THROW(t.view(n - 1, {1}), Error) << "levels and scales have no views";
            } else {
                EXPECT_EQ(gpu_->download(t.view(n - 1, {1})), std::vector<float>{expected.back()})
                    << "a view";
            }
        }
    }
    // Rows of 8-bit levels: each row's own scale.
    const std::vector<float> rows = {1.0f, -0.5f, 0.25f, 0.0f, 0.0f, 0.0f, -100.0f, 3.0f, 50.0f};
    const Tensor q8 = gpu_->upload_kv(rows, {3, 3}, ScalarType::Q8);
    const std::vector<float> back = gpu_->download(q8);
    EXPECT_EQ(back[0], 1.0f);
    EXPECT_EQ(back[6], -100.0f);
    EXPECT_NEAR(back[1], -0.5f, 0.5f / 127.0f);
    EXPECT_NEAR(back[7], 3.0f, 0.5f * 100.0f / 127.0f);
    EXPECT_EQ(std::vector<float>(back.begin() + 3, back.begin() + 6), std::vector<float>(3, 0.0f)) << "zeros";
    EXPECT_EQ(back, cpu_->download(cpu_->upload_kv(rows, {3, 3}, ScalarType::Q8))) << "the CPU's levels";
    EXPECT_NE(rounded({1.0f + 1.0f / 512.0f}, ScalarType::BF16), std::vector<float>{1.0f + 1.0f / 512.0f})
        << "bfloat16 rounds";
    EXPECT_THROW(gpu_->alloc_kv({4}, ScalarType::I32), Error);
    EXPECT_THROW(gpu_->upload_kv(std::vector<float>(3), {4}, ScalarType::BF16), Error) << "3 values for 4";
    EXPECT_THROW(cpu_->alloc_kv({4}, ScalarType::BF16), Error) << "the CPU keeps float32 caches";
    EXPECT_EQ(cpu_->kv_dtype(AttentionPrecision::Bf16), ScalarType::F32);
}

// Parts go through page-locked memory and the copy runs after upload() returns: the sources are overwritten
// at once, four uploads (more than the two staging buffers) are in flight before the first download, and
// larger ones grow the buffers.
TEST_F(BackendOpsTest, UploadInParts) {
    std::vector<std::vector<float>> expected;
    std::vector<Tensor> uploaded;
    // Sizes around the staging chunks and beyond the whole ring (kMaxChunks of kChunkBytes), so that one
    // upload refills chunks its own copies still read.
    const auto chunk_floats = static_cast<int64_t>(kernels::HostStaging::kChunkBytes / sizeof(float));
    const auto ring_floats = chunk_floats * static_cast<int64_t>(kernels::HostStaging::kMaxChunks);
    for (const int64_t n : {int64_t{1000}, int64_t{300'000}, chunk_floats, chunk_floats + 1, int64_t{5} << 20,
                            int64_t{777}, 2 * ring_floats + 12'345}) {
        std::vector<float> values = random_values(n, seed_++);
        const std::span<const float> all(values);
        const size_t cut = static_cast<size_t>(n / 3), second_cut = static_cast<size_t>(n - n / 7);
        const std::vector<std::span<const float>> parts = {
            all.first(cut), all.subspan(cut, 0), all.subspan(cut, second_cut - cut), all.subspan(second_cut)};
        uploaded.push_back(gpu_->upload(parts, {n}));
        expected.push_back(values);
        std::fill(values.begin(), values.end(), -1.0f);
    }
    for (size_t i = 0; i < uploaded.size(); ++i) {
        EXPECT_EQ(gpu_->download(uploaded[i]), expected[i]) << "upload " << i;
    }
    const std::vector<float> values = random_values(10, seed_++);
    const std::vector<std::span<const float>> parts = {std::span(values)};
    EXPECT_THROW(gpu_->upload(parts, {11}), Error);
    EXPECT_TRUE(gpu_->download(gpu_->upload(std::vector<std::span<const float>>{}, {0, 3})).empty());
}

// Downloads into parts write each element where one download and a copy would: sizes below the staged size,
// around the staging chunks and beyond the whole ring, parts that cut chunks anywhere (some empty), float32
// and int32; a download between two uploads whose chunks are still being read; and wrong sizes or types
// refused.
TEST_F(BackendOpsTest, DownloadIntoParts) {
    const auto chunk_floats = static_cast<int64_t>(kernels::HostStaging::kChunkBytes / sizeof(float));
    const auto ring_floats = chunk_floats * static_cast<int64_t>(kernels::HostStaging::kMaxChunks);
    for (const int64_t n : {int64_t{1}, int64_t{1000}, chunk_floats / 4 + 5, chunk_floats,
                            3 * chunk_floats + 7, ring_floats + chunk_floats / 2}) {
        const std::vector<float> values = random_values(n, seed_++);
        std::vector<int32_t> ids(static_cast<size_t>(n));
        std::iota(ids.begin(), ids.end(), -7);
        const Tensor before = gpu_->upload(random_values(chunk_floats + 3, seed_++), {chunk_floats + 3});
        const Tensor t = gpu_->upload(values, {n});
        const Tensor t_ids = gpu_->upload_i32(ids, {n});
        const Tensor after = gpu_->upload(random_values(777, seed_++), {777});
        std::vector<float> got(static_cast<size_t>(n), -1.0f);
        std::vector<int32_t> got_ids(static_cast<size_t>(n), -1);
        const size_t cut = static_cast<size_t>(n / 3), second_cut = static_cast<size_t>(n - n / 7);
        const std::span<float> all(got);
        const std::vector<std::span<float>> parts = {
            all.first(cut), all.subspan(cut, 0), all.subspan(cut, second_cut - cut), all.subspan(second_cut)};
        gpu_->download(t, parts);
        EXPECT_EQ(got, values) << n << " float32 values";
        const std::span<int32_t> all_ids(got_ids);
        const std::vector<std::span<int32_t>> id_parts = {all_ids.first(second_cut),
                                                          all_ids.subspan(second_cut)};
        gpu_->download_i32(t_ids, id_parts);
        EXPECT_EQ(got_ids, ids) << n << " int32 values";
        EXPECT_EQ(gpu_->download(after).size(), 777u);
        EXPECT_EQ(gpu_->download(before).size(), static_cast<size_t>(chunk_floats + 3));
    }
    std::vector<float> got(10);
    std::vector<int32_t> got_ids(10);
    const std::vector<std::span<float>> ten = {std::span(got)};
    const std::vector<std::span<int32_t>> ten_ids = {std::span(got_ids)};
    EXPECT_THROW(gpu_->download(gpu_->upload(random_values(11, seed_++), {11}), ten), Error) << "11 into 10";
    EXPECT_THROW(gpu_->download(gpu_->upload_i32(std::vector<int32_t>(10), {10}), ten), Error) << "int32";
    EXPECT_THROW(gpu_->download_i32(gpu_->upload(random_values(10, seed_++), {10}), ten_ids), Error)
        << "float32";
    gpu_->download(gpu_->upload(std::vector<float>{}, {0}), {});
}

// 8-bit levels expand to their channel's values exactly as the CPU backend expands them: rows of one, three
// and more channels of odd sizes, parts that split rows, uploads beyond a staging chunk, and every level.
TEST_F(BackendOpsTest, UploadLevels) {
    std::mt19937 rng(seed_++);
    std::uniform_int_distribution<int> level(0, 255);
    struct Case {
        int64_t n_rows, n_channels, channel_size;
    };
    for (const Case c : {Case{1, 1, 1}, Case{7, 3, 196}, Case{300, 3, 5}, Case{3, 2, 1001},
                         Case{static_cast<int64_t>(kernels::HostStaging::kChunkBytes / 588 + 3), 3, 196}}) {
        const int64_t row = c.n_channels * c.channel_size;
        std::vector<uint8_t> levels(static_cast<size_t>(c.n_rows * row));
        std::generate(levels.begin(), levels.end(), [&] { return static_cast<uint8_t>(level(rng)); });
        const std::vector<float> table = random_values(c.n_channels * 256, seed_++);
        const std::span<const uint8_t> all(levels);
        const size_t cut = levels.size() / 3 + 1;
        const std::vector<std::span<const uint8_t>> parts = {all.first(cut), all.subspan(cut, 0),
                                                             all.subspan(cut)};
        const std::string where = dims({c.n_rows, c.n_channels, c.channel_size});
        const std::vector<float> expected =
            cpu_->download(cpu_->upload_levels(parts, table, c.channel_size, {c.n_rows, row}));
        EXPECT_EQ(gpu_->download(gpu_->upload_levels(parts, table, c.channel_size, {c.n_rows, row})),
                  expected)
            << where;
        // The CPU's expansion is the table itself: the level's entry of the element's channel.
        const size_t last = levels.size() - 1;
        const auto channel = static_cast<size_t>(static_cast<int64_t>(last) % row / c.channel_size);
        EXPECT_EQ(expected[last], table[channel * 256 + levels[last]]) << where;
    }
    const std::vector<uint8_t> levels(12, 3);
    const std::vector<std::span<const uint8_t>> parts = {std::span(levels)};
    const std::vector<float> table(3 * 256, 1.0f);
    EXPECT_THROW(gpu_->upload_levels(parts, table, 3, {2, 6}), Error)
        << "a table for three channels, rows of two";
    EXPECT_THROW(gpu_->upload_levels(parts, table, 5, {2, 6}), Error) << "rows not whole channels";
    EXPECT_THROW(gpu_->upload_levels(parts, table, 2, {3, 6}), Error) << "levels for another shape";
    EXPECT_TRUE(gpu_->download(gpu_->upload_levels({}, table, 2, {0, 6})).empty());
}

// update_levels writes the same values into a tensor already there, its other contents replaced, and refuses
// a tensor that is not float32 or levels of another size.
TEST_F(BackendOpsTest, UpdateLevels) {
    std::mt19937 rng(seed_++);
    std::uniform_int_distribution<int> level(0, 255);
    const int64_t n_rows = 2, channel_size = 4097, row = 3 * channel_size;
    std::vector<uint8_t> levels(static_cast<size_t>(n_rows * row));
    std::generate(levels.begin(), levels.end(), [&] { return static_cast<uint8_t>(level(rng)); });
    const std::vector<float> table = random_values(3 * 256, seed_++);
    const std::vector<std::span<const uint8_t>> parts = {std::span(levels)};
    Tensor t = gpu_->upload(random_values(n_rows * row, seed_++), {n_rows, row});
    gpu_->update_levels(t, parts, table, channel_size);
    EXPECT_EQ(gpu_->download(t),
              cpu_->download(cpu_->upload_levels(parts, table, channel_size, {n_rows, row})));
    Tensor ids = gpu_->upload_i32(std::vector<int32_t>(static_cast<size_t>(n_rows * row)), {n_rows, row});
    EXPECT_THROW(gpu_->update_levels(ids, parts, table, channel_size), Error) << "int32 elements";
    Tensor small = gpu_->alloc({1, row});
    EXPECT_THROW(gpu_->update_levels(small, parts, table, channel_size), Error) << "levels for two rows";
}

TEST_F(BackendOpsTest, FactoryAndLifetimes) {
    EXPECT_THROW(make_cuda_backend(kernels::device_count()), Error) << "no device of that number";
    EXPECT_NE(gpu_->name().find("cuda"), std::string::npos) << gpu_->name();
    // Tensors may outlive their backend.
    Tensor t = gpu_->upload(random_values(7, 1), {7});
    gpu_.reset();
    t = Tensor{};
    gpu_ = make_cuda_backend();
    // Memory freed by one tensor is taken by the next of the same size, and zeroed by alloc().
    for (int i = 0; i < 3; ++i) {
        Tensor x = gpu_->upload(random_values(1000, 2), {1000});
        gpu_->gelu_tanh(x);
        EXPECT_EQ(gpu_->download(gpu_->alloc({1000})), std::vector<float>(1000, 0.0f));
    }
}

TEST_F(BackendOpsTest, MemoryStatsCountBytesAndPeak) {
    const MemoryStats before = gpu_->memory_stats();
    {
        const Tensor a = gpu_->alloc({1000});
        const Tensor b = gpu_->alloc({24, 10});
        EXPECT_EQ(gpu_->memory_stats().in_use, before.in_use + 4960);
    }
    EXPECT_EQ(gpu_->memory_stats().in_use, before.in_use);
    EXPECT_GE(gpu_->memory_stats().peak, before.in_use + 4960);
    gpu_->reset_peak();
    EXPECT_EQ(gpu_->memory_stats().peak, before.in_use);
    const Weight q = gpu_->upload(quantize(random_values(8 * 128, 3), 8, 128, Quantization::Wint4, 64));
    EXPECT_EQ(gpu_->memory_stats().in_use, before.in_use + quantized_bytes(Quantization::Wint4, 8, 128, 64));
}

TEST_F(BackendOpsTest, OutOfMemoryThrowsWithTheRequest) {
    const int64_t n = int64_t{1} << 40;  // 4 TiB of floats
    try {
        gpu_->alloc({n});
        FAIL() << "allocated 4 TiB";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("out of memory"), std::string::npos) << what;
        EXPECT_NE(what.find(std::to_string(n * 4)), std::string::npos) << what;
        EXPECT_NE(what.find("free of"), std::string::npos) << what;
    }
    // The backend goes on working.
    Pair x = random({3, 7});
    cpu_->gelu_tanh(x.cpu);
    gpu_->gelu_tanh(x.gpu);
    expect_close("gelu_tanh", x.gpu, x.cpu, kF32Bound, "after out of memory");
}

// --device-memory: the backend reports the limit as its memory and refuses tensors beyond it, live and cached
// blocks counted together; a tensor that goes makes room again.
TEST_F(BackendOpsTest, MemoryLimitBoundsTheDevice) {
    CudaBackendOptions options;
    options.memory_limit_bytes = int64_t{64} << 20;
    const std::unique_ptr<Backend> small = make_cuda_backend(options);
    EXPECT_EQ(small->total_memory(), int64_t{64} << 20);
    {
        const Tensor a = small->alloc({int64_t{10} << 20});  // 40 MiB
        try {
            small->alloc({int64_t{8} << 20});  // 32 MiB more
            FAIL() << "went past the limit";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("limit"), std::string::npos) << e.what();
        }
    }
    const Tensor b = small->alloc({int64_t{12} << 20});  // 48 MiB once the first is gone
    EXPECT_EQ(small->memory_stats().in_use, int64_t{48} << 20);
    Pair x = random({3, 7});
    Tensor y = small->upload(std::span<const float>(x.cpu.f32(), 21), {3, 7});
    small->gelu_tanh(y);
    cpu_->gelu_tanh(x.cpu);
    expect_close("gelu_tanh", y, x.cpu, kF32Bound, "under a memory limit");
}

TEST_F(BackendOpsTest, GatherAndScatterRows) {
    for (const int64_t d : {1, 7, 1000}) {
        const Pair src = random({130, d});
        for (const std::vector<int64_t>& rows : std::vector<std::vector<int64_t>>{
                 {}, {129}, {0, 5, 5, 3}, {7, 1, 2, 8, 9, 100, 64, 0, 33, 12, 129, 4, 4, 4, 17, 18, 19}}) {
            expect_close("gather_rows", gpu_->gather_rows(src.gpu, rows), cpu_->gather_rows(src.cpu, rows),
                         kF32Bound, dims({static_cast<int64_t>(rows.size()), d}));
        }
        for (const std::vector<int64_t>& rows :
             std::vector<std::vector<int64_t>>{{129}, {0, 5, 3}, {3, 9, 3, 0, 9}, {120, 7, 64, 1, 2, 99}}) {
            Pair dst = random({130, d});
            const Pair rows_src = random({static_cast<int64_t>(rows.size()), d});
            cpu_->scatter_rows(dst.cpu, rows, rows_src.cpu);
            gpu_->scatter_rows(dst.gpu, rows, rows_src.gpu);
            expect_close("scatter_rows", dst.gpu, dst.cpu, kF32Bound,
                         dims({static_cast<int64_t>(rows.size()), d}));
        }
    }
    const Pair src3 = random({9, 4, 5});
    const std::vector<int64_t> rows = {8, 0};
    expect_close("gather_rows", gpu_->gather_rows(src3.gpu, rows), cpu_->gather_rows(src3.cpu, rows),
                 kF32Bound, "9x4x5");
    const std::vector<int64_t> outside = {9};
    EXPECT_THROW(gpu_->gather_rows(src3.gpu, outside), Error);
    Pair dst = random({9, 4, 5});
    EXPECT_THROW(gpu_->scatter_rows(dst.gpu, outside, random({1, 20}).gpu), Error);
    EXPECT_THROW(gpu_->scatter_rows(dst.gpu, rows, random({2, 21}).gpu), Error);
}

// Scattering at distinct int32 rows on the backend gives what the host's row list gives; a row outside is
// skipped on the GPU.
TEST_F(BackendOpsTest, ScatterRowsAtRowsOnTheBackend) {
    for (const int64_t d : {1, 7, 1000}) {
        for (const std::vector<int32_t>& rows :
             std::vector<std::vector<int32_t>>{{}, {129}, {0, 5, 3}, {120, 7, 64, 1, 2, 99}}) {
            const auto n = static_cast<int64_t>(rows.size());
            Pair dst = random({130, d});
            const Pair src = random({n, d});
            const Pair at = upload_i32(rows, {n});
            cpu_->scatter_rows(dst.cpu, at.cpu, src.cpu);
            gpu_->scatter_rows(dst.gpu, at.gpu, src.gpu);
            expect_close("scatter_rows", dst.gpu, dst.cpu, kF32Bound, dims({n, d}));
        }
    }
    Pair dst = random({4, 3});
    const std::vector<float> before = gpu_->download(dst.gpu);
    gpu_->scatter_rows(dst.gpu, gpu_->upload_i32(std::vector<int32_t>{4, -1}, {2}), random({2, 3}).gpu);
    EXPECT_EQ(gpu_->download(dst.gpu), before) << "rows outside dst";
    EXPECT_THROW(
        gpu_->scatter_rows(dst.gpu, gpu_->upload_i32(std::vector<int32_t>{0}, {1}), random({1, 2}).gpu),
        Error)
        << "row sizes 3 and 2";
    EXPECT_THROW(gpu_->scatter_rows(dst.gpu, random({1}).gpu, random({1, 3}).gpu), Error) << "float32 rows";
}

// New float32 values for a tensor, in parts, replace all of it; the parts must cover it exactly.
TEST_F(BackendOpsTest, Float32Update) {
    const std::vector<float> a = random_values(70, seed_++, 0.0f, 1.0f),
                             b = random_values(30, seed_++, 0.0f, 1.0f);
    Tensor t = gpu_->alloc({10, 10});
    const std::span<const float> parts[] = {a, b};
    gpu_->update(t, parts);
    std::vector<float> expected = a;
    expected.insert(expected.end(), b.begin(), b.end());
    EXPECT_EQ(gpu_->download(t), expected);
    const std::span<const float> short_parts[] = {a};
    EXPECT_THROW(gpu_->update(t, short_parts), Error);
    Tensor i = gpu_->upload_i32(std::vector<int32_t>(100, 0), {100});
    EXPECT_THROW(gpu_->update(i, parts), Error) << "int32 tensor";
}

TEST_F(BackendOpsTest, Int32UploadAndUpdate) {
    const std::vector<int32_t> values = {3, -1, 2147483647, 0, -2147483647 - 1, 42};
    Tensor t = gpu_->upload_i32(values, {2, 3});
    EXPECT_EQ(t.dtype, ScalarType::I32);
    const std::vector<float> raw = gpu_->download(Tensor{t.shape, t.buffer});  // the same bits as float32
    std::vector<int32_t> back(raw.size());
    std::memcpy(back.data(), raw.data(), raw.size() * sizeof(int32_t));
    EXPECT_EQ(back, values);
    const std::vector<int32_t> wrong_size = {1, 2};
    EXPECT_THROW(gpu_->update(t, wrong_size), Error);
    Tensor f = gpu_->alloc({2});
    EXPECT_THROW(gpu_->update(f, wrong_size), Error) << "float32 tensor";
    EXPECT_THROW(gpu_->add(f, t.view(0, {2})), Error) << "int32 input to a float32 operation";
    EXPECT_THROW(static_cast<void>(t.view(4, {3})), Error) << "view past the end";
}

// Uploads, updates and readbacks of int32 values at sizes that the launch of a kernel carries and beyond,
// several in flight at once, each source overwritten as soon as its call returns.
TEST_F(BackendOpsTest, Int32TransfersInFlight) {
    std::mt19937 rng(static_cast<uint32_t>(seed_++));
    std::uniform_int_distribution<int32_t> word(std::numeric_limits<int32_t>::min(),
                                                std::numeric_limits<int32_t>::max());
    for (const int64_t n :
         {int64_t{1}, int64_t{7}, kernels::kStoreWordsMax, kernels::kStoreWordsMax + 1, int64_t{5000}}) {
        std::vector<int32_t> values(static_cast<size_t>(n));
        std::generate(values.begin(), values.end(), [&] { return word(rng); });
        Tensor t = gpu_->upload_i32(values, {n});
        std::vector<std::vector<int32_t>> expected = {values};
        std::vector<std::unique_ptr<TokenReadback>> readbacks;
        readbacks.push_back(gpu_->read_back(t));
        for (int step = 0; step < 4; ++step) {
            std::generate(values.begin(), values.end(), [&] { return word(rng); });
            gpu_->update(t, values);
            expected.push_back(values);
            readbacks.push_back(gpu_->read_back(t));
        }
        std::fill(values.begin(), values.end(), -7);
        for (size_t i = readbacks.size(); i-- > 0;) {
            EXPECT_EQ(readbacks[i]->wait(), expected[i]) << n << " values, readback " << i;
        }
    }
}

TEST_F(BackendOpsTest, GatherRowsByInt32Tensor) {
    for (const int64_t d : {1, 7, 1000}) {
        const Pair src = random({130, d});
        for (const std::vector<int32_t>& rows : std::vector<std::vector<int32_t>>{
                 {}, {129}, {0, 5, 5, 3}, {7, 1, 2, 8, 100, 64, 0, 33, 129, 4}}) {
            const auto n = static_cast<int64_t>(rows.size());
            const Pair r = upload_i32(rows, {n});
            expect_close("gather_rows (int32 rows)", gpu_->gather_rows(src.gpu, r.gpu),
                         cpu_->gather_rows(src.cpu, r.cpu), kF32Bound, dims({n, d}));
        }
    }
    EXPECT_THROW(gpu_->gather_rows(random({3, 2}).gpu, random({2}).gpu), Error) << "float32 rows";
}

// A step's tokens chosen on the device feed the next step's embeddings there (a negative id -p - 1 is pending
// token p), in recorded work too, and come to the host through readbacks queued behind the work, each with
// the values of its own step although later steps rewrite the tensor.
TEST_F(BackendOpsTest, PendingTokensAndReadBacks) {
    const int64_t vocab = 130, d = 48;
    const Pair table = random({vocab, d});
    const auto choose = [&](Pair& pending, int64_t n) {
        const Pair logits = random({n, vocab});
        cpu_->argmax_rows_to(logits.cpu, pending.cpu);
        gpu_->argmax_rows_to(logits.gpu, pending.gpu);
    };
    for (const int64_t n_pending : {1, 5, 64}) {
        Pair pending = upload_i32(std::vector<int32_t>(static_cast<size_t>(n_pending), 0), {n_pending});
        choose(pending, n_pending);
        std::vector<int32_t> ids;  // known and pending ids in turn
        for (int64_t i = 0; i < 2 * n_pending + 3; ++i) {
            ids.push_back(static_cast<int32_t>(i % 2 == 1 ? -(i / 2 % n_pending) - 1 : i * 37 % vocab));
        }
        const auto n = static_cast<int64_t>(ids.size());
        const Pair id_tensor = upload_i32(ids, {n});
        expect_close("gather_token_rows", gpu_->gather_token_rows(table.gpu, id_tensor.gpu, pending.gpu),
                     cpu_->gather_token_rows(table.cpu, id_tensor.cpu, pending.cpu), kF32Bound,
                     dims({n, n_pending}));
        EXPECT_EQ(gpu_->read_back(pending.gpu)->wait(), cpu_->read_back(pending.cpu)->wait());
    }

    // A table kept in bfloat16 (the embeddings of bfloat16 weights): the same rows, widened to float32, by
    // each gather.
    const Pair bf16_table = random_kv({vocab, d}, ScalarType::BF16);
    {
        Pair pending = upload_i32(std::vector<int32_t>(3, 0), {3});
        choose(pending, 3);
        const std::vector<int32_t> ids = {5, -1, 129, -3, 0, -2};
        const Pair id_tensor = upload_i32(ids, {6});
        expect_close("gather_token_rows (bfloat16 table)",
                     gpu_->gather_token_rows(bf16_table.gpu, id_tensor.gpu, pending.gpu),
                     cpu_->gather_token_rows(bf16_table.cpu, id_tensor.cpu, pending.cpu), kF32Bound, "6 ids");
        const std::vector<int64_t> rows = {3, 0, 129, 3};
        expect_close("gather_rows (bfloat16 table)", gpu_->gather_rows(bf16_table.gpu, rows),
                     cpu_->gather_rows(bf16_table.cpu, rows), kF32Bound, "4 rows");
        const Pair row_tensor = upload_i32({7, 128, 7}, {3});
        expect_close("gather_rows (bfloat16 table, int32 rows)",
                     gpu_->gather_rows(bf16_table.gpu, row_tensor.gpu),
                     cpu_->gather_rows(bf16_table.cpu, row_tensor.cpu), kF32Bound, "3 rows");
    }

    // A table in host memory the device reads (upload_table: an embedding), of either element type: the
    // same rows by each gather, none of the device's memory taken, and read by recorded work too.
    for (const ScalarType dtype : {ScalarType::F32, ScalarType::BF16}) {
        const std::vector<float> values = random_values(vocab * d, 77);
        const int64_t before = gpu_->memory_stats().in_use;
        const Pair host_table = {cpu_->upload(rounded(values, dtype), {vocab, d}),
                                 gpu_->upload_table(values, {vocab, d}, dtype)};
        EXPECT_EQ(gpu_->memory_stats().in_use, before) << dtype_name(dtype);
        Pair pending = upload_i32(std::vector<int32_t>(3, 0), {3});
        choose(pending, 3);
        const Pair id_tensor = upload_i32({5, -1, 129, -3, 0, -2}, {6});
        expect_close("gather_token_rows (host table)",
                     gpu_->gather_token_rows(host_table.gpu, id_tensor.gpu, pending.gpu),
                     cpu_->gather_token_rows(host_table.cpu, id_tensor.cpu, pending.cpu), kF32Bound,
                     dtype_name(dtype));
        const std::vector<int64_t> rows = {3, 0, 129, 3};
        expect_close("gather_rows (host table)", gpu_->gather_rows(host_table.gpu, rows),
                     cpu_->gather_rows(host_table.cpu, rows), kF32Bound, dtype_name(dtype));
        gpu_->begin_recording();
        const Tensor recorded = gpu_->gather_token_rows(host_table.gpu, id_tensor.gpu, pending.gpu);
        const std::unique_ptr<RecordedWork> work = gpu_->end_recording();
        choose(pending, 3);
        work->replay();
        expect_close("recorded gather_token_rows (host table)", recorded,
                     cpu_->gather_token_rows(host_table.cpu, id_tensor.cpu, pending.cpu), kF32Bound,
                     dtype_name(dtype));
    }
    EXPECT_THROW(gpu_->upload_table(std::vector<float>(6), {2, 3}, ScalarType::Q8), Error);
    EXPECT_THROW(gpu_->upload_table(std::vector<float>(5), {2, 3}, ScalarType::BF16), Error) << "5 values";

    const int64_t n = 4;
    Pair pending = upload_i32(std::vector<int32_t>(n, 0), {n});
    const Pair ids = upload_i32({-1, 7, -4, -2}, {n});
    gpu_->begin_recording();
    EXPECT_THROW(gpu_->read_back(pending.gpu), Error) << "nothing comes to the host while recording";
    const Tensor out = gpu_->gather_token_rows(table.gpu, ids.gpu, pending.gpu);
    const std::unique_ptr<RecordedWork> work = gpu_->end_recording();
    for (int step = 0; step < 3; ++step) {
        choose(pending, n);
        work->replay();
        expect_close("recorded gather_token_rows", out,
                     cpu_->gather_token_rows(table.cpu, ids.cpu, pending.cpu), kF32Bound,
                     label("replay ", step));
    }

    std::vector<std::unique_ptr<TokenReadback>> readbacks;
    std::vector<std::vector<int32_t>> expected;
    for (int step = 0; step < 6; ++step) {
        choose(pending, n);
        readbacks.push_back(gpu_->read_back(pending.gpu));
        expected.push_back(cpu_->read_back(pending.cpu)->wait());
    }
    for (size_t step = readbacks.size(); step-- > 0;) {
        EXPECT_EQ(readbacks[step]->wait(), expected[step]) << "step " << step;
    }
}

// Work recorded once and replayed with new inputs equals the CPU running it on those inputs; the replay
// writes the tensors made while recording, and nothing may cross between host and device while recording.
TEST_F(BackendOpsTest, RecordedWorkReplaysWithNewInputs) {
    EXPECT_FALSE(cpu_->can_record());
    EXPECT_THROW(cpu_->begin_recording(), Error);
    ASSERT_TRUE(gpu_->can_record());
    const int64_t n = 5, d = 48;
    const Pair table = random({40, d}), w = random({d}, 1.0f, 0.1f), up_w = random({2 * d, d});
    const auto run = [&](Backend& backend, const Tensor& rows, const Tensor& ids, const Tensor& weight,
                         const Tensor& up) {
        Tensor x = backend.gather_rows(rows, ids);  // [n, d]
        backend.add(x, backend.copy(x));
        const Tensor h = backend.rms_norm(x, weight, 1e-5f);
        return backend.swiglu(backend.linear(h, up, nullptr));  // [n, d]
    };
    std::vector<int32_t> ids = {3, 0, 39, 7, 7};
    Tensor gpu_ids = gpu_->upload_i32(ids, {n});
    gpu_->begin_recording();
    EXPECT_THROW(gpu_->download(w.gpu), Error);
    EXPECT_THROW(gpu_->upload_i32(ids, {n}), Error);
    const Tensor out = run(*gpu_, table.gpu, gpu_ids, w.gpu, up_w.gpu);
    const std::unique_ptr<RecordedWork> work = gpu_->end_recording();
    EXPECT_THROW(gpu_->end_recording(), Error) << "not recording";
    for (int step = 0; step < 3; ++step) {
        for (int32_t& id : ids) {
            id = static_cast<int32_t>((id * 7 + step + 1) % 40);
        }
        gpu_->update(gpu_ids, ids);
        work->replay();
        const Tensor expected = run(*cpu_, table.cpu, cpu_->upload_i32(ids, {n}), w.cpu, up_w.cpu);
        expect_close("recorded work", out, expected, kF32Bound, label("replay ", step));
    }
}

// Marks on the queue time the device's work between them: more work takes longer, marks of different
// backends are not compared, and nothing is marked while recording.
TEST_F(BackendOpsTest, QueueMarksTimeTheWorkBetweenThem) {
    const Pair a = random({512, 512});
    const auto time = [&](int n_products) {
        const std::unique_ptr<QueueMark> start = gpu_->mark_queue();
        for (int i = 0; i < n_products; ++i) {
            gpu_->batched_products(a.gpu.view(0, {1, 512, 512}), a.gpu.view(0, {1, 512, 512}));
        }
        const std::unique_ptr<QueueMark> end = gpu_->mark_queue();
        return end->seconds_since(*start);
    };
    time(2);
    const double one = time(1), many = time(50);
    EXPECT_GT(one, 0.0);
    EXPECT_GT(many, 5 * one);
    const std::unique_ptr<QueueMark> host = cpu_->mark_queue(), device = gpu_->mark_queue();
    EXPECT_THROW(device->seconds_since(*host), Error);
    EXPECT_GE(cpu_->mark_queue()->seconds_since(*host), 0.0);
    gpu_->begin_recording();
    EXPECT_THROW(gpu_->mark_queue(), Error);
    gpu_->end_recording();
}

}  // namespace
}  // namespace folio::backend_ops_test
