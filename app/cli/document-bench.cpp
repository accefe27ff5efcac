#include "app/cli/document-bench.h"

#include <QStringList>
#include <algorithm>
#include <chrono>
#include <vector>

#include "app/cli/cli-service.h"
#include "app/cli/pipeline-flags.h"
#include "app/documents/pdf-document.h"
#include "app/options/engine-options.h"
#include "app/pipeline/document-pipeline.h"
#include "app/pipeline/source-input.h"
#include "engine/models/model-registry.h"

namespace folio::cli {

namespace {

// What the benchmark keeps of each page: its timings and blocks, and whether it failed; and the first page as
// a user sees it: when its boxes came and when it was done after the run's start, and its blocks' first token
// after their submission.
class BenchObserver final : public PipelineObserver {
public:
    void pageLaidOut(const DocumentInfo& /*document*/, const PageResult& /*page*/) override {
        if (laid_out_ms_ < 0) {
            laid_out_ms_ = ms_since_start();
        }
    }
    void pageFinished(const DocumentInfo& /*document*/, const PageResult& page) override {
        if (done_ms_ < 0) {
            done_ms_ = ms_since_start();
            first_token_ms_ = page.timings.firstTokenMs;
        }
        if (!page.error.isEmpty()) {
            errors.push_back(page.error.toStdString());
            return;
        }
        timings.push_back(page.timings);
        n_blocks += static_cast<int64_t>(page.blocks.size());
        for (const BlockResult& block : page.blocks) {
            if (!block.error.isEmpty()) {
                errors.push_back(block.error.toStdString());
            }
        }
    }
    void documentFinished(const DocumentInfo& document, const DocumentOutcome& outcome) override {
        if (!outcome.error.isEmpty()) {
            errors.push_back(document.inputPath.toStdString() + ": " + outcome.error.toStdString());
        }
    }

    nlohmann::json first_page() const {
        return {{"laid_out_ms", laid_out_ms_},
                {"first_token_after_submission_ms", first_token_ms_},
                {"done_ms", done_ms_}};
    }

    std::vector<PageTimings> timings;
    int64_t n_blocks = 0;
    std::vector<std::string> errors;

private:
    double ms_since_start() const {
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
    }

    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    double laid_out_ms_ = -1;
    double first_token_ms_ = -1;
    double done_ms_ = -1;
};

// Mean and median of one timing over the pages, in milliseconds.
nlohmann::json spread(const std::vector<PageTimings>& pages, double PageTimings::*field) {
    std::vector<double> values;
    for (const PageTimings& t : pages) {
        values.push_back(t.*field);
    }
    if (values.empty()) {
        return {{"mean", 0.0}, {"median", 0.0}, {"total_s", 0.0}};
    }
    double total = 0;
    for (const double v : values) {
        total += v;
    }
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2),
                     values.end());
    return {{"mean", total / static_cast<double>(values.size())},
            {"median", values[values.size() / 2]},
            {"total_s", total / 1000.0}};
}

// PDFs only, so that the benchmark runs without OpenCV's codecs.
DocumentOpener pdf_opener(const DocumentOptions& options, const std::string& pages) {
    return sourceOpener(
        [options](const QString& path) { return std::make_unique<PdfDocument>(path, options); },
        PageRange::parse(pages));
}

}  // namespace

