// The settings as the running app follows them, on the fixture models (CPU backend) with the main window
// under Xvfb: the settings' model loads at start, documents, layout and export take their values at once, an
// engine option rebuilds the engine with its models, a new quantization loads them again, and an engine
// change made while a document runs waits for the run to end.
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QMenu>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <memory>

#include "app/document-model/document-model.h"
#include "app/i18n/translation-loader.h"
#include "app/jobs/engine-host.h"
#include "app/jobs/job-controller.h"
#include "app/settings/compute-devices.h"
#include "app/settings/error-setting.h"
#include "app/settings/settings.h"
#include "engine/models/model-registry.h"
#include "fixture-engine.h"
#include "ui/main-window/error-panel.h"
#include "ui/main-window/main-window.h"
#include "ui/main-window/settings-binding.h"
#include "ui/result-view/result-view.h"

using namespace folio;

class TestSettingsBinding : public QObject {
    Q_OBJECT

    QTemporaryDir tmp_;
    std::unique_ptr<Settings> settings_;
    DocumentModel* model_ = nullptr;
    EngineHost* engine_ = nullptr;
    JobController* jobs_ = nullptr;
    std::unique_ptr<MainWindow> window_;
    std::unique_ptr<SettingsBinding> binding_;

    // The current values with a change applied; fails the test where the settings refuse them.
    void change(const std::function<void(SettingsValues&)>& edit) {
        SettingsValues v = settings_->values();
        edit(v);
        const QList<SettingsProblem> problems = settings_->apply(v);
        QVERIFY2(problems.isEmpty(), problems.isEmpty() ? "" : qPrintable(problems.front().message));
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        settings_ = std::make_unique<Settings>(tmp_.filePath(QStringLiteral("folio.ini")));
        SettingsValues v = Settings::defaults(QStringLiteral("cpu"));
        v.model = QString::fromUtf8(test::kRecognitionDir);
        v.layoutModel = QString::fromUtf8(test::kLayoutDir);
        v.maxModelLen = 4096;
        v.maxNumSeqs = 8;
        v.renderDpi = 120;
        QVERIFY(settings_->apply(v).isEmpty());

        model_ = new DocumentModel(this);
        engine_ = new EngineHost(this);
        jobs_ = new JobController(engine_->service(), *model_, this);
        window_ = std::make_unique<MainWindow>(*model_, *jobs_, *engine_);
        window_->setRunOnOpen(false);
        SettingsBinding::Overrides overrides;
        overrides.cpuThreads = 2;
        binding_ = std::make_unique<SettingsBinding>(*settings_, *window_, *engine_, *jobs_, overrides);
    }

