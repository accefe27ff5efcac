// The serving tests' fixture: the tiny PaddleOCR-VL model loaded once a suite on the backend under test, its
// pages and cases with the greedy tokens of each request run alone, and the engine configurations they run.
#pragma once

#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>
#include "engine/backend/backend.h"
#ifdef FOLIO_TEST_CUDA
#include "engine/backend/cuda/make-cuda-backend.h"
#include "kernels/elementwise.h"
#endif
#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/files/weight-source.h"
#include "engine/image/image-preprocess.h"
#include "engine/models/paddleocr-vl/chat-prompt.h"
#include "engine/models/paddleocr-vl/model-files.h"
#include "engine/models/paddleocr-vl/paddleocr-vl.h"
#include "engine/runtime/engine-core.h"
#include "engine/runtime/generator.h"
#include "engine/service/engine-service.h"
#include "engine/service/request-builder.h"
#include "engine/tokenizer/tokenizer.h"
#include "fixture-reference.h"

using namespace folio;

namespace {

struct Case {
    Request request;
    std::vector<int32_t> expected;  // greedy tokens of the request run alone
    FinishReason expected_finish = FinishReason::Length;
};

// A seeded image of noise: its grid has width / 14 x height / 14 patches.
inline Image noise_image(int width, int height, uint32_t seed) {
    Image image = make_image(width, height);
    std::mt19937 rng(seed);
    for (uint8_t& v : image.rgb) {
        v = static_cast<uint8_t>(rng() & 0xff);
    }
    return image;
}

class Serving : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
#ifdef FOLIO_TEST_CUDA
        if (kernels::device_count() == 0) {
            GTEST_SKIP() << "skipped: no CUDA device";
        }
#endif
        previous_sink_ = set_log_sink([](std::string_view) {});
        try {
            set_up_suite();
        } catch (const std::exception& e) {
            // Every test then fails with the reason, and what was made is released at once, in order.
            set_up_error_ = e.what();
            release_suite();
        }
    }

    static void set_up_suite() {
#ifdef FOLIO_TEST_CUDA
        backend_ = make_cuda_backend();
#else
        backend_ = make_cpu_backend(2);
#endif
        files_ = ModelFiles::open(folio::testing::tiny_model_dir());
        tokenizer_ = Tokenizer::load(folio::testing::tiny_model_dir());
        const auto weights = make_file_weight_source(*files_);
        model_ = std::make_unique<PaddleOcrVl>(*backend_, files_->config(), *weights);
        // Four pages of 4, 8, 12 and 16 image tokens.
        const std::vector<std::pair<int, int>> sizes{{56, 56}, {112, 56}, {84, 112}, {112, 112}};
        for (size_t i = 0; i < sizes.size(); ++i) {
            pages_.push_back(noise_image(sizes[i].first, sizes[i].second, static_cast<uint32_t>(i + 1)));
        }
        std::mt19937 rng(7);
        const std::vector<std::string> words{"OCR:", "Table", "Recognition:", "the",   "page",
                                             "of",   "a",     "formula",      "chart", "read",
                                             "text", "2026",  "héllo",        "文档"};
        for (int i = 0; i < 32; ++i) {
            std::vector<Image> images;
            const int n_images = i % 4 == 0 ? 0 : (i % 4 == 3 ? 2 : 1);
            for (int k = 0; k < n_images; ++k) {
                images.push_back(pages_[(i + k) % pages_.size()]);
            }
            std::string task;
            const int n_words = 1 + static_cast<int>(rng() % (i % 3 == 0 ? 40 : 8));
            for (int w = 0; w < n_words; ++w) {
                task += (w ? " " : "") + words[rng() % words.size()];
            }
            Case c;
            c.request = make_request(images, task);
            c.request.max_tokens = 4 + static_cast<int64_t>(rng() % 21);
            cases_.push_back(std::move(c));
        }
        for (Case& c : cases_) {
            GenerateParams params;
            params.max_tokens = static_cast<int>(c.request.max_tokens);
            const GenerateResult alone =
                generate(*model_, c.request.prompt, c.request.images, params, [](int32_t) { return true; });
            c.expected = alone.tokens;
            c.expected_finish = alone.finish;
        }
    }

    void SetUp() override {
        if (!set_up_error_.empty()) {
            FAIL() << "setting up the suite: " << set_up_error_;
        }
        if (!model_) {
            GTEST_SKIP() << "skipped: no CUDA device";
        }
    }

    static void TearDownTestSuite() {
        release_suite();
        set_log_sink(std::move(previous_sink_));
    }

    static void release_suite() {
        cases_.clear();
        pages_.clear();
        model_.reset();
        backend_.reset();
        tokenizer_.reset();
        files_.reset();
    }

    static Request make_request(const std::vector<Image>& images, const std::string& task) {
        Request r;
        r.images = preprocess_images(images, files_->preprocessor());
        std::vector<int64_t> n_tokens;
        for (const ImageGrid& g : r.images.grids) {
            n_tokens.push_back(g.n_patches() / 4);
        }
        const ModelConfig& cfg = files_->config();
        r.prompt = build_chat_prompt(*tokenizer_, *paddleocr_vl_chat_template(files_->dir()),
                                     {cfg.image_token_id, cfg.vision_start_token_id, cfg.vision_end_token_id},
                                     n_tokens, task);
        return r;
    }

    struct RunResult {
        std::vector<std::vector<int32_t>> tokens;
        std::vector<FinishReason> finish;
        EngineStats stats;
    };

    // Submits `per_step` requests before every step, so that new prompts keep joining running decodes.
    static RunResult run(const EngineConfig& config, int per_step) {
        EngineCore engine(*model_, config);
        RunResult result;
        result.tokens.resize(cases_.size());
        result.finish.resize(cases_.size(), FinishReason::Cancelled);
        std::map<int64_t, size_t> index;
        size_t next = 0;
        while (next < cases_.size() || engine.has_unfinished()) {
            for (int k = 0; k < per_step && next < cases_.size(); ++k, ++next) {
                index[engine.submit(cases_[next].request)] = next;
            }
            for (const RequestOutput& out : engine.step()) {
                const size_t i = index.at(out.id);
                result.tokens[i].insert(result.tokens[i].end(), out.tokens.begin(), out.tokens.end());
                if (out.finish) {
                    result.finish[i] = *out.finish;
                }
            }
        }
        result.stats = engine.stats();
        EXPECT_EQ(result.stats.n_free_blocks, result.stats.n_kv_blocks) << "every block is back in the pool";
        return result;
    }

    static void expect_alone_equivalence(const RunResult& r) {
        for (size_t i = 0; i < cases_.size(); ++i) {
            EXPECT_EQ(r.tokens[i], cases_[i].expected) << "request " << i;
            EXPECT_EQ(r.finish[i], cases_[i].expected_finish) << "request " << i;
        }
    }

    static inline std::unique_ptr<ModelFiles> files_;
    static inline std::unique_ptr<Tokenizer> tokenizer_;
    static inline std::unique_ptr<Backend> backend_;
    static inline std::unique_ptr<PaddleOcrVl> model_;
    static inline std::vector<Image> pages_;
    static inline std::vector<Case> cases_;
    static inline LogSink previous_sink_;
    static inline std::string set_up_error_;
};

inline std::string label_of(bool use_cudagraph, bool async_scheduling) {
    return std::string("use_cudagraph ") + (use_cudagraph ? "on" : "off") + ", async_scheduling " +
           (async_scheduling ? "on" : "off");
}

inline EngineConfig base_config() {
    EngineConfig c;
    c.max_model_len = 512;
    c.max_num_seqs = 32;
    c.block_size = 16;
    c.enable_prefix_caching = false;
    c.num_gpu_blocks_override = 512;
    return c;
}

}  // namespace
