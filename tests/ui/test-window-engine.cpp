// The engine as the main window shows it, with the fixture models on the CPU: the status bar with the models
// on several devices, documents waiting for a model that failed to load, a context length capped at the
// model's, and engine errors that offer the setting that fixes them. Needs a display (Xvfb), as the main
// window's result view is Qt WebEngine.
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDropEvent>
#include <QElapsedTimer>
#include <QFile>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QInputDialog>
#include <QListWidget>
#include <QMap>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScreen>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <QTimer>
#include <QWebEngineScript>
#include <QWebEngineSettings>
#include <QWebEngineView>
#include <algorithm>
#include <memory>
#include "app/document-model/document-model.h"
#include "app/document-model/session-file.h"
#include "app/jobs/document-exporter.h"
#include "app/jobs/job-controller.h"
#include "app/settings/error-setting.h"
#include "engine/models/model-registry.h"
#include "fixture-engine.h"
#include "screenshot.h"
#include "ui/main-window/engine-status.h"
#include "ui/main-window/error-panel.h"
#include "ui/main-window/main-window.h"
#include "ui/page-view/block-item.h"
#include "ui/page-view/page-view.h"
#include "ui/result-view/result-view.h"

using namespace folio;

class TestWindowEngine : public QObject {
    Q_OBJECT

    QTemporaryDir tmp_;

private Q_SLOTS:
    // With the models on several devices the status bar shows each device's memory and requests, and a device
    // whose engine failed as failed.
    void statusBarShowsEachDevice() {
        DocumentModel model;
        EngineHost engine;
        engine.setStatsInterval(50);
        JobController jobs(engine.service(), model);
        MainWindow window(model, jobs, engine);
        ServiceParams params = test::fixtureParams(1);
        params.device.name = QStringLiteral("cpu:0").toStdString();
        DeviceSpec second = params.device;
        second.name = "cpu:1";
        params.more_devices.push_back(second);
        QSignalSpy loaded(&engine, &EngineHost::loaded);
        engine.load(std::move(params), test::fixtureFolders(), QStringLiteral("2 CPU engines"));
        QVERIFY(loaded.wait(120000));
        QTRY_VERIFY2(window.engineStatus()->text().contains(QStringLiteral("cpu:0 ")) &&
                         window.engineStatus()->text().contains(QStringLiteral("cpu:1 ")),
                     qPrintable(window.engineStatus()->text()));
        ServiceStats stats;
        stats.devices.resize(2);
        stats.devices[0].device = "cuda:0";
        stats.devices[0].vram_used_bytes = int64_t{3} << 30;
        stats.devices[0].n_running = 2;
        stats.devices[0].n_waiting = 1;
        stats.devices[1].device = "cuda:1";
        stats.devices[1].failed = true;
        window.engineStatus()->setStats(stats);
        QVERIFY2(window.engineStatus()->text().contains(QStringLiteral("cuda:0 3.0 GiB, load 3")),
                 qPrintable(window.engineStatus()->text()));
        QVERIFY2(window.engineStatus()->text().contains(QStringLiteral("cuda:1 failed")),
                 qPrintable(window.engineStatus()->text()));
    }

    // Documents queued for a model that failed to load say that they wait for one.
    void documentsWaitingForAFailedModelSaySo() {
        DocumentModel model;
        EngineHost engine;
        JobController jobs(engine.service(), model);
        MainWindow window(model, jobs, engine);
        window.openFiles({QString::fromUtf8(test::kSamplePdf)});
        // Queued once it has opened (its pages counted).
        QTRY_COMPARE(model.document(0).state, DocumentState::Queued);
        QSignalSpy failed(&engine, &EngineHost::loadFailed);
        ServiceParams params = test::fixtureParams(1);
        params.models.front().dir = tmp_.filePath(QStringLiteral("no-such-model")).toStdString();
        engine.load(std::move(params), test::fixtureFolders(), QStringLiteral("CPU"));
        QVERIFY(failed.wait(60000));
        QCOMPARE(model.document(0).state, DocumentState::Queued);
        QVERIFY2(window.documentList()->item(0)->text().contains(QStringLiteral("waiting for a model")),
                 qPrintable(window.documentList()->item(0)->text()));
    }

