#include "ui/main-window/settings-binding.h"

#include <QStatusBar>
#include <algorithm>
#include <exception>
#include <filesystem>
#include <optional>

#include "app/export/document-writer.h"
#include "app/jobs/installed-models.h"
#include "app/jobs/job-controller.h"
#include "app/settings/compute-devices.h"
#include "app/settings/error-setting.h"
#include "engine/models/model-registry.h"
#include "ui/main-window/main-window.h"

namespace folio {

namespace {

// "cuda" alone is the first CUDA device, as folio-cli reads it.
QString canonicalDevice(const QString& device) {
    return device == QLatin1String("cuda") ? QStringLiteral("cuda:0") : device;
}

// The device as the status bar names it: the card's name where the build sees it.
QString deviceTitle(const QString& device) {
    for (const ComputeDevice& d : computeDevices()) {
        if (d.id == device) {
            return d.id == QLatin1String("cpu") ? QStringLiteral("CPU")
                                                : d.name.section(QLatin1String(" ("), 0, 0);
        }
    }
    return device.toUpper();
}

}  // namespace

SettingsBinding::SettingsBinding(Settings& settings, MainWindow& window, EngineHost& engine,
                                 JobController& jobs, Overrides overrides, QObject* parent)
    : QObject(parent),
      settings_(settings),
      window_(window),
      engine_(engine),
      jobs_(jobs),
      overrides_(std::move(overrides)) {
    overrides_.device = canonicalDevice(overrides_.device);
    connect(&settings_, &Settings::changed, this, &SettingsBinding::onChanged);
    connect(&jobs_, &JobController::runningChanged, this, [this](bool running) {
        if (!running && pending_ != EngineImpact::None) {
            applyEngineChange();
        }
    });
    connect(&engine_, &EngineHost::reconfigured, this, [this] { jobs_.setHeld(false); });
    connect(&engine_, &EngineHost::reconfigureFailed, this, [this] { jobs_.setHeld(false); });
}

QString SettingsBinding::device() const {
    return overrides_.device.isEmpty() ? settings_.values().device : overrides_.device;
}

void SettingsBinding::start() {
    applyDocumentSettings();
    updateFactory();
    if (overrides_.device.isEmpty() && !settings_.hasStoredDevice() && device() == QLatin1String("cpu")) {
        // Nobody chose the CPU: it is all that was found. Said once, as what is slow needs a reason.
        window_.reportError(
            tr("No NVIDIA GPU was found (or its driver is not loaded): Folio runs on the CPU, "
               "where a page takes minutes rather than a fraction of a second"),
            QLatin1String(setting_key::kDevice));
    }
    loadConfiguredModels();
}

void SettingsBinding::onChanged(const QStringList& keys, EngineImpact impact) {
    applyDocumentSettings();
    for (const QString& key : keys) {
        if (key == QLatin1String("engine/device")) {
            overrides_.device.clear();  // the user's latest choice wins over the command line's
        }
        if (key.startsWith(QLatin1String("models/"))) {
            overrides_.model.clear();
            modelChanged_ = true;
        }
    }
    if (impact == EngineImpact::None) {
        return;
    }
    pending_ = std::max(pending_, impact);
    if (jobs_.isRunning()) {
        window_.statusBar()->showMessage(tr("The engine takes the new settings when the current run ends"),
                                         8000);
        return;
    }
    applyEngineChange();
}

void SettingsBinding::applyDocumentSettings() {
    const SettingsValues v = settings_.values();
    DocumentOptions documents = jobs_.documentOptions();
    documents.dpi = v.renderDpi;
    jobs_.setDocumentOptions(documents);

    PipelineOptions pipeline = jobs_.pipelineOptions();
    pipeline.labelThresholds.clear();
    for (auto it = v.layoutThresholds.constBegin(); it != v.layoutThresholds.constEnd(); ++it) {
        pipeline.labelThresholds.emplace(it.key().toStdString(), static_cast<float>(it.value()));
    }
    jobs_.setPipelineOptions(pipeline);

    QList<ExportFormat> formats;
    for (const QString& name : v.exportFormats) {
        if (const std::optional<ExportFormat> format = exportFormatFromName(name)) {
            formats << *format;
        }
    }
    const QSet<QString> labels(v.markdownLabels.begin(), v.markdownLabels.end());
    window_.setExportDefaults(formats, labels);
}

void SettingsBinding::applyEngineChange() {
    const EngineImpact impact = pending_;
    const bool modelChanged = modelChanged_;
    pending_ = EngineImpact::None;
    modelChanged_ = false;
    updateFactory();
    Q_EMIT engineChangeStarted(impact);

    const ServiceState state = engine_.state();
    const bool haveModels = !engine_.models().recognition.isEmpty();
    if (modelChanged || !haveModels) {
        loadConfiguredModels();
        return;
    }
    if (impact == EngineImpact::Reload || state != ServiceState::Ready) {
        window_.loadModels(engine_.models());  // the same models with the new device or weights
        return;
    }
    // Reconfigure: the same models, the engine built again with the new options.
    try {
        SettingsValues v = settings_.values();
        v.device = device();
        const ModelDescription model =
            describe_model(std::filesystem::path(engine_.models().recognition.toStdString()));
        const EngineConfig engineConfig = Settings::engineOptions(v, model).engine;
        jobs_.setHeld(true);
        engine_.reconfigure(engineConfig);
    } catch (const std::exception& e) {
        const QString message = QString::fromUtf8(e.what());
        window_.reportError(tr("The settings could not be applied: %1").arg(message),
                            settingForEngineError(message, EngineErrorSource::Reconfiguring));
    }
}

void SettingsBinding::loadConfiguredModels() {
    const SettingsValues v = settings_.values();
    const QString model = overrides_.model.isEmpty() ? v.model.trimmed() : overrides_.model;
    if (model.isEmpty()) {
        window_.findAndLoadModels();
        return;
    }
    try {
        QString note;
        const ModelFolders models = modelsForFolder(model, &note, v.layoutModel);
        if (!note.isEmpty()) {
            window_.reportEngineError(note, EngineErrorSource::Loading, v.layoutModel);
        }
        window_.loadModels(models);
    } catch (const std::exception& e) {
        window_.reportEngineError(QString::fromUtf8(e.what()), EngineErrorSource::Loading, v.layoutModel);
    }
}

ServiceParams SettingsBinding::paramsFor(const ModelFolders& models) const {
    SettingsValues v = settings_.values();
    v.device = device();
    std::optional<std::filesystem::path> layout;
    if (!models.layout.isEmpty()) {
        layout = std::filesystem::path(models.layout.toStdString());
    }
    std::optional<std::filesystem::path> chat;
    if (!models.chat.isEmpty()) {
        chat = std::filesystem::path(models.chat.toStdString());
    }
    QString note;
    ServiceParams params = Settings::serviceParams(v, models.recognition.toStdString(), layout,
                                                   overrides_.cpuThreads, chat, &note);
    if (!note.isEmpty()) {
        window_.reportError(note, QLatin1String(setting_key::kContextLength));
    }
    return params;
}

void SettingsBinding::updateFactory() {
    window_.setChatModelSpec(settings_.values().chatModel);
    window_.setEngineFactory([this](const ModelFolders& models) { return paramsFor(models); },
                             deviceTitle(device()));
}

}  // namespace folio
