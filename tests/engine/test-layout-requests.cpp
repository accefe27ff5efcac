// Layout requests through the engine service with the tiny PP-DocLayoutV2 and V3 fixture models on the CPU
// backend: the same blocks as the model and the rules called directly, pages of concurrent requests sharing a
// pass up to the slot's layout batch, cancel, an error that ends its own request alone, and a service
// without a layout model refusing them.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "engine/common/error.h"
#include "engine/layout/layout-pipeline.h"
#include "engine/models/pp-doclayout/pp-doclayout.h"
#include "engine/service/engine-service.h"

using namespace folio;
using namespace std::chrono_literals;

namespace {

const std::string kRecognitionDir = FOLIO_FIXTURES_DIR "/paddleocr-vl-tiny";
const std::string kLayoutRoot = FOLIO_FIXTURES_DIR "/../layout/";

// A page of dark bars on white, different for each seed, so that pages give different detections.
Image page_image(int width, int height, int seed) {
    Image image = make_image(width, height);
    for (int y = 0; y < height; ++y) {
        for (int x = 0; x < width; ++x) {
            const bool ink = ((y / (6 + seed)) % 3 == 0) && x > 8 + 3 * seed && x < width - 10;
            const auto value = static_cast<uint8_t>(ink ? 20 + 7 * seed : 250);
            const size_t at =
                (static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x)) * 3;
            image.rgb[at] = value;
            image.rgb[at + 1] = value;
            image.rgb[at + 2] = static_cast<uint8_t>(value / 2 + 60);
        }
    }
    return image;
}

// The model's own rules with every threshold at `threshold`, so that the random fixture weights keep blocks.
LayoutRules rules_at(LayoutRules rules, float threshold) {
    std::fill(rules.thresholds.begin(), rules.thresholds.end(), threshold);
    rules.default_threshold = threshold;
    return rules;
}

void expect_same_blocks(const std::vector<LayoutDetection>& got, const std::vector<LayoutDetection>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].label, want[i].label) << i;
        EXPECT_EQ(got[i].score, want[i].score) << i;
        EXPECT_EQ(got[i].box, want[i].box) << i;
        EXPECT_EQ(got[i].polygon, want[i].polygon) << i;
        EXPECT_EQ(got[i].order, want[i].order) << i;
    }
}

// Holds the engine thread in a job until release(), so that requests submitted meanwhile wait together.
class EngineThreadHold {
public:
    explicit EngineThreadHold(EngineService& service) {
        std::promise<void> entered;
        std::future<void> in = entered.get_future();
        thread_ = std::thread([&service, &entered, out = release_.get_future()]() mutable {
            service.run_on_engine_thread([&](EngineContext&) {
                entered.set_value();
                out.wait();
            });
        });
        in.wait();
    }
    ~EngineThreadHold() { release(); }
    void release() {
        if (thread_.joinable()) {
            release_.set_value();
            thread_.join();
        }
    }

private:
    std::promise<void> release_;
    std::thread thread_;
};

ServiceParams params_with_layout(const std::string& layout_dir, int layout_batch) {
    ServiceParams p;
    p.device.make_backend = [] { return make_cpu_backend(2); };
    p.models.push_back({ModelRole::Recognition, kRecognitionDir, {}});
    if (!layout_dir.empty()) {
        p.models.push_back({ModelRole::Layout, layout_dir, {}});
        p.models.back().layout_batch = layout_batch;
    }
    p.engine.max_model_len = 4096;
    return p;
}

class LayoutRequestTest : public ::testing::TestWithParam<const char*> {
protected:
    std::string layout_dir() const { return kLayoutRoot + GetParam(); }

    void SetUp() override {
        service_.load(params_with_layout(layout_dir(), 2));
        ASSERT_EQ(service_.wait_loaded(120s), ServiceState::Ready) << service_.status().error;
        info_ = *service_.layout_model();
    }

    LayoutPage page(int width, int height, int seed) const {
        return {info_.prepare(page_image(width, height, seed)), width, height};
    }

    // The blocks of a page as the model and the rules give them when called directly.
    std::vector<LayoutDetection> direct_blocks(const LayoutPage& p, const LayoutRules& rules) const {
        const std::unique_ptr<Backend> backend = make_cpu_backend(2);
        const PpDocLayout model(*backend, layout_dir(),
                                LayoutModelParams{.conv_precision = ConvPrecision::Tf32});
        const std::vector<std::vector<uint8_t>> pixels{p.pixels};
        const std::vector<LayoutRawOutput> raw =
            model.detect_levels(pixels, {.mask_min_score = rules.lowest_threshold()});
        return detect_layout_blocks(raw.at(0), p.width, p.height, rules);
    }

