// The desktop app's settings: values persist in their INI file, values out of FastDeploy's ranges are refused
// with the range in the message, what each change asks of the engine (reload, reconfigure, nothing), and the
// engine options built from the settings.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "app/settings/compute-devices.h"
#include "app/settings/error-setting.h"
#include "app/settings/settings.h"
#include "engine/common/error.h"

using namespace folio;

class TestSettings : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;

    QString ini(const char* name) const { return dir_.filePath(QString::fromLatin1(name)); }

    static QString messageOf(const SettingsValues& values, std::optional<int64_t> context = std::nullopt) {
        QStringList messages;
        for (const SettingsProblem& problem : Settings::validate(values, context)) {
            messages << problem.key + QStringLiteral(": ") + problem.message;
        }
        return messages.join(QLatin1Char('\n'));
    }

private Q_SLOTS:
    void defaultsAreValid() {
        QVERIFY(Settings::validate(Settings::defaults()).isEmpty());
        QVERIFY(Settings::validate(Settings::defaults(QStringLiteral("cuda:0"))).isEmpty());
        QCOMPARE(Settings::defaults().maxNumSeqs, 8);
        QCOMPARE(Settings::defaults(QStringLiteral("cuda:0")).maxNumSeqs, 256);
        const SettingsValues d = Settings::defaults();
        QVERIFY(!d.markdownLabels.contains(QStringLiteral("header")));
        QVERIFY(d.markdownLabels.contains(QStringLiteral("text")));
        QCOMPARE(d.exportFormats, QStringList({QStringLiteral("md"), QStringLiteral("json")}));
        QCOMPARE(Settings::layoutLabels().size(), 25);
    }

    void valuesPersist() {
        SettingsValues v = Settings::defaults(QStringLiteral("cuda:1"));
        v.model = QStringLiteral("PaddlePaddle/PaddleOCR-VL-1.5");
        v.chatModel = QStringLiteral("baidu/ERNIE-4.5-VL-28B-A3B-Thinking");
        v.quantization = QStringLiteral("wint4");
        v.gpuMemoryUtilization = 0.75;
        v.maxModelLen = 8192;
        v.maxNumSeqs = 64;
        v.maxNumBatchedTokens = 2048;
        v.enablePrefixCaching = false;
        v.renderDpi = 300;
        v.layoutThresholds = {{QStringLiteral("table"), 0.35}, {QStringLiteral("text"), 0.6}};
        v.markdownLabels = {QStringLiteral("text"), QStringLiteral("header"), QStringLiteral("table")};
        v.exportFormats = {QStringLiteral("md"), QStringLiteral("xlsx")};
        v.language = QStringLiteral("zh_CN");
        {
            Settings settings(ini("persist.ini"));
            QVERIFY(settings.apply(v).isEmpty());
        }
        Settings reread(ini("persist.ini"));
        SettingsValues expected = v;
        expected.markdownLabels.sort();
        QCOMPARE(reread.values().model, expected.model);
        QCOMPARE(reread.values().chatModel, expected.chatModel);
        QCOMPARE(reread.values().device, QStringLiteral("cuda:1"));
        QCOMPARE(reread.values().layoutThresholds, expected.layoutThresholds);
        QCOMPARE(reread.values().markdownLabels, expected.markdownLabels);
        QVERIFY(reread.values() == expected);
        QVERIFY(QFile::exists(ini("persist.ini")));
    }

    void missingFileGivesDefaults() {
        Settings settings(ini("absent.ini"));
        // On the first CUDA device where there is one, else on the CPU.
        QVERIFY(settings.values() == Settings::defaults(computeDevices().front().id));
    }

    void outOfRangeValuesAreRefusedWithTheRange() {
        SettingsValues v = Settings::defaults();
        v.gpuMemoryUtilization = 1.5;
        QCOMPARE(messageOf(v),
                 QStringLiteral(
                     "engine/gpu_memory_utilization: --gpu-memory-utilization must be in (0, 1], got 1.5"));
        v = Settings::defaults();
        v.maxNumSeqs = 300;
        QCOMPARE(messageOf(v),
                 QStringLiteral("engine/max_num_seqs: --max-num-seqs must be between 1 and 256, got 300"));
        v = Settings::defaults();
        v.maxNumSeqs = 32;
        v.maxNumBatchedTokens = 16;
        QCOMPARE(messageOf(v),
                 QStringLiteral("engine/max_num_batched_tokens: --max-num-batched-tokens 16 must be at "
                                "least max_num_seqs (32)"));
        v = Settings::defaults();
        v.maxModelLen = 8;
        QCOMPARE(messageOf(v),
                 QStringLiteral("engine/max_model_len: --max-model-len must be at least 16, got 8"));
        // With the model's context known, a length asked for may not exceed it; the default follows it.
        v = Settings::defaults();
        QCOMPARE(messageOf(v, 4096), QString());
        v.maxModelLen = 16384;
        QCOMPARE(
            messageOf(v, 4096),
            QStringLiteral("engine/max_model_len: --max-model-len 16384 exceeds the model's context of 4096 "
                           "tokens"));
        v = Settings::defaults();
        v.quantization = QStringLiteral("int3");
        QVERIFY2(messageOf(v).startsWith(QStringLiteral("engine/quantization: ")), qPrintable(messageOf(v)));
        QVERIFY2(messageOf(v).contains(QStringLiteral("none, wint8 or wint4")), qPrintable(messageOf(v)));
        v = Settings::defaults();
        v.device = QStringLiteral("gpu7");
        QCOMPARE(
            messageOf(v),
            QStringLiteral("engine/device: Device: expected cpu, cuda:N or cuda:N,cuda:M,…, got \"gpu7\""));
        v = Settings::defaults();
        v.device = QStringLiteral("cuda:0,cpu");
        QVERIFY2(messageOf(v).startsWith(QStringLiteral("engine/device: ")), qPrintable(messageOf(v)));
        v = Settings::defaults();
        v.device = QStringLiteral("cuda:0,cuda:1");
        QCOMPARE(messageOf(v), QString());
        v = Settings::defaults();
        v.renderDpi = 5;
        QCOMPARE(messageOf(v),
                 QStringLiteral("documents/dpi: Rendering DPI must be between 18 and 2400, got 5"));
        v = Settings::defaults();
        v.layoutThresholds = {{QStringLiteral("table"), 1.2}, {QStringLiteral("tabel"), 0.5}};
        QCOMPARE(Settings::validate(v).size(), 2);
        v = Settings::defaults();
        v.exportFormats = {QStringLiteral("odt")};
        QVERIFY(messageOf(v).contains(
            QStringLiteral("unknown format \"odt\" (expected md, json, html, pdf, xlsx or docx)")));
        v.exportFormats = {QStringLiteral("docx")};
        QVERIFY(Settings::validate(v).isEmpty());
        v = Settings::defaults();
        v.model = QStringLiteral("not a repo/at all/");
        QVERIFY(messageOf(v).startsWith(QStringLiteral("models/recognition: ")));
        v = Settings::defaults();
        v.chatModel = QStringLiteral("not a repo/at all/");
        QCOMPARE(messageOf(v), QStringLiteral("models/chat: Chat model: \"not a repo/at all/\" is neither a "
                                              "folder nor a Hub repository (ORG/NAME)"));
        v = Settings::defaults();
        v.language = QStringLiteral("fr");
        QVERIFY(messageOf(v).startsWith(QStringLiteral("interface/language: ")));
    }

    void applyRefusesWithoutStoringOrSignalling() {
        Settings settings(ini("refuse.ini"));
        QSignalSpy changed(&settings, &Settings::changed);
        SettingsValues v = settings.values();
        v.maxNumSeqs = 0;
        v.renderDpi = 150;
        const QList<SettingsProblem> problems = settings.apply(v);
        QCOMPARE(problems.size(), 1);
        QCOMPARE(problems.first().key, QStringLiteral("engine/max_num_seqs"));
        QCOMPARE(changed.count(), 0);
        QCOMPARE(settings.values().renderDpi, 200);
        QCOMPARE(Settings(ini("refuse.ini")).values().renderDpi, 200);
    }

    void changesSayWhatTheEngineMustDo() {
        const SettingsValues base = Settings::defaults(QStringLiteral("cuda:0"));
        SettingsValues v = base;
        v.renderDpi = 300;
        v.exportFormats << QStringLiteral("html");
        v.language = QStringLiteral("zh_CN");
        QCOMPARE(Settings::impactOf(base, v), EngineImpact::None);
        v.maxNumSeqs = 64;
        QCOMPARE(Settings::impactOf(base, v), EngineImpact::Reconfigure);
        v = base;
        v.gpuMemoryUtilization = 0.5;
        QCOMPARE(Settings::impactOf(base, v), EngineImpact::Reconfigure);
        v = base;
        v.enablePrefixCaching = false;
        QCOMPARE(Settings::impactOf(base, v), EngineImpact::Reconfigure);
        for (const auto& change : std::initializer_list<std::function<void(SettingsValues&)>>{
                 [](SettingsValues& s) { s.quantization = QStringLiteral("wint8"); },
                 [](SettingsValues& s) { s.device = QStringLiteral("cpu"); },
                 [](SettingsValues& s) { s.model = QStringLiteral("PaddlePaddle/PaddleOCR-VL"); },
                 [](SettingsValues& s) {
                     s.layoutModel = QStringLiteral("PaddlePaddle/PP-DocLayoutV3_safetensors");
                 },
                 [](SettingsValues& s) { s.chatModel = QStringLiteral("baidu/ERNIE-4.5-VL-28B-A3B-PT"); },
             }) {
            v = base;
            v.maxNumSeqs = 64;
            change(v);
            QCOMPARE(Settings::impactOf(base, v), EngineImpact::Reload);
        }
        QCOMPARE(Settings::impactOf(base, base), EngineImpact::None);
    }

    void applySignalsTheChange() {
        Settings settings(ini("signal.ini"));
        QSignalSpy changed(&settings, &Settings::changed);
        QSignalSpy language(&settings, &Settings::languageChanged);
        SettingsValues v = settings.values();
        v.maxNumBatchedTokens = 4096;
        v.renderDpi = 150;
        QVERIFY(settings.apply(v).isEmpty());
        QCOMPARE(changed.count(), 1);
        QCOMPARE(
            changed.first().at(0).toStringList(),
            QStringList({QStringLiteral("engine/max_num_batched_tokens"), QStringLiteral("documents/dpi")}));
        QCOMPARE(changed.first().at(1).value<EngineImpact>(), EngineImpact::Reconfigure);
        QCOMPARE(language.count(), 0);
        // The same values again: nothing changed, nothing emitted.
        QVERIFY(settings.apply(v).isEmpty());
        QCOMPARE(changed.count(), 1);
        v.language = QStringLiteral("zh_CN");
        QVERIFY(settings.apply(v).isEmpty());
        QCOMPARE(changed.count(), 2);
        QCOMPARE(changed.last().at(1).value<EngineImpact>(), EngineImpact::None);
        QCOMPARE(language.count(), 1);
        QCOMPARE(language.first().at(0).toString(), QStringLiteral("zh_CN"));
    }

    // The chat model loads in a chat slot beside the recognition model, with the same weight quantization.
    void chatModelLoadsInAChatSlot() {
        SettingsValues v = Settings::defaults(QStringLiteral("cpu"));
        v.maxModelLen = 4096;
        v.quantization = QStringLiteral("wint8");
        const std::filesystem::path recognition = FOLIO_FIXTURES_ROOT "/paddleocr-vl/paddleocr-vl-tiny";
        const std::filesystem::path chat = FOLIO_FIXTURES_ROOT "/ernie45-vl/ernie45-vl-tiny";
        const ServiceParams alone = Settings::serviceParams(v, recognition);
        QCOMPARE(alone.models.size(), size_t{1});
        const ServiceParams both = Settings::serviceParams(v, recognition, std::nullopt, 1, chat);
        QCOMPARE(both.models.size(), size_t{2});
        QCOMPARE(both.models[0].role, ModelRole::Recognition);
        QCOMPARE(both.models[1].role, ModelRole::Chat);
        QCOMPARE(both.models[1].dir, chat);
        QCOMPARE(both.models[1].load.quantization, Quantization::Wint8);
    }

    // Several cards: a copy of the models on each, or one engine whose ranks split each model over them; the
    // split needs two cards at least.
    void severalCardsCopyOrSplitTheModels() {
        SettingsValues v = Settings::defaults(QStringLiteral("cuda:0"));
        v.device = QStringLiteral("cuda:0,cuda:1");
        const std::filesystem::path recognition = FOLIO_FIXTURES_ROOT "/paddleocr-vl/paddleocr-vl-tiny";
        v.maxModelLen = 4096;  // the fixture's context
        const ServiceParams copies = Settings::serviceParams(v, recognition);
        QCOMPARE(copies.device.name, std::string("cuda:0"));
        QVERIFY(copies.device.more_ranks.empty());
        QCOMPARE(copies.more_devices.size(), size_t{1});
        QCOMPARE(copies.more_devices[0].name, std::string("cuda:1"));

        v.tensorParallel = true;
        QVERIFY(Settings::validate(v).isEmpty());
        const ServiceParams split = Settings::serviceParams(v, recognition);
        QCOMPARE(split.device.name, std::string("cuda:0"));
        QVERIFY(split.more_devices.empty());
        QCOMPARE(split.device.more_ranks.size(), size_t{1});
        QCOMPARE(split.device.more_ranks[0].name, std::string("cuda:1"));

        v.device = QStringLiteral("cuda:0");
        const QList<SettingsProblem> problems = Settings::validate(v);
        QCOMPARE(problems.size(), qsizetype{1});
        QCOMPARE(problems.first().key, QStringLiteral("engine/tensor_parallel"));
        QCOMPARE(folio::settingForProblemKey(problems.first().key),
                 QString::fromLatin1(setting_key::kTensorParallel));
    }

    void handEditedFileOutOfRangeFallsBackToDefaults() {
        {
            QSettings raw(ini("edited.ini"), QSettings::IniFormat);
            raw.setValue(QStringLiteral("engine/gpu_memory_utilization"), 7);
        }
        Settings settings(ini("edited.ini"));
        QCOMPARE(settings.values().gpuMemoryUtilization, 0.9);
    }

    void engineOptionsFollowTheSettings() {
        SettingsValues v = Settings::defaults(QStringLiteral("cuda:0"));
        v.maxModelLen = 4096;
        v.maxNumSeqs = 32;
        v.maxNumBatchedTokens = 1024;
        v.gpuMemoryUtilization = 0.6;
        v.enablePrefixCaching = false;
        v.quantization = QStringLiteral("wint4");
        ModelDescription model;
        model.max_context = 16384;
        const cli::EngineOptions options = Settings::engineOptions(v, model);
        QCOMPARE(options.engine.max_model_len, 4096);
        QCOMPARE(options.engine.max_num_seqs, 32);
        QCOMPARE(options.engine.max_num_batched_tokens, 1024);
        QCOMPARE(options.engine.gpu_memory_utilization, 0.6);
        QVERIFY(!options.engine.enable_prefix_caching);
        QCOMPARE(options.load.quantization, Quantization::Wint4);
        v.maxModelLen = 32768;
        QVERIFY_THROWS_EXCEPTION(Error, Settings::engineOptions(v, model));
        // Automatic: 16384, or the model's context where it is shorter.
        v.maxModelLen = 0;
        QCOMPARE(Settings::engineOptions(v, model).engine.max_model_len, 16384);
        model.max_context = 131072;
        QCOMPARE(Settings::engineOptions(v, model).engine.max_model_len, 16384);
        model.max_context = 4096;
        QCOMPARE(Settings::engineOptions(v, model).engine.max_model_len, 4096);
    }

    // A context length beyond the model folder's loads with the model's own, and says so.
    void serviceParamsTakeTheModelsContextWhereTheSettingExceedsIt() {
        SettingsValues v = Settings::defaults(QStringLiteral("cpu"));
        v.maxModelLen = 32768;
        QString note;
        const ServiceParams params = Settings::serviceParams(
            v, FOLIO_FIXTURES_ROOT "/paddleocr-vl/paddleocr-vl-tiny", std::nullopt, 1, std::nullopt, &note);
        QCOMPARE(params.engine.max_model_len, 4096);  // the fixture's context
        QVERIFY2(note.contains(QStringLiteral("is 32768 tokens; the model was made for 4096")),
                 qPrintable(note));
        v.maxModelLen = 2048;
        note.clear();
        QCOMPARE(Settings::serviceParams(v, FOLIO_FIXTURES_ROOT "/paddleocr-vl/paddleocr-vl-tiny",
                                         std::nullopt, 1, std::nullopt, &note)
                     .engine.max_model_len,
                 2048);
        QVERIFY(note.isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestSettings)
#include "test-settings.moc"
