// The engine service as the desktop app holds it: loading in the background with its progress, and the
// service's statistics snapshot at a steady rate for the status bar. The GUI thread only reads snapshots.
#pragma once

#include <QObject>
#include <QString>
#include <QTimer>
#include <thread>

#include "engine/service/engine-service.h"

namespace folio {

// The models the app runs: the recognition model, the layout model beside it, and the chat model the chat
// panel talks to.
struct ModelFolders {
    QString recognition;
    QString layout;       // empty: whole pages without layout
    QString description;  // for the status bar and messages
    QString chat;         // empty: the chat uses the recognition model
    QString chatDescription;
};

class EngineHost : public QObject {
    Q_OBJECT

public:
    explicit EngineHost(QObject* parent = nullptr);
    ~EngineHost() override;

    EngineService& service() { return service_; }
    ServiceState state() const { return service_.status().state; }
    // The device in words, as the status bar shows it ("CUDA 0", "CPU").
    QString deviceName() const { return deviceName_; }
    const ModelFolders& models() const { return models_; }

    // Starts loading; progress and the outcome come as signals. Throws nothing: parameters that cannot load
    // end in loadFailed.
    void load(ServiceParams params, const ModelFolders& models, const QString& deviceName);
    void cancelLoad() { service_.cancel_load(); }
    // Rebuilds the loaded engine with other options on a thread of its own (the models stay): ends in
    // reconfigured(), or reconfigureFailed() with the previous options back in place. The requests the
    // engine holds end, so callers wait for runs to finish first.
    void reconfigure(const EngineConfig& config);

    // How often the statistics are read while the engine is ready.
    void setStatsInterval(int ms) { statsTimer_.setInterval(ms); }

Q_SIGNALS:
    // A phase in words and its share done (0..100, or -1 where unknown).
    void loadProgress(const QString& phase, int percent);
    void loaded();
    void loadFailed(const QString& message);
    // The chat model and the recognition model did not fit in memory together: the message says which and
    // why; the recognition model (and layout model) load again alone, ending in loaded() or loadFailed().
    void chatModelDropped(const QString& message);
    void reconfigured();
    void reconfigureFailed(const QString& message);
    void statsChanged(const folio::ServiceStats& stats);

private:
    void poll();
    // Loads the models again without the chat model after a load that ran out of memory with it; false
    // where the failure was another one or there was no chat model.
    bool dropChatModel(const ServiceStatus& status);

    EngineService service_;
    std::thread reconfigurer_;
    bool reconfiguring_ = false;
    QTimer loadTimer_;
    QTimer statsTimer_;
    QString deviceName_;
    ModelFolders models_;
    ServiceParams params_;  // the last load's, for loading again without the chat model
};

}  // namespace folio

Q_DECLARE_METATYPE(folio::ServiceStats)