    // Every engine error says which setting may fix it and offers it: no device, a model folder that does
    // not load, a layout folder that does not load, a KV cache that does not fit the GPU memory share, the
    // device running out of memory during a run. The panel's button names the setting and asks for it, as a
    // double-click does; a problem no setting fixes offers none.
    void engineErrorsOfferTheirSetting() {
        DocumentModel model;
        EngineHost engine;
        JobController jobs(engine.service(), model);
        MainWindow window(model, jobs, engine);
        window.resize(1100, 700);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        ErrorPanel* panel = window.errorPanel();
        QSignalSpy asked(&window, &MainWindow::settingRequested);
        const auto lastSetting = [panel] { return panel->setting(panel->count() - 1); };

        window.loadModels(test::fixtureFolders());  // no engine factory: no device to load on
        QCOMPARE(lastSetting(), QString::fromLatin1(setting_key::kDevice));

        QSignalSpy failed(&engine, &EngineHost::loadFailed);
        ServiceParams params = test::fixtureParams(1);
        params.models.front().dir = tmp_.filePath(QStringLiteral("no-such-model")).toStdString();
        engine.load(std::move(params), test::fixtureFolders(), QStringLiteral("CPU"));
        QVERIFY(failed.wait(60000));
        QCOMPARE(lastSetting(), QString::fromLatin1(setting_key::kModel));

        const QString missingLayout = tmp_.filePath(QStringLiteral("no-such-layout"));
        params = test::fixtureParams(1);
        params.models.back().dir = missingLayout.toStdString();
        ModelFolders folders = test::fixtureFolders();
        folders.layout = missingLayout;
        engine.load(std::move(params), folders, QStringLiteral("CPU"));
        QVERIFY(failed.wait(60000));
        QVERIFY2(panel->message(panel->count() - 1).contains(missingLayout),
                 qPrintable(panel->message(panel->count() - 1)));
        QCOMPARE(lastSetting(), QString::fromLatin1(setting_key::kLayoutModel));

        // Far too little memory for the KV cache: the planner's error, the GPU memory utilization's.
        params = test::fixtureParams(1);
        params.engine.gpu_memory_utilization = 1e-6;
        engine.load(std::move(params), test::fixtureFolders(), QStringLiteral("CPU"));
        QVERIFY(failed.wait(120000));
        QVERIFY2(panel->message(panel->count() - 1).contains(QStringLiteral("memory")),
                 qPrintable(panel->message(panel->count() - 1)));
        QCOMPARE(lastSetting(), QString::fromLatin1(setting_key::kGpuMemory));
        QVERIFY(panel->settingButton()->isVisible());
        QVERIFY2(panel->settingButton()->text().contains(QStringLiteral("Engine › GPU memory utilization")),
                 qPrintable(panel->settingButton()->text()));
        test::saveScreenshot(&window, QStringLiteral("problem-offers-setting"));
        QTest::mouseClick(panel->settingButton(), Qt::LeftButton);
        QCOMPARE(asked.count(), 1);
        QCOMPARE(asked.last().at(0).toString(), QString::fromLatin1(setting_key::kGpuMemory));

        // A block that ran out of device memory during a run, as the jobs report it.
        Q_EMIT jobs.errorOccurred(
            QStringLiteral("sample.pdf, page 1, block 2 (text): CUDA error: out of memory"));
        QCOMPARE(lastSetting(), QString::fromLatin1(setting_key::kGpuMemory));

        // A problem no setting fixes offers none; the earlier ones still do, on a double-click.
        window.openFiles({tmp_.filePath(QStringLiteral("missing-too.pdf"))});
        QVERIFY(lastSetting().isEmpty());
        QVERIFY(!panel->settingButton()->isVisible());
        auto* list = panel->findChild<QListWidget*>();
        QVERIFY(list != nullptr);
        QListWidgetItem* modelProblem = list->item(1);
        list->scrollToItem(modelProblem);
        const QRect rect = list->visualItemRect(modelProblem);
        QVERIFY(rect.isValid());
        QTest::mouseClick(list->viewport(), Qt::LeftButton, {}, rect.center());
        QTest::mouseDClick(list->viewport(), Qt::LeftButton, {}, rect.center());
        QCOMPARE(asked.count(), 2);
        QCOMPARE(asked.last().at(0).toString(), QString::fromLatin1(setting_key::kModel));
        QVERIFY(panel->settingButton()->isVisible());  // the problem double-clicked is the current one
    }
};

int main(int argc, char** argv) {
    QCoreApplication::setAttribute(Qt::AA_ShareOpenGLContexts);
    QApplication app(argc, argv);
    QStandardPaths::setTestModeEnabled(true);
    TestWindowEngine test;
    return QTest::qExec(&test, argc, argv);
}

#include "test-window-engine.moc"
