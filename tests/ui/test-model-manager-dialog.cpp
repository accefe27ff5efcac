// The model manager against a Hugging Face Hub served on 127.0.0.1 (tests/app/fake-hub.h): a first start with
// nothing installed, a download with progress into the cache's layout (the recognition model and its layout
// model), cancelling one (a later download resumes), a Hub error shown with its message, a broken model in
// the list saying what is wrong, and a folder picked by hand.
#include <QFileInfo>
#include <QSignalSpy>
#include <QtTest>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "fake-hub.h"
#include "safetensors-writer.h"
#include "screenshot.h"
#include "temp-dir.h"
#include "ui/models/model-manager-dialog.h"

using namespace folio;
using folio::test::saveScreenshot;

namespace {

namespace fs = std::filesystem;

using test::noise;

constexpr const char* kRepo = "folio-test/tiny-ocr";
constexpr const char* kLayoutRepo = "folio-test/tiny-layout";

std::string weights(size_t rows) {
    std::vector<float> values(rows * 256);
    for (size_t i = 0; i < values.size(); ++i) {
        values[i] = static_cast<float>(i % 977) * 0.25f;
    }
    return test::safetensors_image(
        {test::make_tensor("model.embed_tokens.weight", "F32", {static_cast<int64_t>(rows), 256}, values)});
}

test::FakeRepo recognitionRepo() {
    test::FakeRepo repo;
    repo.id = kRepo;
    repo.commit = "0123456789abcdef0123456789abcdef01234567";
    repo.files = {
        {"config.json",
         R"({"model_type": "paddleocr_vl", "architectures": ["PaddleOCRVLForConditionalGeneration"]})",
         false},
        {"preprocessor_config.json", R"({"patch_size": 14, "merge_size": 2})", false},
        {"tokenizer_config.json", R"({"add_bos_token": false})", false},
        {"tokenizer.model", noise(20000, 7), true},
        {"model.safetensors", weights(1024), true},
        {"README.md", "# a tiny model\n", false},
    };
    return repo;
}

test::FakeRepo layoutRepo() {
    test::FakeRepo repo;
    repo.id = kLayoutRepo;
    repo.commit = "89abcdef0123456789abcdef0123456789abcdef";
    repo.files = {
        {"config.json",
         R"({"model_type": "pp_doclayout_v3", "architectures": ["PPDocLayoutV3ForObjectDetection"]})", false},
        {"preprocessor_config.json", R"({"size": {"height": 800, "width": 800}})", false},
        {"model.safetensors", weights(256), true},
    };
    return repo;
}

hub::ClientOptions fast() {
    hub::ClientOptions options;
    options.connect_timeout = std::chrono::seconds(5);
    options.stall_timeout = std::chrono::seconds(5);
    options.api_attempts = 2;
    options.retry_delay = std::chrono::milliseconds(5);
    options.max_retry_delay = std::chrono::milliseconds(20);
    return options;
}

}  // namespace

class TestModelManagerDialog : public QObject {
    Q_OBJECT

    test::FakeHub hub_;
    std::unique_ptr<test::TempDir> dir_;

    hub::HubSettings settings() const {
        hub::HubSettings s;
        s.endpoint = hub_.endpoint();
        s.cache_dir = *dir_ / "hub";
        s.models_dir = *dir_ / "models";
        s.token_path = *dir_ / "token";
        return s;
    }

    std::unique_ptr<ModelManagerDialog> dialog() const {
        auto d = std::make_unique<ModelManagerDialog>(settings());
        d->setClientOptions(fast());
        d->setCatalogue({{kRepo, "Tiny OCR", hub::ModelKind::Recognition, kLayoutRepo},
                         {"folio-test/missing", "Missing model", hub::ModelKind::Recognition, ""}});
        return d;
    }

private Q_SLOTS:
    void init() {
        dir_ = std::make_unique<test::TempDir>();
        hub_.add_repo(recognitionRepo());
        hub_.add_repo(layoutRepo());
        hub_.clear_faults();
        hub_.set_chunk_delay(std::chrono::milliseconds(0));
    }

    void firstStartShowsNothingInstalled() {
        auto d = dialog();
        d->showProblem(QStringLiteral("No model is set up yet."));
        QVERIFY(d->installed().isEmpty());
        QVERIFY(d->chosenFolder().isEmpty());
        saveScreenshot(d.get(), QStringLiteral("model-manager-empty"));
    }

    void foldersInUseAreListed() {
        // A model folder from the settings or the command line is listed, once, with where it is.
        auto d = dialog();
        const QString folder = QStringLiteral(FOLIO_FIXTURES_ROOT "/paddleocr-vl/paddleocr-vl-tiny");
        d->setFoldersInUse({folder, folder + QStringLiteral("/"), QString()});
        QCOMPARE(d->installed().size(), 1);
        const InstalledModel model = d->installed()[0];  // installed() gives a copy
        QVERIFY2(model.ok(), qPrintable(model.problems.join(QLatin1Char('\n'))));
        QCOMPARE(model.kind, hub::ModelKind::Recognition);
        QVERIFY2(model.source.startsWith(QStringLiteral("in use: ")), qPrintable(model.source));
        QCOMPARE(QFileInfo(model.dir).canonicalFilePath(), QFileInfo(folder).canonicalFilePath());
        saveScreenshot(d.get(), QStringLiteral("model-manager-in-use"));
    }