    EngineService service_;
    LayoutModelInfo info_;
};

TEST_P(LayoutRequestTest, GivesTheBlocksOfTheModelCalledDirectly) {
    EXPECT_EQ(info_.max_batch, 2);
    EXPECT_EQ(info_.description.tasks, std::vector<std::string>{"layout"});
    const bool v2 = std::string(GetParam()).find("v2") != std::string::npos;
    EXPECT_EQ(info_.rules.thresholds,
              (v2 ? paddleocr_vl_layout_rules() : paddleocr_vl_1_5_layout_rules()).thresholds);

    // Masks as logits (threshold 0) and as bits (above 0); pages of two sizes.
    for (const float threshold : {0.0F, 0.2F}) {
        const LayoutRules rules = rules_at(info_.rules, threshold);
        LayoutRequestSpec spec;
        spec.pages = {page(96, 128, 0), page(140, 90, 1)};
        spec.rules = rules;
        const LayoutRequestSpec copy = spec;
        const LayoutResult result = service_.submit_layout(std::move(spec)).wait();
        ASSERT_TRUE(result.ok()) << result.error;
        ASSERT_EQ(result.pages.size(), 2U);
        size_t n_blocks = 0;
        for (size_t i = 0; i < 2; ++i) {
            SCOPED_TRACE("threshold " + std::to_string(threshold) + ", page " + std::to_string(i));
            EXPECT_EQ(result.pages[i].batch_pages, 2);
            expect_same_blocks(result.pages[i].blocks, direct_blocks(copy.pages[i], rules));
            n_blocks += result.pages[i].blocks.size();
        }
        EXPECT_GT(n_blocks, 0U) << "the comparison saw no block";
    }

    // Without rules of its own a request takes the model's.
    LayoutRequestSpec plain;
    plain.pages = {page(96, 128, 2)};
    const LayoutPage kept = plain.pages[0];
    const LayoutResult result = service_.submit_layout(std::move(plain)).wait();
    ASSERT_TRUE(result.ok()) << result.error;
    expect_same_blocks(result.pages.at(0).blocks, direct_blocks(kept, info_.rules));
}

// Pages of requests waiting together go through the model together, in the order submitted, up to the
// slot's batch (2 here); a request whose rules ask for other masks waits for a pass of its own.
TEST_P(LayoutRequestTest, BatchesPagesOfConcurrentRequests) {
    const LayoutRules rules = rules_at(info_.rules, 0.1F);
    LayoutHandle one;
    LayoutHandle two;
    LayoutHandle other;
    std::vector<LayoutPage> pages = {page(96, 128, 0), page(120, 100, 1), page(80, 80, 2)};
    {
        const EngineThreadHold hold(service_);
        one = service_.submit_layout({{pages[0]}, rules});
        two = service_.submit_layout({{pages[1], pages[2]}, rules});
        other = service_.submit_layout({{pages[0]}, rules_at(info_.rules, 0.3F)});
        EXPECT_FALSE(one.finished());
        EXPECT_FALSE(one.poll().has_value());
    }
    const LayoutResult r1 = one.wait();
    const LayoutResult r2 = two.wait();
    const LayoutResult r3 = other.wait();
    ASSERT_TRUE(r1.ok() && r2.ok() && r3.ok()) << r1.error << r2.error << r3.error;
    // The first pass: one's page and two's first; then two's second; then the other threshold's.
    EXPECT_EQ(r1.pages.at(0).batch_pages, 2);
    EXPECT_EQ(r2.pages.at(0).batch_pages, 2);
    EXPECT_EQ(r2.pages.at(1).batch_pages, 1);
    EXPECT_EQ(r3.pages.at(0).batch_pages, 1);
    // Each page's blocks are its own, whatever shared its pass.
    expect_same_blocks(r1.pages[0].blocks, direct_blocks(pages[0], rules));
    expect_same_blocks(r2.pages[0].blocks, direct_blocks(pages[1], rules));
    expect_same_blocks(r2.pages[1].blocks, direct_blocks(pages[2], rules));
    expect_same_blocks(r3.pages[0].blocks, direct_blocks(pages[0], rules_at(info_.rules, 0.3F)));
    // The result stays with its handle.
    EXPECT_EQ(one.poll()->pages.at(0).blocks.size(), r1.pages[0].blocks.size());
}

