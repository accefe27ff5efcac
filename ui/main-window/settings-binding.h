// The settings as the running app follows them. The engine is loaded with the settings' model, device,
// quantization and engine options (the command line's --model and --device over them until the user changes
// them); documents open at the settings' DPI, layout keeps blocks at their thresholds, exports write their
// formats and labels. A change applies at once where nothing runs, else when the run under way ends: a new
// model, device or quantization loads the models again, other engine options rebuild the engine with the
// models kept, the rest needs nothing from the engine.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>

#include "app/jobs/engine-host.h"
#include "app/settings/settings.h"

namespace folio {

class JobController;
class MainWindow;

class SettingsBinding : public QObject {
    Q_OBJECT

public:
    // What the command line chose over the settings.
    struct Overrides {
        QString model;   // a folder or ORG/NAME; empty: the settings'
        QString device;  // "cpu", "cuda", "cuda:N"; empty: the settings'
        int cpuThreads = 0;
    };

    SettingsBinding(Settings& settings, MainWindow& window, EngineHost& engine, JobController& jobs,
                    Overrides overrides, QObject* parent = nullptr);

    // Applies the settings to the window and the jobs and loads the model: the command line's, the settings',
    // or the newest one installed (the window says when there is none).
    void start();

    // The device the engine is loaded on next ("cpu", "cuda:0").
    QString device() const;
    // An engine change waiting for the run under way to end.
    EngineImpact pending() const { return pending_; }

Q_SIGNALS:
    // The engine started applying a change (a load or a rebuild).
    void engineChangeStarted(folio::EngineImpact impact);

private:
    void onChanged(const QStringList& keys, EngineImpact impact);
    void applyDocumentSettings();
    void applyEngineChange();
    void loadConfiguredModels();
    ServiceParams paramsFor(const ModelFolders& models) const;
    void updateFactory();

    Settings& settings_;
    MainWindow& window_;
    EngineHost& engine_;
    JobController& jobs_;
    Overrides overrides_;
    EngineImpact pending_ = EngineImpact::None;
    bool modelChanged_ = false;  // the pending change names other models
};

}  // namespace folio