    void downloadsWithProgress() {
        auto d = dialog();
        QSignalSpy finished(d.get(), &ModelManagerDialog::downloadFinished);
        QList<int> values;
        QStringList lines;
        QTimer sampler;
        connect(&sampler, &QTimer::timeout, this, [&] {
            values << d->progressValue();
            lines << d->statusText();
        });
        hub_.set_chunk_delay(std::chrono::milliseconds(2));
        sampler.start(5);
        QVERIFY(d->download(QString::fromLatin1(kRepo)));
        QVERIFY(d->downloading());
        QVERIFY(!d->download(QString::fromLatin1(kRepo)));  // one at a time
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
        sampler.stop();
        QCOMPARE(finished.first().at(0).toBool(), true);
        QVERIFY(!d->downloading());
        QVERIFY2(d->statusText().contains(QStringLiteral("ready")), qPrintable(d->statusText()));
        // Progress went up on the way, and the status told bytes and files.
        bool moved = false;
        for (const int v : values) {
            moved = moved || (v > 0 && v < 1000);
        }
        QVERIFY(moved);
        QVERIFY(lines.filter(QStringLiteral("file ")).size() > 0);
        // Both models are in the cache, checked and listed.
        const QList<InstalledModel> installed = d->installed();
        QCOMPARE(installed.size(), 2);
        QCOMPARE(installed[0].repo, QString::fromLatin1(kRepo));
        QCOMPARE(installed[0].kind, hub::ModelKind::Recognition);
        QVERIFY2(installed[0].ok(), qPrintable(installed[0].problems.join(QLatin1Char('\n'))));
        QCOMPARE(installed[1].repo, QString::fromLatin1(kLayoutRepo));
        QCOMPARE(installed[1].kind, hub::ModelKind::Layout);
        QVERIFY(fs::exists(*dir_ / "hub" / "models--folio-test--tiny-ocr" / "snapshots"));
        saveScreenshot(d.get(), QStringLiteral("model-manager-downloaded"));
    }

    void cancelKeepsWhatArrivedAndResumes() {
        auto d = dialog();
        QSignalSpy finished(d.get(), &ModelManagerDialog::downloadFinished);
        hub_.set_chunk_delay(std::chrono::milliseconds(40));
        QVERIFY(d->download(QString::fromLatin1(kRepo)));
        QTRY_VERIFY_WITH_TIMEOUT(d->statusText().contains(QStringLiteral("file ")), 30000);
        saveScreenshot(d.get(), QStringLiteral("model-manager-downloading"));
        d->cancelDownload();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
        QCOMPARE(finished.first().at(0).toBool(), false);
        QVERIFY2(d->statusText().contains(QStringLiteral("cancelled")), qPrintable(d->statusText()));
        QVERIFY(!d->downloading());
        // Downloading again completes.
        hub_.set_chunk_delay(std::chrono::milliseconds(0));
        QVERIFY(d->download(QString::fromLatin1(kRepo)));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 30000);
        QCOMPARE(finished.last().at(0).toBool(), true);
    }

    void hubErrorsAreShown() {
        auto d = dialog();
        QSignalSpy finished(d.get(), &ModelManagerDialog::downloadFinished);
        QVERIFY(d->download(QStringLiteral("folio-test/missing")));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
        QCOMPARE(finished.first().at(0).toBool(), false);
        const QString message = finished.first().at(1).toString();
        QVERIFY2(message.contains(QStringLiteral("folio-test/missing")), qPrintable(message));
        QVERIFY2(d->statusText().startsWith(QStringLiteral("Download failed: ")),
                 qPrintable(d->statusText()));
        // A corrupted file fails its checksum; nothing broken is left to use.
        hub_.corrupt("model.safetensors", 100);
        QVERIFY(d->download(QString::fromLatin1(kRepo)));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 30000);
        QCOMPARE(finished.last().at(0).toBool(), false);
        QVERIFY2(d->statusText().contains(QStringLiteral("model.safetensors")), qPrintable(d->statusText()));
        saveScreenshot(d.get(), QStringLiteral("model-manager-error"));
    }

    void brokenModelsSayWhatIsWrong() {
        // A plain ORG/NAME folder in the models folder without its weights.
        const fs::path broken = *dir_ / "models" / "someone" / "half-model";
        fs::create_directories(broken);
        std::ofstream(broken / "config.json") << R"({"model_type": "paddleocr_vl"})";
        auto d = dialog();
        QCOMPARE(d->installed().size(), 1);
        QVERIFY(!d->installed()[0].ok());
        QVERIFY2(d->installed()[0].problems.join(QLatin1Char(' ')).contains(QStringLiteral("safetensors")),
                 qPrintable(d->installed()[0].problems.join(QLatin1Char(' '))));
        saveScreenshot(d.get(), QStringLiteral("model-manager-broken"));
        // Picking it by hand is refused with the same reasons; a missing folder too.
        QSignalSpy chosen(d.get(), &ModelManagerDialog::modelChosen);
        QVERIFY(!d->chooseFolder(QString::fromStdString(broken.string())));
        QVERIFY(d->statusText().contains(QStringLiteral("cannot be used")));
        QVERIFY(!d->chooseFolder(QString::fromStdString((*dir_ / "nowhere").string())));
        QCOMPARE(chosen.count(), 0);
    }

    void aGoodFolderIsChosen() {
        auto d = dialog();
        QSignalSpy finished(d.get(), &ModelManagerDialog::downloadFinished);
        QVERIFY(d->download(QString::fromLatin1(kRepo)));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
        const QString folder = d->installed()[0].dir;
        auto other = dialog();
        QSignalSpy chosen(other.get(), &ModelManagerDialog::modelChosen);
        QVERIFY(other->chooseFolder(folder));
        QCOMPARE(chosen.count(), 1);
        QCOMPARE(other->chosenFolder(), folder);
        QCOMPARE(other->result(), int(QDialog::Accepted));
    }
};

QTEST_MAIN(TestModelManagerDialog)
#include "test-model-manager-dialog.moc"
