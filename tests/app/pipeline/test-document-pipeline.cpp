// The document pipeline on the engine service with the small fixture models: pages come out in order, with
// blocks, tasks and text; failures stay with their page or document; cancel stops; memory stays bounded.
// Built twice: on the CPU backend, and with FOLIO_TEST_CUDA on the CUDA backend (skipped where no CUDA device
// is present), where the layout model's batches run between recognition steps on the GPU.
#include <QPainter>
#include <QRegularExpression>
#include <QTest>
#include <chrono>
#include <map>
#include <memory>
#include <stdexcept>

#include "engine/backend/backend.h"
#ifdef FOLIO_TEST_CUDA
#include "engine/backend/cuda/make-cuda-backend.h"
#include "kernels/elementwise.h"
#endif
#include "app/pipeline/document-pipeline.h"
#include "engine/common/error.h"
#include "engine/layout/layout-labels.h"

using namespace folio;
using namespace std::chrono_literals;

namespace {

const char* const kRecognitionDir = FOLIO_FIXTURES_DIR "/paddleocr-vl-tiny";
const char* const kLayoutDir = FOLIO_FIXTURES_DIR "/../layout/pp-doclayout-v3-tiny";

QImage makePage(int index) {
    QImage page(320 + 16 * index, 240, QImage::Format_RGB888);
    page.fill(Qt::white);
    QPainter painter(&page);
    painter.fillRect(20, 20, 200, 30, Qt::black);
    painter.fillRect(20, 80, 260, 100, QColor(60, 60, 60));
    for (int line = 0; line <= index % 4; ++line) {
        painter.fillRect(30, 195 + 8 * line, 120 + 20 * line, 4, Qt::black);
    }
    return page;
}

// A document of generated pages; one page may fail to render.
class FakeDocument final : public DocumentInput {
public:
    FakeDocument(QString path, int n_pages, int failing)
        : path_(std::move(path)), n_pages_(n_pages), failing_(failing) {}
    QString path() const override { return path_; }
    int pageCount() const override { return n_pages_; }
    int selectedCount() const override { return n_pages_; }
    int pageIndex(int i) const override { return n_pages_ > 1 ? i : -1; }
    PageInput page(int i) override {
        if (i == failing_) {
            fail(path_.toStdString(), ": page ", i + 1, " is damaged");
        }
        PageInput input;
        input.image = makePage(i);
        input.pageIndex = pageIndex(i);
        return input;
    }

private:
    QString path_;
    int n_pages_;
    int failing_;
};

// doc-N.pdf: N pages; damaged-N.pdf: N pages, the second one failing; anything else cannot be opened.
std::unique_ptr<DocumentInput> openFake(const QString& path) {
    const QString name = path.section('.', 0, 0);
    const int n = name.section('-', 1).toInt();
    if (name.startsWith(QLatin1String("doc-"))) {
        return std::make_unique<FakeDocument>(path, n, -1);
    }
    if (name.startsWith(QLatin1String("damaged-"))) {
        return std::make_unique<FakeDocument>(path, n, 1);
    }
    fail(path.toStdString(), ": not a PDF");
}

struct Recorder final : PipelineObserver {
    QStringList events;
    std::vector<PageResult> pages;
    std::map<QString, DocumentOutcome> outcomes;
    int laidOut = 0;
    int maxHeld = 0;
    int blockTexts = 0;
    PipelineProgress lastProgress;
    std::function<void()> onPage;

    void documentStarted(const DocumentInfo& document) override { events << "start " + document.stem; }
    void pageLaidOut(const DocumentInfo&, const PageResult&) override {
        ++laidOut;
        maxHeld = std::max(maxHeld, laidOut - static_cast<int>(pages.size()));
    }
    void blockText(const DocumentInfo&, int, int, const QString&) override { ++blockTexts; }
    void progressChanged(const PipelineProgress& progress) override { lastProgress = progress; }
    void pageFinished(const DocumentInfo& document, const PageResult& page) override {
        events << QStringLiteral("page %1 %2").arg(document.stem).arg(page.pageIndex);
        pages.push_back(page);
        if (onPage) {
            onPage();
        }
    }
    void documentFinished(const DocumentInfo& document, const DocumentOutcome& outcome) override {
        events << "end " + document.stem;
        outcomes[document.stem] = outcome;
    }
};

}  // namespace

