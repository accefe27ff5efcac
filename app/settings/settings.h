// The desktop app's settings over QSettings: typed values with defaults, checked with FastDeploy's ranges
// (engine-options), and for each change whether the engine must load its models again, rebuild itself with
// other options, or nothing at all.
#pragma once

#include <QMap>
#include <QObject>
#include <QSettings>
#include <QString>
#include <QStringList>
#include <filesystem>
#include <memory>
#include <optional>

#include "app/options/engine-options.h"
#include "engine/service/engine-service.h"

namespace folio {

// What applying a change asks of a loaded engine.
enum class EngineImpact {
    None,         // documents, export, language: nothing to redo
    Reconfigure,  // EngineService::reconfigure(): the models stay, the cache is planned anew
    Reload,       // EngineService::load(): other models, device or weights
};

// Every setting, as one value that a dialog edits and applies at once.
struct SettingsValues {
    // Models: a folder, or ORG/NAME found in the Hugging Face cache or Folio's models folder; empty: the
    // first recognition model installed. The layout model, empty: the one the catalogue pairs with the model.
    // The chat model the chat panel talks to (ERNIE-4.5-VL), loaded beside the recognition model; empty: the
    // first chat model installed, else none (the chat then uses the recognition model).
    QString model;
    QString layoutModel;
    QString chatModel;
    // "cpu" or "cuda:N", or several cards "cuda:N,cuda:M,…": a copy of the models on each, or with
    // tensorParallel each model split over them (--tensor-parallel-size, one engine).
    QString device = QStringLiteral("cpu");
    bool tensorParallel = false;
    QString quantization = QStringLiteral("none");  // none, wint8, wint4
    // The vision encoders' linear layers: "none" (as the language model's dense layers are kept) or "fp8"
    // (--quantize-vision fp8: faster on cards of compute capability 8.9 and later, less exact).
    QString visionQuantization = QStringLiteral("none");
    // FastDeploy's engine options.
    double gpuMemoryUtilization = 0.9;
    // 0: automatic, 16384 or the model's context if less (each model's own where several load).
    int maxModelLen = 0;
    int maxNumSeqs = 256;
    int maxNumBatchedTokens = 8192;
    bool enablePrefixCaching = true;
    QString kvCacheDtype = QStringLiteral("auto");  // auto, int8 (vLLM's --kv-cache-dtype)
    // Documents.
    int renderDpi = 200;
    // Layout score thresholds by label; a label without one keeps the layout model's own (PaddleX's).
    QMap<QString, double> layoutThresholds;
    QStringList markdownLabels;  // labels whose blocks reach Markdown and HTML, sorted
    QStringList exportFormats;   // markdown, json, html, pdf, xlsx, docx
    // The interface language: "" follows the system, else "en" or "zh_CN".
    QString language;

    bool operator==(const SettingsValues&) const = default;
};

// One setting found wrong: its key and what is wrong, with the range.
struct SettingsProblem {
    QString key;
    QString message;
};

class Settings : public QObject {
    Q_OBJECT

public:
    // The user's settings (QSettings' native store for Folio), or an INI file at iniPath (tests, portable
    // use).
    explicit Settings(QObject* parent = nullptr);
    explicit Settings(const QString& iniPath, QObject* parent = nullptr);
    ~Settings() override;

    // Defaults for a device: the CPU runs 8 sequences, a GPU 256, as folio-cli does.
    static SettingsValues defaults(const QString& device = QStringLiteral("cpu"));
    // Labels and formats the app offers.
    static QStringList layoutLabels();
    static QStringList exportFormatNames();
    static QStringList languages();  // "en", "zh_CN"

    SettingsValues values() const { return values_; }

    // Every problem of the values, checked as folio-cli checks its options; modelContext is the model's
    // context length where known (max_model_len may not exceed it).
    static QList<SettingsProblem> validate(const SettingsValues& values,
                                           std::optional<int64_t> modelContext = std::nullopt);
    // What a change from `before` to `after` asks of the engine, and the keys that differ.
    static EngineImpact impactOf(const SettingsValues& before, const SettingsValues& after);
    static QStringList changedKeys(const SettingsValues& before, const SettingsValues& after);

    // Checks and stores the values: on success emits changed() (when anything changed) and returns nothing;
    // otherwise stores nothing and returns the problems.
    QList<SettingsProblem> apply(const SettingsValues& values,
                                 std::optional<int64_t> modelContext = std::nullopt);

    // The engine options of the values (FastDeploy's checks), for EngineService::load/reconfigure; throws
    // folio::Error naming the option and its range.
    static cli::EngineOptions engineOptions(const SettingsValues& values, const ModelDescription& model);

    // What EngineService::load needs to run the values' model from modelDir (and the layout model from
    // layoutDir, the chat model from chatDir in a chat slot beside it): the device's backend (the CPU with
    // cpuThreads threads, 0 for every core) and its free memory, the quantization, and the engine options
    // checked against the model's context (a context length beyond it is the model's own, said in `note`).
    // Throws folio::Error naming the file or the option that is wrong.
    static ServiceParams serviceParams(const SettingsValues& values, const std::filesystem::path& modelDir,
                                       const std::optional<std::filesystem::path>& layoutDir = std::nullopt,
                                       int cpuThreads = 0,
                                       const std::optional<std::filesystem::path>& chatDir = std::nullopt,
                                       QString* note = nullptr);

    // Where the values are kept.
    QString fileName() const;
    // Whether the device was ever stored (chosen in the dialog, or other settings applied with it), rather
    // than taken from the devices found at start.
    bool hasStoredDevice() const;

Q_SIGNALS:
    // After apply(): the keys that changed and what the engine must do about them.
    void changed(const QStringList& keys, folio::EngineImpact impact);
    // The interface language changed ("" for the system's).
    void languageChanged(const QString& language);

private:
    void load();
    void store(const SettingsValues& values);

    std::unique_ptr<QSettings> store_;
    SettingsValues values_;
};

const char* engineImpactName(EngineImpact impact);

}  // namespace folio

Q_DECLARE_METATYPE(folio::EngineImpact)
