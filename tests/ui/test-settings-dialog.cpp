// The settings dialog over Settings: it shows the stored values, applies edits (persisted, with what the
// engine must do), refuses values out of FastDeploy's ranges showing the message, restores the defaults, and
// opens at the setting a problem calls for, on its page with its field focused.
#include <QComboBox>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>

#include "app/settings/error-setting.h"
#include "app/settings/settings.h"
#include "screenshot.h"
#include "ui/settings/settings-dialog.h"

using namespace folio;
using folio::test::saveScreenshot;

class TestSettingsDialog : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;

    static QList<ComputeDevice> devices() {
        return {
            {QStringLiteral("cuda:0"), QStringLiteral("NVIDIA GeForce RTX 4070 (12.0 GB)"), 12'000'000'000},
            {QStringLiteral("cpu"), QStringLiteral("CPU (16 threads)"), 0}};
    }

private Q_SLOTS:
    void showsAndAppliesValues() {
        Settings settings(dir_.filePath(QStringLiteral("dialog.ini")));
        SettingsValues start = Settings::defaults(QStringLiteral("cuda:0"));
        QVERIFY(settings.apply(start).isEmpty());
        SettingsDialog dialog(settings);
        dialog.setDevices(devices());
        dialog.setValues(settings.values());
        QVERIFY(dialog.values() == settings.values());
        for (int tab = 0; tab < dialog.tabs()->count(); ++tab) {
            dialog.tabs()->setCurrentIndex(tab);
            saveScreenshot(&dialog, QStringLiteral("settings-%1").arg(tab));
        }

        QSignalSpy changed(&settings, &Settings::changed);
        SettingsValues edited = dialog.values();
        edited.maxNumSeqs = 64;
        edited.renderDpi = 300;
        edited.markdownLabels.removeAll(QStringLiteral("text"));
        edited.layoutThresholds.insert(QStringLiteral("table"), 0.25);
        edited.exportFormats = {QStringLiteral("md"), QStringLiteral("html")};
        dialog.setValues(edited);
        QVERIFY(dialog.apply());
        QCOMPARE(changed.count(), 1);
        QCOMPARE(changed.first().at(1).value<EngineImpact>(), EngineImpact::Reconfigure);
        const Settings reread(dir_.filePath(QStringLiteral("dialog.ini")));
        QCOMPARE(reread.values().maxNumSeqs, 64);
        QCOMPARE(reread.values().renderDpi, 300);
        QVERIFY(!reread.values().markdownLabels.contains(QStringLiteral("text")));
        QCOMPARE(reread.values().layoutThresholds.value(QStringLiteral("table")), 0.25);
        QCOMPARE(reread.values().exportFormats, edited.exportFormats);

        edited.quantization = QStringLiteral("wint4");
        dialog.setValues(edited);
        QVERIFY(dialog.apply());
        QCOMPARE(changed.last().at(1).value<EngineImpact>(), EngineImpact::Reload);

        // The cache's 8-bit levels: chosen in the Engine page's list, kept, and given to the engine.
        auto* kvCache = dialog.findChild<QComboBox*>(QStringLiteral("kvCacheDtype"));
        QVERIFY(kvCache != nullptr);
        QCOMPARE(kvCache->currentData().toString(), QStringLiteral("auto"));
        kvCache->setCurrentIndex(kvCache->findData(QStringLiteral("int8")));
        QVERIFY(dialog.apply());
        QCOMPARE(changed.last().at(0).toStringList(), QStringList{QStringLiteral("engine/kv_cache_dtype")});
        QCOMPARE(changed.last().at(1).value<EngineImpact>(), EngineImpact::Reconfigure);
        const Settings kept(dir_.filePath(QStringLiteral("dialog.ini")));
        QCOMPARE(kept.values().kvCacheDtype, QStringLiteral("int8"));
        ModelDescription model;
        model.max_context = 32768;
        QVERIFY(Settings::engineOptions(kept.values(), model).engine.kv_cache_dtype == KvCacheDtype::Int8);
    }

    // The vision encoder in FP8: chosen on the model page, kept, given to the engine as --quantize-vision
    // fp8, and a reload, since the weights change; refused on the CPU.
    void visionEncoderInFp8IsAppliedAndReloads() {
        Settings settings(dir_.filePath(QStringLiteral("fp8.ini")));
        QVERIFY(settings.apply(Settings::defaults(QStringLiteral("cuda:0"))).isEmpty());
        SettingsDialog dialog(settings);
        dialog.setDevices(devices());
        dialog.setValues(settings.values());
        auto* vision = dialog.findChild<QComboBox*>(QStringLiteral("visionQuantization"));
        QVERIFY(vision != nullptr);
        QCOMPARE(dialog.settingField(QString::fromLatin1(setting_key::kVisionQuantization)), vision);
        QCOMPARE(vision->currentData().toString(), QStringLiteral("none"));
        QSignalSpy changed(&settings, &Settings::changed);
        vision->setCurrentIndex(vision->findData(QStringLiteral("fp8")));
        QVERIFY(dialog.apply());
        QCOMPARE(changed.count(), 1);
        QCOMPARE(changed.first().at(0).toStringList(), QStringList{QStringLiteral("engine/quantize_vision")});
        QCOMPARE(changed.first().at(1).value<EngineImpact>(), EngineImpact::Reload);
        const Settings kept(dir_.filePath(QStringLiteral("fp8.ini")));
        QCOMPARE(kept.values().visionQuantization, QStringLiteral("fp8"));
        ModelDescription model;
        model.max_context = 32768;
        const cli::EngineOptions options = Settings::engineOptions(kept.values(), model);
        QVERIFY(options.load.vision_fp8);
        QVERIFY(!options.load.quantize_vision);

        SettingsValues onTheCpu = kept.values();
        onTheCpu.device = QStringLiteral("cpu");
        dialog.setValues(onTheCpu);
        QVERIFY(!dialog.apply());
        QVERIFY2(dialog.problemText().contains(QStringLiteral("FP8")), qPrintable(dialog.problemText()));
        QCOMPARE(dialog.tabs()->tabText(dialog.tabs()->currentIndex()), QStringLiteral("Model"));
    }

    // Splitting the models over the cards: offered where several cards are chosen, kept, and a reload.
    void tensorParallelismNeedsSeveralCards() {
        Settings settings(dir_.filePath(QStringLiteral("tp.ini")));
        QVERIFY(settings.apply(Settings::defaults(QStringLiteral("cuda:0"))).isEmpty());
        SettingsDialog dialog(settings);
        dialog.setDevices(devices());
        dialog.setValues(settings.values());
        auto* split = dialog.findChild<QCheckBox*>(QStringLiteral("tensorParallel"));
        QVERIFY(split != nullptr);
        QVERIFY(!split->isEnabled());
        SettingsValues v = settings.values();
        v.device = QStringLiteral("cuda:0,cuda:1");
        dialog.setValues(v);
        QVERIFY(split->isEnabled());
        QVERIFY(!split->isChecked());
        QSignalSpy changed(&settings, &Settings::changed);
        split->setChecked(true);
        QVERIFY(dialog.apply());
        QVERIFY(changed.last().at(0).toStringList().contains(QStringLiteral("engine/tensor_parallel")));
        QCOMPARE(changed.last().at(1).value<EngineImpact>(), EngineImpact::Reload);
        QVERIFY(Settings(dir_.filePath(QStringLiteral("tp.ini"))).values().tensorParallel);
        dialog.tabs()->setCurrentIndex(dialog.tabs()->count() - 1);
        QVERIFY(dialog.showSetting(QString::fromLatin1(setting_key::kTensorParallel)));
        QCOMPARE(dialog.tabs()->tabText(dialog.tabs()->currentIndex()), QStringLiteral("Model"));
        saveScreenshot(&dialog, QStringLiteral("settings-tensor-parallel"));
    }

    // The chat model sits on the model page beside the OCR model; a new one loads the models again.
    void chatModelIsAppliedAndReloads() {
        Settings settings(dir_.filePath(QStringLiteral("chat.ini")));
        QVERIFY(settings.apply(Settings::defaults(QStringLiteral("cuda:0"))).isEmpty());
        SettingsDialog dialog(settings);
        dialog.setDevices(devices());
        dialog.setValues(settings.values());
        auto* field = dialog.findChild<QLineEdit*>(QStringLiteral("chatModel"));
        QVERIFY(field != nullptr);
        QCOMPARE(dialog.settingField(QString::fromLatin1(setting_key::kChatModel)), field);
        QVERIFY(field->text().isEmpty());
        QSignalSpy changed(&settings, &Settings::changed);
        field->setText(QStringLiteral("  baidu/ERNIE-4.5-VL-28B-A3B-Thinking "));
        QVERIFY(dialog.apply());
        QCOMPARE(changed.count(), 1);
        QCOMPARE(changed.first().at(0).toStringList(), QStringList{QStringLiteral("models/chat")});
        QCOMPARE(changed.first().at(1).value<EngineImpact>(), EngineImpact::Reload);
        const Settings reread(dir_.filePath(QStringLiteral("chat.ini")));
        QCOMPARE(reread.values().chatModel, QStringLiteral("baidu/ERNIE-4.5-VL-28B-A3B-Thinking"));
        // Restoring the defaults keeps the user's models; the chat model's own button asks for the model
        // manager on the chat models.
        QSignalSpy manage(&dialog, &SettingsDialog::manageChatModelsRequested);
        const auto click = [&dialog](const QString& text) {
            for (QPushButton* button : dialog.findChildren<QPushButton*>()) {
                if (button->text() == text) {
                    button->click();
                    return true;
                }
            }
            return false;
        };
        QVERIFY(click(QStringLiteral("Restore defaults")));
        QCOMPARE(field->text(), QStringLiteral("baidu/ERNIE-4.5-VL-28B-A3B-Thinking"));
        QVERIFY(click(QStringLiteral("Chat models…")));
        QCOMPARE(manage.count(), 1);
    }

    void refusesOutOfRangeValues() {
        Settings settings(dir_.filePath(QStringLiteral("refuse.ini")));
        SettingsDialog dialog(settings);
        dialog.setDevices(devices());
        QSignalSpy changed(&settings, &Settings::changed);
        SettingsValues v = dialog.values();
        v.maxNumSeqs = 32;
        v.maxNumBatchedTokens = 16;
        dialog.setValues(v);
        QVERIFY(!dialog.apply());
        QCOMPARE(changed.count(), 0);
        QCOMPARE(dialog.problemText(),
                 QStringLiteral("--max-num-batched-tokens 16 must be at least max_num_seqs (32)"));
        QCOMPARE(dialog.tabs()->currentIndex(), 2);  // the engine's page
        saveScreenshot(&dialog, QStringLiteral("settings-refused"));
        // The model's context bounds max_model_len.
        dialog.setModelContext(4096);
        v.maxNumBatchedTokens = 8192;
        v.maxModelLen = 8192;
        dialog.setValues(v);
        QVERIFY(!dialog.apply());
        QVERIFY2(dialog.problemText().contains(QStringLiteral("exceeds the model's context of 4096")),
                 qPrintable(dialog.problemText()));
        // The default follows the model's context, and says so.
        v.maxModelLen = 0;
        dialog.setValues(v);
        QVERIFY(dialog.apply());
        const auto spins = dialog.findChildren<QSpinBox*>();
        QVERIFY(std::any_of(spins.begin(), spins.end(), [](const QSpinBox* spin) {
            return spin->value() == 0 && spin->text().startsWith(QStringLiteral("Automatic"));
        }));
    }

    void emptyModelFieldsNameTheLoadedModels() {
        Settings settings(dir_.filePath(QStringLiteral("loaded.ini")));
        SettingsDialog dialog(settings);
        dialog.setDevices(devices());
        auto* model = dialog.findChild<QLineEdit*>(QStringLiteral("model"));
        auto* chat = dialog.findChild<QLineEdit*>(QStringLiteral("chatModel"));
        QVERIFY(model && chat);
        QVERIFY(!model->placeholderText().contains(QStringLiteral("now")));
        // A model from the command line leaves the field empty: it says which model runs.
        dialog.setLoadedModels(QStringLiteral("paddleocr-vl-tiny"), QStringLiteral("llama-tiny"));
        QVERIFY2(model->placeholderText().endsWith(QStringLiteral("(now paddleocr-vl-tiny)")),
                 qPrintable(model->placeholderText()));
        QVERIFY2(chat->placeholderText().endsWith(QStringLiteral("(now llama-tiny)")),
                 qPrintable(chat->placeholderText()));
        dialog.setLoadedModels(QStringLiteral("paddleocr-vl-tiny"), QString());
        QVERIFY(!chat->placeholderText().contains(QStringLiteral("now")));
    }

    void restoreDefaultsKeepsTheModel() {
        Settings settings(dir_.filePath(QStringLiteral("defaults.ini")));
        SettingsDialog dialog(settings);
        dialog.setDevices(devices());
        SettingsValues v = dialog.values();
        v.model = QStringLiteral("PaddlePaddle/PaddleOCR-VL");
        v.renderDpi = 600;
        v.device = QStringLiteral("cuda:0");
        v.maxNumSeqs = 12;
        dialog.setValues(v);
        const auto buttons = dialog.findChildren<QDialogButtonBox*>();
        QCOMPARE(buttons.size(), 1);
        buttons.first()->button(QDialogButtonBox::RestoreDefaults)->click();
        QCOMPARE(dialog.values().model, v.model);
        QCOMPARE(dialog.values().renderDpi, 200);
        QCOMPARE(dialog.values().maxNumSeqs, 256);
        QCOMPARE(dialog.values().device, QStringLiteral("cuda:0"));
    }

    void aMissingDeviceStaysVisible() {
        Settings settings(dir_.filePath(QStringLiteral("device.ini")));
        SettingsValues v = Settings::defaults(QStringLiteral("cuda:3"));
        QVERIFY(settings.apply(v).isEmpty());
        SettingsDialog dialog(settings);
        dialog.setDevices(devices());
        dialog.setValues(settings.values());
        QCOMPARE(dialog.values().device, QStringLiteral("cuda:3"));
    }

    // Each setting a problem may call for opens on its page, its field focused once the dialog shows.
    void showSettingOpensItsPage_data() {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("page");
        QTest::newRow("model") << QString::fromLatin1(setting_key::kModel) << QStringLiteral("Model");
        QTest::newRow("layout") << QString::fromLatin1(setting_key::kLayoutModel) << QStringLiteral("Model");
        QTest::newRow("chat") << QString::fromLatin1(setting_key::kChatModel) << QStringLiteral("Model");
        QTest::newRow("device") << QString::fromLatin1(setting_key::kDevice) << QStringLiteral("Model");
        QTest::newRow("quantization")
            << QString::fromLatin1(setting_key::kQuantization) << QStringLiteral("Model");
        QTest::newRow("vision") << QString::fromLatin1(setting_key::kVisionQuantization)
                                << QStringLiteral("Model");
        QTest::newRow("gpu") << QString::fromLatin1(setting_key::kGpuMemory) << QStringLiteral("Engine");
        QTest::newRow("len") << QString::fromLatin1(setting_key::kContextLength) << QStringLiteral("Engine");
        QTest::newRow("seqs") << QString::fromLatin1(setting_key::kSequences) << QStringLiteral("Engine");
        QTest::newRow("batched") << QString::fromLatin1(setting_key::kBatchedTokens)
                                 << QStringLiteral("Engine");
        QTest::newRow("kvcache") << QString::fromLatin1(setting_key::kKvCache) << QStringLiteral("Engine");
    }

    void showSettingOpensItsPage() {
        QFETCH(QString, key);
        QFETCH(QString, page);
        Settings settings(dir_.filePath(QStringLiteral("show.ini")));
        SettingsDialog dialog(settings);
        dialog.setDevices(devices());
        dialog.tabs()->setCurrentIndex(dialog.tabs()->count() - 1);  // elsewhere to start with
        QVERIFY(dialog.showSetting(key));
        QCOMPARE(dialog.tabs()->tabText(dialog.tabs()->currentIndex()), page);
        QWidget* field = dialog.settingField(key);
        QVERIFY(field != nullptr);
        dialog.show();
        QVERIFY(QTest::qWaitForWindowExposed(&dialog));
        QTRY_COMPARE(dialog.focusWidget(), field);
        if (key == QLatin1String(setting_key::kGpuMemory) || key == QLatin1String(setting_key::kModel)) {
            saveScreenshot(&dialog, QStringLiteral("settings-at-") + key);
        }
        QVERIFY(!dialog.showSetting(QStringLiteral("no-such-setting")));
    }
};

QTEST_MAIN(TestSettingsDialog)
#include "test-settings-dialog.moc"