class TestDocumentPipeline : public QObject {
    Q_OBJECT

    EngineService service_;

    PipelineOptions options(bool layout) const {
        PipelineOptions o;
        o.useLayout = layout;
        o.recognition.maxNewTokens = 6;
        o.recognition.pixels = {28 * 28 * 4, 28 * 28 * 32};
        return o;
    }

    // With layout, every candidate of the random fixture model counting (thresholds at 0).
    PipelineOptions everyCandidate() const {
        PipelineOptions o = options(true);
        LayoutRules rules = paddleocr_vl_1_5_layout_rules();
        std::fill(rules.thresholds.begin(), rules.thresholds.end(), 0.0F);
        rules.default_threshold = 0.0F;
        o.layoutRules = rules;
        return o;
    }

private Q_SLOTS:
    void initTestCase() {
        ServiceParams params;
#ifdef FOLIO_TEST_CUDA
        if (kernels::device_count() == 0) {
            QSKIP("skipped: no CUDA device");
        }
        params.device.make_backend = [] { return make_cuda_backend(); };
#else
        params.device.make_backend = [] { return make_cpu_backend(2); };
#endif
        params.models.push_back({ModelRole::Recognition, kRecognitionDir, {}});
        params.models.push_back({ModelRole::Layout, kLayoutDir, {}});
        params.engine.max_model_len = 4096;
        service_.load(params);
        QCOMPARE(service_.wait_loaded(120s), ServiceState::Ready);
    }

    void pagesInOrderWithoutLayout_data() {
        QTest::addColumn<int>("renderThreads");
        QTest::newRow("one render thread") << 1;
        QTest::newRow("three render threads") << 3;
    }
    void pagesInOrderWithoutLayout() {
        QFETCH(int, renderThreads);
        PipelineOptions o = options(false);
        o.renderThreads = renderThreads;
        DocumentPipeline pipeline(service_, openFake, o);
        Recorder recorder;
        const PipelineSummary summary = pipeline.run({"doc-3.pdf", "doc-1.png"}, recorder);
        // Documents start as soon as they are opened; pages and ends come in order.
        QStringList finished = recorder.events.filter(QRegularExpression("^(page|end) "));
        QCOMPARE(finished, QStringList({"page doc-3 0", "page doc-3 1", "page doc-3 2", "end doc-3",
                                        "page doc-1 -1", "end doc-1"}));
        QVERIFY(recorder.events.indexOf("start doc-3") < recorder.events.indexOf("page doc-3 0"));
        QVERIFY(recorder.events.indexOf("start doc-1") < recorder.events.indexOf("page doc-1 -1"));
        QCOMPARE(summary.pages, 4);
        QCOMPARE(summary.blocks, 4);
        QCOMPARE(summary.blocksFailed, 0);
        QVERIFY(!summary.cancelled);
        for (const PageResult& page : recorder.pages) {
            QCOMPARE(page.blocks.size(), size_t{1});
            const BlockResult& block = page.blocks.front();
            QCOMPARE(block.task, QStringLiteral("OCR:"));
            QCOMPARE(block.box.x2, page.width);
            QCOMPARE(block.box.y2, page.height);
            QVERIFY(block.nTokens >= 1 && block.nTokens <= 6);
            QVERIFY(block.error.isEmpty());
            QCOMPARE(page.image.size(), QSize(page.width, page.height));
            // The page's first token comes after its blocks were submitted and no later than its last block.
            QVERIFY(page.timings.firstTokenMs > 0);
            QVERIFY(page.timings.firstTokenMs <= page.timings.recognitionMs);
        }
        QCOMPARE(summary.tokens, [&] {
            int64_t n = 0;
            for (const PageResult& page : recorder.pages) {
                n += page.blocks.front().nTokens;
            }
            return n;
        }());
    }

