// One model download as the desktop app runs it: ModelDownloader::pull for the repository and, for a
// recognition model, the layout model the catalogue pairs with it, on a thread of its own; progress, the end
// and errors re-emitted as queued signals on the job's thread; cancel() from the interface.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <memory>
#include <thread>

#include "app/hub/hub-client.h"
#include "app/hub/hub-settings.h"
#include "app/hub/model-download.h"

namespace folio {

// A PullProgress in Qt types.
struct DownloadProgress {
    QString repo;
    QString stage;  // resolving, listing, downloading, verifying, done
    qint64 bytesDone = 0;
    qint64 bytesTotal = 0;
    double bytesPerSecond = 0;
    double etaSeconds = -1;  // unknown: negative
    int filesDone = 0;
    int filesTotal = 0;
    QString note;
};

class ModelDownloadJob : public QObject {
    Q_OBJECT

public:
    explicit ModelDownloadJob(hub::HubSettings settings, hub::ClientOptions client = {},
                              QObject* parent = nullptr);
    // Cancels a download under way and waits for its thread.
    ~ModelDownloadJob() override;

    // Downloads the repositories one after another (a recognition model, then its layout model); false when
    // a download is already under way.
    bool start(const QStringList& repos);
    // Stops the download; finished() follows with cancelled set. Files already complete stay in the cache
    // and a later download resumes the partial one.
    void cancel();
    bool running() const { return running_; }
    // Timeouts and retries of the Hub client for the next start() (tests shorten them).
    void setClientOptions(hub::ClientOptions client) { client_ = client; }

Q_SIGNALS:
    void progress(const folio::DownloadProgress& progress);
    // ok: every repository is in the cache (snapshot folders in `folders`); otherwise the message says what
    // failed and what to do.
    void finished(bool ok, bool cancelled, const QString& message, const QStringList& folders);

private:
    struct Relay;

    hub::HubSettings settings_;
    hub::ClientOptions client_;
    hub::CancelToken cancel_;
    std::shared_ptr<Relay> relay_;
    std::thread thread_;
    bool running_ = false;
};

}  // namespace folio

Q_DECLARE_METATYPE(folio::DownloadProgress)
