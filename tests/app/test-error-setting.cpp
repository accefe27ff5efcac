// The setting an engine error calls for, on the errors the engine, the loaders and the option checks really
// raise (a folder that is not a model, a KV cache that does not fit, an option out of its range) and on the
// device's own texts: model, layout model, device, GPU memory and the options they name; none for errors no
// setting fixes.
#include <QDir>
#include <QTemporaryDir>
#include <QtTest>
#include <exception>
#include <functional>

#include "app/options/engine-options.h"
#include "app/settings/error-setting.h"
#include "app/settings/settings.h"
#include "engine/models/model-registry.h"
#include "engine/runtime/memory-planner.h"

using namespace folio;

namespace {

// What `raise` throws.
QString errorOf(const std::function<void()>& raise) {
    try {
        raise();
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

ModelDescription fixtureModel() {
    return describe_model(std::filesystem::path(FOLIO_FIXTURES_DIR) / "paddleocr-vl-tiny");
}

}  // namespace

class TestErrorSetting : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;

private Q_SLOTS:
    void settingForEngineError_data() {
        QTest::addColumn<QString>("message");
        QTest::addColumn<int>("source");
        QTest::addColumn<QString>("layoutFolder");
        QTest::addColumn<QString>("setting");
        const auto loading = static_cast<int>(EngineErrorSource::Loading);
        const auto reconfiguring = static_cast<int>(EngineErrorSource::Reconfiguring);
        const auto running = static_cast<int>(EngineErrorSource::Running);

        const QString empty = dir_.filePath(QStringLiteral("empty"));
        QDir().mkpath(empty);
        const QString notAModel = errorOf([&] { describe_model(empty.toStdString()); });
        QVERIFY(!notAModel.isEmpty());
        QTest::newRow("not a model folder") << notAModel << loading << QString() << "model";
        const QString missing = dir_.filePath(QStringLiteral("missing"));
        const QString noLayout = errorOf([&] { describe_model(missing.toStdString()); });
        QTest::newRow("layout folder missing") << noLayout << loading << missing << "layout";
        QTest::newRow("its model, not the layout") << notAModel << loading << missing << "model";
        QTest::newRow("a folder named like the layout's")
            << notAModel << loading << empty.left(empty.size() - 2) << "model";

        MemoryPlanParams plan;
        plan.total_bytes = int64_t{1} << 30;
        plan.weight_bytes = int64_t{2} << 30;
        plan.block_bytes = 1 << 20;
        const QString noCache = errorOf([&] { plan_kv_cache(plan); });
        QVERIFY(noCache.contains(QLatin1String("not enough memory")));
        QTest::newRow("cache does not fit, loading") << noCache << loading << QString() << "gpu";
        QTest::newRow("cache does not fit, applying") << noCache << reconfiguring << QString() << "gpu";
        QTest::newRow("out of memory in a step")
            << "page 2, block 3 (text): CUDA error: out of memory" << running << QString() << "gpu";

        const ModelDescription model = fixtureModel();
        const QString seqs = errorOf([&] {
            cli::engine_options_from_values({{"max_num_seqs", "100000"}}, model, "cpu");
        });
        QVERIFY(seqs.contains(QLatin1String("--max-num-seqs")));
        QTest::newRow("an option out of range") << seqs << reconfiguring << QString() << "seqs";
        const QString length = errorOf([&] {
            cli::engine_options_from_values({{"max_model_len", "99999999"}}, model, "cpu");
        });
        QVERIFY(length.contains(QLatin1String("--max-model-len")));
        QTest::newRow("context length") << length << loading << QString() << "len";
        const QString vision = errorOf([&] {
            cli::engine_options_from_values({{"quantize_vision", "fp4"}}, model, "cpu");
        });
        QVERIFY(vision.contains(QLatin1String("--quantize-vision")));
        QTest::newRow("the vision encoder's option") << vision << loading << QString() << "vision";
        QTest::newRow("FP8 refused by the card")
            << "the vision encoder in FP8 (--quantize-vision fp8): FP8 products need a GPU of compute "
               "capability 8.9 or later (RTX 40 series, Ada, Hopper and after); cuda:0 (NVIDIA A100) is 8.0"
            << loading << QString() << "vision";
        QTest::newRow("by its FastDeploy name")
            << "gpu_memory_utilization must be in (0, 1], got 2" << reconfiguring << QString() << "gpu";

        QTest::newRow("device lost")
            << "the engine stopped after a failure: an illegal memory access was encountered" << running
            << QString() << "device";
        QTest::newRow("no CUDA device")
            << "cudaGetDeviceCount: no CUDA-capable device is detected" << loading << QString() << "device";
        QTest::newRow("not loaded yet")
            << "The engine is not ready: load a model first" << running << QString() << "model";
        QTest::newRow("chat before a model")
            << "The model is not loaded yet." << running << QString() << "model";
        QTest::newRow("no layout model") << "engine service: no layout model is loaded; load one beside the "
                                            "recognition model"
                                         << running << QString() << "layout";
        QTest::newRow("other options applied")
            << "the engine could not be rebuilt" << reconfiguring << QString() << "gpu";
        QTest::newRow("a page that does not render")
            << "scan.pdf: page 4: cannot render the page" << running << QString() << "";
        QTest::newRow("nothing said") << "" << loading << QString() << "";
    }

    // The problems Settings::apply() names by their stored keys open the same fields.
    void settingForProblemKey() {
        QTemporaryDir dir;
        Settings settings(QDir(dir.path()).filePath(QStringLiteral("problems.ini")));
        const auto fieldsOf = [&settings](const SettingsValues& values) {
            QStringList fields;
            for (const SettingsProblem& problem : settings.apply(values)) {
                fields << folio::settingForProblemKey(problem.key);
            }
            return fields;
        };
        SettingsValues seqs = Settings::defaults(QStringLiteral("cpu"));
        seqs.maxNumSeqs = 100000;
        QCOMPARE(fieldsOf(seqs), QStringList{QString::fromLatin1(setting_key::kSequences)});
        SettingsValues memory = Settings::defaults(QStringLiteral("cpu"));
        memory.gpuMemoryUtilization = 2.0;
        QCOMPARE(fieldsOf(memory), QStringList{QString::fromLatin1(setting_key::kGpuMemory)});
        SettingsValues fp8OnTheCpu = Settings::defaults(QStringLiteral("cpu"));
        fp8OnTheCpu.visionQuantization = QStringLiteral("fp8");
        QCOMPARE(fieldsOf(fp8OnTheCpu), QStringList{QString::fromLatin1(setting_key::kVisionQuantization)});
        QCOMPARE(folio::settingForProblemKey(QStringLiteral("models/recognition")),
                 QString::fromLatin1(setting_key::kModel));
        QVERIFY(folio::settingForProblemKey(QStringLiteral("documents/dpi")).isEmpty());
    }

    void settingForEngineError() {
        QFETCH(QString, message);
        QFETCH(int, source);
        QFETCH(QString, layoutFolder);
        QFETCH(QString, setting);
        QCOMPARE(folio::settingForEngineError(message, static_cast<EngineErrorSource>(source), layoutFolder),
                 setting);
    }
};

QTEST_GUILESS_MAIN(TestErrorSetting)
#include "test-error-setting.moc"
