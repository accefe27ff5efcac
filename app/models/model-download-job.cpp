#include "app/models/model-download-job.h"

#include <QMetaObject>
#include <mutex>

#include "engine/common/error.h"

namespace folio {

// Carries events from the download thread to the job while it lives.
struct ModelDownloadJob::Relay {
    std::mutex mutex;
    ModelDownloadJob* target = nullptr;

    // Calls f(job) on the job's thread.
    template <typename F>
    void post(F f) {
        std::lock_guard lock(mutex);
        if (ModelDownloadJob* job = target) {
            QMetaObject::invokeMethod(
                job, [job, f] { f(job); }, Qt::QueuedConnection);
        }
    }
};

ModelDownloadJob::ModelDownloadJob(hub::HubSettings settings, hub::ClientOptions client, QObject* parent)
    : QObject(parent), settings_(std::move(settings)), client_(client), relay_(std::make_shared<Relay>()) {
    qRegisterMetaType<folio::DownloadProgress>();
    relay_->target = this;
}

ModelDownloadJob::~ModelDownloadJob() {
    {
        std::lock_guard lock(relay_->mutex);
        relay_->target = nullptr;
    }
    cancel_.cancel();
    if (thread_.joinable()) {
        thread_.join();
    }
}

bool ModelDownloadJob::start(const QStringList& repos) {
    if (running_ || repos.isEmpty()) {
        return false;
    }
    if (thread_.joinable()) {
        thread_.join();
    }
    running_ = true;
    cancel_ = hub::CancelToken();
    std::vector<std::string> names;
    for (const QString& repo : repos) {
        names.push_back(repo.toStdString());
    }
    thread_ = std::thread(
        [relay = relay_, settings = settings_, client = client_, cancel = cancel_, names = std::move(names)] {
            QStringList folders;
            bool ok = true;
            bool cancelled = false;
            QString message;
            try {
                const hub::ModelDownloader downloader(settings, client);
                for (const std::string& repo : names) {
                    hub::PullOptions options;
                    options.cancel = cancel;
                    options.on_progress = [&relay](const hub::PullProgress& p) {
                        DownloadProgress d;
                        d.repo = QString::fromStdString(p.repo);
                        d.stage = QString::fromLatin1(hub::pull_stage_name(p.stage));
                        d.bytesDone = p.bytes_done;
                        d.bytesTotal = p.bytes_total;
                        d.bytesPerSecond = p.bytes_per_second;
                        d.etaSeconds = p.eta_seconds.value_or(-1.0);
                        d.filesDone = p.files_done;
                        d.filesTotal = p.files_total;
                        d.note = QString::fromStdString(p.note);
                        relay->post([d](ModelDownloadJob* job) { Q_EMIT job->progress(d); });
                    };
                    const hub::PullResult result = downloader.pull(repo, options);
                    folders << QString::fromStdString(result.snapshot.string());
                }
            } catch (const hub::HubError& e) {
                ok = false;
                cancelled = e.kind() == hub::HubErrorKind::Cancelled;
                message = QString::fromStdString(e.what());
            } catch (const std::exception& e) {
                ok = false;
                message = QString::fromStdString(e.what());
            }
            relay->post([ok, cancelled, message, folders](ModelDownloadJob* job) {
                job->running_ = false;
                Q_EMIT job->finished(ok, cancelled, message, folders);
            });
        });
    return true;
}

void ModelDownloadJob::cancel() {
    cancel_.cancel();
}

}  // namespace folio