    void layoutBlocksGetTheirTasks() {
        PipelineOptions o = everyCandidate();
        o.recognition.chartRecognition = true;  // the fixture model sees charts everywhere
        o.renderThreads = 3;                    // pages rendered and preprocessed ahead, in parallel
        DocumentPipeline pipeline(service_, openFake, o);
        Recorder recorder;
        const PipelineSummary summary = pipeline.run({"doc-3.pdf"}, recorder);
        QCOMPARE(summary.pages, 3);
        QCOMPARE(recorder.laidOut, 3);
        const RecognitionOptions& recognition = o.recognition;
        int recognised = 0;  // blocks read, a stacked group's followers included
        int requests = 0;
        for (const PageResult& page : recorder.pages) {
            QVERIFY(page.error.isEmpty());
            for (size_t i = 0; i < page.blocks.size(); ++i) {
                const BlockResult& block = page.blocks[i];
                QCOMPARE(block.id, static_cast<int>(i));
                QVERIFY(block.box.x1 >= 0 && block.box.x2 <= page.width && block.box.y2 <= page.height);
                const bool follower = block.groupId >= 0 && block.groupId != block.id;
                QCOMPARE(block.task.isEmpty(), taskForLabel(block.label, recognition).isEmpty() || follower);
                if (!block.task.isEmpty()) {
                    ++requests;
                    QVERIFY(block.nTokens >= 1);
                }
                if (!block.task.isEmpty() || follower) {
                    ++recognised;
                }
                QCOMPARE(block.image.isNull(), !savedAsImage(block.label, recognition));
            }
        }
        // The first page went through layout alone, the next ones in batches of at most layoutBatch.
        QCOMPARE(recorder.pages.front().timings.layoutBatchPages, 1);
        for (const PageResult& page : recorder.pages) {
            QVERIFY(page.timings.layoutBatchPages >= 1 && page.timings.layoutBatchPages <= o.layoutBatch);
        }
        // Progress and the summary count the blocks a user sees, not the requests stacking made of them.
        QCOMPARE(summary.blocks, recognised);
        QCOMPARE(recorder.lastProgress.blocksTotal, recognised);
        QCOMPARE(recorder.lastProgress.blocksDone, recognised);
        QVERIFY(requests > 0);
    }

    void failuresStayWithTheirDocumentOrPage() {
        DocumentPipeline pipeline(service_, openFake, options(false));
        Recorder recorder;
        const PipelineSummary summary = pipeline.run({"doc-1.pdf", "missing.pdf", "damaged-3.pdf"}, recorder);
        QCOMPARE(summary.documents, 3);
        QCOMPARE(summary.documentsFailed, 1);
        QVERIFY(recorder.outcomes.at("missing").error.contains("missing.pdf: not a PDF"));
        QCOMPARE(recorder.outcomes.at("damaged-3").pagesDone, 2);
        QCOMPARE(recorder.outcomes.at("damaged-3").pagesFailed, 1);
        QCOMPARE(summary.pages, 3);
        QCOMPARE(summary.pagesFailed, 1);
        const PageResult& damaged = recorder.pages.at(2);
        QCOMPARE(damaged.pageIndex, 1);
        QVERIFY(damaged.error.contains("page 2 is damaged"));
        QVERIFY(damaged.blocks.empty());
    }

    void cancelStopsTheRun() {
        DocumentPipeline pipeline(service_, openFake, options(false));
        Recorder recorder;
        recorder.onPage = [&] { pipeline.cancel(); };
        const PipelineSummary summary = pipeline.run({"doc-40.pdf", "doc-2.pdf"}, recorder);
        QVERIFY(summary.cancelled);
        QVERIFY(summary.pages < 40);
        QVERIFY(recorder.outcomes.at("doc-40").cancelled);
        QVERIFY(!recorder.outcomes.contains("doc-2"));
        // Blocks ended by the cancel are not counted as done.
        QVERIFY(recorder.lastProgress.blocksDone < recorder.lastProgress.blocksTotal);
        // The service is free again: a new run goes through.
        DocumentPipeline again(service_, openFake, options(false));
        Recorder second;
        QCOMPARE(again.run({"doc-1.pdf"}, second).pages, 1);
    }