TEST_P(LayoutRequestTest, CancelEndsARequestBeforeItRuns) {
    LayoutHandle cancelled;
    LayoutHandle kept;
    {
        const EngineThreadHold hold(service_);
        cancelled = service_.submit_layout({{page(96, 128, 0), page(96, 128, 1), page(96, 128, 2)}, {}});
        kept = service_.submit_layout({{page(96, 128, 3)}, {}});
        cancelled.cancel();
        EXPECT_TRUE(cancelled.finished());
    }
    const LayoutResult r = cancelled.wait();
    EXPECT_EQ(r.finish, FinishReason::Cancelled);
    EXPECT_TRUE(r.pages.empty());
    const LayoutResult k = kept.wait();
    ASSERT_TRUE(k.ok()) << k.error;
    EXPECT_EQ(k.pages.at(0).batch_pages, 1);  // the cancelled request's pages did not run
    kept.cancel();                            // after the end: nothing changes
    EXPECT_TRUE(kept.wait().ok());
}

TEST_P(LayoutRequestTest, AnErrorEndsItsRequestAlone) {
    LayoutPage wrong = page(96, 128, 0);
    wrong.pixels.resize(wrong.pixels.size() / 2);
    const LayoutPage good = page(96, 128, 1);
    LayoutHandle bad;
    LayoutHandle fine;
    {
        const EngineThreadHold hold(service_);
        bad = service_.submit_layout({{wrong}, {}});
        fine = service_.submit_layout({{good}, {}});
    }
    const LayoutResult b = bad.wait();
    EXPECT_EQ(b.finish, FinishReason::Error);
    EXPECT_EQ(b.error_kind, ErrorKind::Failed);
    EXPECT_NE(b.error.find("levels, expected 3x"), std::string::npos) << b.error;
    const LayoutResult f = fine.wait();
    ASSERT_TRUE(f.ok()) << f.error;
    expect_same_blocks(f.pages.at(0).blocks, direct_blocks(good, info_.rules));

    EXPECT_THROW(service_.submit_layout({{LayoutPage{good.pixels, 0, 10}}, {}}), Error);
    // An empty request ends at once.
    const LayoutResult empty = service_.submit_layout({}).wait();
    EXPECT_TRUE(empty.ok());
    EXPECT_TRUE(empty.pages.empty());
}

INSTANTIATE_TEST_SUITE_P(Models, LayoutRequestTest,
                         ::testing::Values("pp-doclayout-v3-tiny", "pp-doclayout-v2-tiny"),
                         [](const auto& test) { return std::string(test.param).substr(13, 2); });

TEST(LayoutRequests, RefusedWithoutALayoutModel) {
    EngineService service;
    EXPECT_FALSE(service.layout_model().has_value());
    try {
        service.submit_layout({});
        ADD_FAILURE() << "an empty service took a layout request";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("no model is ready"), std::string::npos) << e.what();
    }
    service.load(params_with_layout("", 1));
    ASSERT_EQ(service.wait_loaded(120s), ServiceState::Ready) << service.status().error;
    EXPECT_FALSE(service.layout_model().has_value());
    try {
        service.submit_layout({});
        ADD_FAILURE() << "a service without a layout model took a layout request";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("no layout model is loaded"), std::string::npos) << e.what();
    }
}

// A request still waiting when the service unloads ends as stopped; its handle and the page preparation stay
// valid.
TEST(LayoutRequests, UnloadEndsWaitingRequests) {
    EngineService service;
    service.load(params_with_layout(kLayoutRoot + "pp-doclayout-v3-tiny", 1));
    ASSERT_EQ(service.wait_loaded(120s), ServiceState::Ready) << service.status().error;
    const LayoutModelInfo info = *service.layout_model();
    const LayoutPage page{info.prepare(page_image(64, 64, 0)), 64, 64};
    LayoutHandle handle;
    std::thread unloading;
    {
        const EngineThreadHold hold(service);
        handle = service.submit_layout({{page}, {}});
        unloading = std::thread([&] { service.unload(); });
        // Once the service takes no more requests it is stopping; only then does the engine thread go on.
        for (;;) {
            try {
                service.submit_layout({{page}, {}}).cancel();
                std::this_thread::sleep_for(1ms);
            } catch (const Error&) {
                break;
            }
        }
    }
    unloading.join();
    ASSERT_TRUE(handle.finished());
    const LayoutResult r = handle.wait();
    EXPECT_EQ(r.finish, FinishReason::Cancelled);
    EXPECT_EQ(r.error_kind, ErrorKind::Stopped);
    EXPECT_FALSE(service.layout_model().has_value());
    EXPECT_EQ(info.prepare(page_image(32, 48, 1)).size(), page.pixels.size());
}

}  // namespace