nlohmann::json bench_documents(const Options& opt) {
    QStringList inputs;
    for (const std::string& path : opt.all("--document")) {
        inputs << QString::fromStdString(path);
    }
    if (!opt.has("--layout-model")) {
        fail("--document needs --layout-model DIR: the pipeline lays out each page");
    }
    const bool random_weights = !opt.has("--model");
    if (random_weights && !opt.has("--tokenizer")) {
        fail(
            "--document with random weights needs --tokenizer DIR (a model folder's tokenizer) for the "
            "prompts");
    }
    const int64_t block_tokens = opt.integer("--block-tokens", 60);
    if (block_tokens < 1) {
        fail("--block-tokens must be at least 1, got ", block_tokens);
    }
    const DocumentOptions document_options = document_options_from(opt);
    PipelineOptions options;
    options.recognition.maxNewTokens = static_cast<int>(block_tokens);

    const std::filesystem::path model_dir = random_weights ? "" : opt.text("--model");
    const EngineOptions engine_options = parse_engine_options(opt, describe_model(model_dir));
    apply_pipeline_flags(opt, engine_options, options);
    EngineService service;
    const auto load_start = std::chrono::steady_clock::now();
    load_service(service, opt, model_dir, engine_options, std::filesystem::path(opt.text("--layout-model")),
                 options.layoutBatch);
    const double load_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();

    // A first page on its own brings every kernel and product plan in (its timings are the cold start's);
    // then the whole run, timed.
    BenchObserver warm_up;
    DocumentPipeline(service, pdf_opener(document_options, "1"), options).run(inputs.mid(0, 1), warm_up);
    BenchObserver observer;
    DocumentPipeline pipeline(service, pdf_opener(document_options, "all"), options);
    const PipelineSummary summary = pipeline.run(inputs, observer);

    int64_t peak_bytes = 0;
    std::string device;
    service.run_on_engine_thread([&](EngineContext& context) {
        peak_bytes = context.backend.memory_stats().peak;
        device = context.backend.name();
    });
    const std::vector<PageTimings>& t = observer.timings;
    const auto n_pages = static_cast<double>(std::max<int64_t>(summary.pages, 1));
    const int render_threads = renderThreadCount(options);
    double rendering = 0;  // on the render threads
    double reading = 0;    // on the reading thread
    for (const PageTimings& page : t) {
        rendering += page.renderMs + page.layoutPreprocessMs;
        reading += page.layoutMs + page.blocksMs;
    }
    nlohmann::json errors = nlohmann::json::array();
    for (size_t i = 0; i < std::min<size_t>(observer.errors.size(), 5); ++i) {
        errors.push_back(observer.errors[i]);
    }
    return {
        {"device", device},
        {"model",
         random_weights ? "full-size PaddleOCR-VL architecture, random weights" : model_dir.string()},
        {"layout_model", opt.text("--layout-model")},
        {"load_seconds", load_seconds},
        // The first page of the first document, right after loading and then at the timed run's start.
        {"first_page_cold", warm_up.first_page()},
        {"first_page", observer.first_page()},
        {"documents", summary.documents},
        {"pages", summary.pages},
        {"pages_failed", summary.pagesFailed},
        {"blocks", summary.blocks},
        {"blocks_failed", summary.blocksFailed},
        {"blocks_per_page", static_cast<double>(summary.blocks) / n_pages},
        {"block_tokens", block_tokens},
        {"tokens", summary.tokens},
        {"seconds", summary.seconds},
        {"pages_per_second", static_cast<double>(summary.pages) / summary.seconds},
        {"tokens_per_second", static_cast<double>(summary.tokens) / summary.seconds},
        {"dpi", document_options.dpi},
        {"layout_batch", options.layoutBatch},
        {"pages_in_flight", options.maxPagesInFlight},
        {"render_threads", render_threads},
        // Each page's steps: rendering and the layout model's preprocessing on the render threads, layout
        // (with the wait for the engine thread) and cutting blocks on the reading thread. The share of the
        // run each side spent busy: near 1, it is what holds the run back.
        {"page_ms",
         {{"render", spread(t, &PageTimings::renderMs)},
          {"layout_preprocess", spread(t, &PageTimings::layoutPreprocessMs)},
          {"layout", spread(t, &PageTimings::layoutMs)},
          {"blocks", spread(t, &PageTimings::blocksMs)},
          {"recognition", spread(t, &PageTimings::recognitionMs)},
          {"first_token", spread(t, &PageTimings::firstTokenMs)}}},
        {"render_threads_busy_fraction", rendering / 1000.0 / summary.seconds / render_threads},
        {"reading_thread_busy_fraction", reading / 1000.0 / summary.seconds},
        {"peak_bytes", peak_bytes},
        {"errors", errors},
    };
}

}  // namespace folio::cli