    // An observer that throws ends the run with its error: reading stops, the requests still running end with
    // the group's cancel, and the service takes the next run.
    void anObserverThatThrowsEndsTheRun() {
        DocumentPipeline pipeline(service_, openFake, options(false));
        Recorder recorder;
        recorder.onPage = [] { throw std::runtime_error("the view went away"); };
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, pipeline.run({"doc-12.pdf"}, recorder));
        QCOMPARE(recorder.pages.size(), size_t{1});
        QVERIFY(pipeline.cancelled());
        const auto idle = [&] {
            const ServiceStats stats = service_.stats();
            return stats.n_preparing == 0 && stats.n_running[0] + stats.n_running[1] == 0 &&
                   stats.n_waiting[0] + stats.n_waiting[1] == 0;
        };
        QTRY_VERIFY_WITH_TIMEOUT(idle(), 10000);
        DocumentPipeline again(service_, openFake, options(true));
        Recorder second;
        QCOMPARE(again.run({"doc-2.pdf"}, second).pages, 2);
    }

    void pagesInFlightAreBounded() {
        PipelineOptions o = options(false);
        o.maxPagesInFlight = 2;
        DocumentPipeline pipeline(service_, openFake, o);
        Recorder recorder;
        QCOMPARE(pipeline.run({"doc-8.pdf"}, recorder).pages, 8);
        QVERIFY(recorder.maxHeld <= 2);
        QVERIFY(recorder.maxHeld >= 1);
    }

    void refusesBadOptions() {
        PipelineOptions o = options(false);
        o.recognition.pixels = {100, 10};
        QVERIFY_THROWS_EXCEPTION(Error, DocumentPipeline(service_, openFake, o));
        o = options(false);
        o.maxPagesInFlight = 0;
        QVERIFY_THROWS_EXCEPTION(Error, DocumentPipeline(service_, openFake, o));
        o = options(false);
        o.renderThreads = -1;
        QVERIFY_THROWS_EXCEPTION(Error, DocumentPipeline(service_, openFake, o));
        o.renderThreads = 65;
        QVERIFY_THROWS_EXCEPTION(Error, DocumentPipeline(service_, openFake, o));
        o = options(true);
        o.labelThresholds = {{"no_such_label", 0.5F}};
        QVERIFY_THROWS_EXCEPTION(Error, DocumentPipeline(service_, openFake, o));
        o.labelThresholds = {{"text", 1.5F}};
        QVERIFY_THROWS_EXCEPTION(Error, DocumentPipeline(service_, openFake, o));
    }

    // A label's threshold from the settings replaces the rules' own: at 1 for every label nothing is kept.
    void labelThresholdsOverTheRules() {
        PipelineOptions o = everyCandidate();
        for (const std::string_view label : kLayoutLabels) {
            o.labelThresholds.emplace(std::string(label), 1.0F);
        }
        DocumentPipeline strict(service_, openFake, o);
        Recorder recorder;
        strict.run({"doc-2.pdf"}, recorder);
        QCOMPARE(recorder.pages.size(), size_t{2});
        for (const PageResult& page : recorder.pages) {
            QVERIFY(page.blocks.empty());
        }
        o.labelThresholds.clear();
        DocumentPipeline open(service_, openFake, o);
        Recorder kept;
        open.run({"doc-2.pdf"}, kept);
        QVERIFY(!kept.pages.front().blocks.empty());
    }
};

QTEST_GUILESS_MAIN(TestDocumentPipeline)
#include "test-document-pipeline.moc"