    void startLoadsTheSettingsModelAndAppliesTheRest() {
        QSignalSpy loaded(engine_, &EngineHost::loaded);
        QSignalSpy failed(engine_, &EngineHost::loadFailed);
        binding_->start();
        QTRY_VERIFY_WITH_TIMEOUT(!loaded.isEmpty() || !failed.isEmpty(), 60000);
        QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.front().front().toString()));
        QCOMPARE(engine_->models().recognition, QString::fromUtf8(test::kRecognitionDir));
        QCOMPARE(engine_->models().layout, QString::fromUtf8(test::kLayoutDir));
        QCOMPARE(engine_->service().limits().max_model_len, 4096);
        QCOMPARE(binding_->device(), QStringLiteral("cpu"));
        QCOMPARE(jobs_->documentOptions().dpi, 120);
        QVERIFY(jobs_->pipelineOptions().useLayout);
        QCOMPARE(window_->exportFormats(), QList<ExportFormat>({ExportFormat::Markdown, ExportFormat::Json}));
    }

    void documentSettingsApplyWithoutTheEngine() {
        QSignalSpy started(binding_.get(), &SettingsBinding::engineChangeStarted);
        change([](SettingsValues& v) {
            v.renderDpi = 150;
            v.layoutThresholds = {{QStringLiteral("table"), 0.3}};
            v.markdownLabels = {QStringLiteral("table"), QStringLiteral("text")};
            v.exportFormats = {QStringLiteral("html"), QStringLiteral("xlsx")};
        });
        QCOMPARE(jobs_->documentOptions().dpi, 150);
        QCOMPARE(jobs_->pipelineOptions().labelThresholds.size(), size_t{1});
        QCOMPARE(jobs_->pipelineOptions().labelThresholds.at("table"), 0.3F);
        QCOMPARE(window_->exportFormats(), QList<ExportFormat>({ExportFormat::Html, ExportFormat::Xlsx}));
        QCOMPARE(window_->resultView()->markdownLabels(),
                 QSet<QString>({QStringLiteral("table"), QStringLiteral("text")}));
        QTest::qWait(200);
        QCOMPARE(started.count(), 0);
        QCOMPARE(engine_->state(), ServiceState::Ready);
    }

    void anEngineOptionRebuildsTheEngineWithItsModels() {
        QSignalSpy loaded(engine_, &EngineHost::loaded);
        QSignalSpy reconfigured(engine_, &EngineHost::reconfigured);
        change([](SettingsValues& v) { v.maxModelLen = 2048; });
        QVERIFY(reconfigured.wait(60000));
        QCOMPARE(engine_->service().limits().max_model_len, 2048);
        QCOMPARE(loaded.count(), 0);  // the models stayed
        QVERIFY(!jobs_->isHeld());
    }

    void aNewQuantizationLoadsTheModelsAgain() {
        QSignalSpy loaded(engine_, &EngineHost::loaded);
        QSignalSpy started(binding_.get(), &SettingsBinding::engineChangeStarted);
        change([](SettingsValues& v) { v.quantization = QStringLiteral("wint8"); });
        QCOMPARE(started.count(), 1);
        QCOMPARE(started.front().front().value<EngineImpact>(), EngineImpact::Reload);
        QVERIFY(loaded.wait(60000));
        QCOMPARE(engine_->models().recognition, QString::fromUtf8(test::kRecognitionDir));
        QCOMPARE(engine_->service().limits().max_model_len, 2048);
    }

    // A chat model in the settings loads beside the document models, in a chat slot the chat panel talks to;
    // clearing it (and none installed) loads them alone.
    void aChatModelLoadsBesideTheDocumentModels() {
        QSignalSpy loaded(engine_, &EngineHost::loaded);
        change([](SettingsValues& v) { v.chatModel = QString::fromUtf8(test::kChatDir); });
        QVERIFY(loaded.wait(60000));
        QCOMPARE(engine_->models().recognition, QString::fromUtf8(test::kRecognitionDir));
        QCOMPARE(engine_->models().chat, QString::fromUtf8(test::kChatDir));
        const std::vector<ModelDescription> models = engine_->service().models();
        QCOMPARE(models.size(), size_t{3});
        QCOMPARE(models[1].role, ModelRole::Chat);
        QCOMPARE(models[1].family, std::string("ernie-4.5-vl"));
        change([](SettingsValues& v) { v.chatModel.clear(); });
        QVERIFY(loaded.wait(60000));
        QVERIFY(engine_->models().chat.isEmpty());
        QCOMPARE(engine_->service().models().size(), size_t{2});
    }

    void anEngineChangeWaitsForTheRunToEnd() {
        const QString path = tmp_.filePath(QStringLiteral("ten.pdf"));
        test::writeTestPdf(path, 10);
        jobs_->setPipelineOptions([&] {
            PipelineOptions o = test::fixturePipelineOptions(true);
            o.labelThresholds = jobs_->pipelineOptions().labelThresholds;
            return o;
        }());
        window_->openFiles({path});
        const int doc = window_->currentDocument();
        QSignalSpy finished(jobs_, &JobController::jobFinished);
        QSignalSpy reconfigured(engine_, &EngineHost::reconfigured);
        jobs_->run({doc});
        QVERIFY(jobs_->isRunning());
        change([](SettingsValues& v) { v.maxNumSeqs = 4; });
        QCOMPARE(binding_->pending(), EngineImpact::Reconfigure);
        QVERIFY(finished.wait(120000));
        const auto summary = finished.front().front().value<PipelineSummary>();
        QCOMPARE(summary.pages, 10);
        QCOMPARE(summary.blocksFailed, 0);  // no request was stopped by the change
        QVERIFY(reconfigured.wait(60000));
        QCOMPARE(binding_->pending(), EngineImpact::None);
    }

    // A first start: no model in the settings and none installed, so the window asks for one (the app opens
    // its model manager on that signal).
    void aFirstStartWithoutModelsAsksForOne() {
        const QString empty = tmp_.filePath(QStringLiteral("empty"));
        QVERIFY(QDir().mkpath(empty));
        qputenv("HF_HUB_CACHE", empty.toUtf8());
        qputenv("XDG_DATA_HOME", empty.toUtf8());
        Settings settings(tmp_.filePath(QStringLiteral("first.ini")));
        QVERIFY(settings.values().model.isEmpty());
        DocumentModel model;
        EngineHost engine;
        JobController jobs(engine.service(), model);
        MainWindow window(model, jobs, engine);
        SettingsBinding binding(settings, window, engine, jobs, {});
        QSignalSpy missing(&window, &MainWindow::modelsMissing);
        binding.start();
        QVERIFY(missing.wait(20000));
        QCOMPARE(engine.state(), ServiceState::Empty);
        QVERIFY(window.errorPanel()->count() > 0);
        // Where no GPU was found, running on the CPU is said once, with the device setting to change.
        QStringList cpuNotes;
        for (int row = 0; row < window.errorPanel()->count(); ++row) {
            if (window.errorPanel()->message(row).contains(QStringLiteral("Folio runs on the CPU"))) {
                cpuNotes << window.errorPanel()->setting(row);
            }
        }
        const QList<ComputeDevice> devices = computeDevices();
        const bool gpu = std::any_of(devices.begin(), devices.end(), [](const ComputeDevice& d) {
            return d.id.startsWith(QStringLiteral("cuda"));
        });
        QCOMPARE(cpuNotes, gpu ? QStringList() : QStringList{QLatin1String(setting_key::kDevice)});
        // Not where the CPU was asked for.
        SettingsBinding::Overrides cpu;
        cpu.device = QStringLiteral("cpu");
        MainWindow asked(model, jobs, engine);
        SettingsBinding chosen(settings, asked, engine, jobs, cpu);
        chosen.start();
        for (int row = 0; row < asked.errorPanel()->count(); ++row) {
            QVERIFY(!asked.errorPanel()->message(row).contains(QStringLiteral("Folio runs on the CPU")));
        }
    }

    // A context length beyond the model's (kept from a model of a longer one) loads with the model's own,
    // and says so with the setting, rather than failing the load.
    void aContextLengthBeyondTheModelsIsCappedAndSaid() {
        const int64_t context = describe_model(test::kRecognitionDir).max_context;
        Settings settings(tmp_.filePath(QStringLiteral("long.ini")));
        SettingsValues v = settings_->values();
        v.maxModelLen = static_cast<int>(context * 4);
        QVERIFY(settings.apply(v).isEmpty());
        DocumentModel model;
        EngineHost engine;
        JobController jobs(engine.service(), model);
        MainWindow window(model, jobs, engine);
        SettingsBinding::Overrides overrides;
        overrides.cpuThreads = 2;
        SettingsBinding binding(settings, window, engine, jobs, overrides);
        QSignalSpy loaded(&engine, &EngineHost::loaded);
        QSignalSpy failed(&engine, &EngineHost::loadFailed);
        binding.start();
        QTRY_VERIFY_WITH_TIMEOUT(!loaded.isEmpty() || !failed.isEmpty(), 60000);
        QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.front().front().toString()));
        QCOMPARE(engine.service().limits().max_model_len, context);
        QStringList notes;
        for (int row = 0; row < window.errorPanel()->count(); ++row) {
            if (window.errorPanel()->message(row).contains(QStringLiteral("Context length"))) {
                QVERIFY(window.errorPanel()->message(row).contains(QString::number(context * 4)));
                notes << window.errorPanel()->setting(row);
            }
        }
        QCOMPARE(notes, QStringList{QLatin1String(setting_key::kContextLength)});
    }

    // The interface language switches at once, the main window's menus and actions with it.
    void theMainWindowFollowsTheLanguage() {
        TranslationLoader translations;
        QCOMPARE(translations.setLanguage(QStringLiteral("zh_CN")), QStringLiteral("zh_CN"));
        QTRY_COMPARE(window_->action(QStringLiteral("run"))->text(), QStringLiteral("运行(&R)"));
        QTRY_COMPARE(window_->fileMenu()->title(), QStringLiteral("文件(&F)"));
        QTRY_COMPARE(window_->resultView()->tabs()->tabText(0), QStringLiteral("文档"));
        QTRY_COMPARE(window_->errorPanel()->windowTitle(), QStringLiteral("问题"));
        QCOMPARE(translations.setLanguage(QStringLiteral("en")), QStringLiteral("en"));
        QTRY_COMPARE(window_->action(QStringLiteral("run"))->text(), QStringLiteral("&Run"));
        QTRY_COMPARE(window_->fileMenu()->title(), QStringLiteral("&File"));
        QTRY_COMPARE(window_->resultView()->tabs()->tabText(0), QStringLiteral("Document"));
    }

    void cleanupTestCase() {
        binding_.reset();
        window_.reset();
    }
};

int main(int argc, char** argv) {
    QCoreApplication::setAttribute(Qt::AA_ShareOpenGLContexts);
    QApplication app(argc, argv);
    QStandardPaths::setTestModeEnabled(true);
    TestSettingsBinding test;
    return QTest::qExec(&test, argc, argv);
}

#include "test-settings-binding.moc"
