#include "app/jobs/engine-host.h"

#include <QCoreApplication>
#include <algorithm>
#include <exception>

namespace folio {

namespace {

QString phaseText(const LoadProgress& p) {
    switch (p.phase) {
        case LoadPhase::Idle:
            return QCoreApplication::translate("folio::EngineHost", "Starting the engine");
        case LoadPhase::Opening:
            return QCoreApplication::translate("folio::EngineHost", "Opening the model files");
        case LoadPhase::Weights:
            return QCoreApplication::translate("folio::EngineHost", "Loading weights");
        case LoadPhase::Quantization:
            return QCoreApplication::translate("folio::EngineHost", "Quantizing weights");
        case LoadPhase::MemoryPlan:
            return QCoreApplication::translate("folio::EngineHost", "Planning memory");
        case LoadPhase::GraphCapture:
            return QCoreApplication::translate("folio::EngineHost", "Capturing decode graphs");
        case LoadPhase::Ready:
            return QCoreApplication::translate("folio::EngineHost", "Ready");
    }
    return {};
}

int phasePercent(const LoadProgress& p) {
    if (p.phase == LoadPhase::Weights && p.bytes_total > 0) {
        return static_cast<int>(100 * p.bytes_read / p.bytes_total);
    }
    if (p.phase == LoadPhase::Quantization && p.n_to_quantize > 0) {
        return static_cast<int>(100 * p.n_quantized / p.n_to_quantize);
    }
    return -1;
}

}  // namespace

EngineHost::EngineHost(QObject* parent) : QObject(parent) {
    qRegisterMetaType<ServiceStats>();
    loadTimer_.setInterval(100);
    connect(&loadTimer_, &QTimer::timeout, this, &EngineHost::poll);
    statsTimer_.setInterval(500);
    connect(&statsTimer_, &QTimer::timeout, this, [this] { Q_EMIT statsChanged(service_.stats()); });
}

EngineHost::~EngineHost() {
    if (reconfigurer_.joinable()) {
        reconfigurer_.join();
    }
}

void EngineHost::reconfigure(const EngineConfig& config) {
    if (reconfiguring_) {
        Q_EMIT reconfigureFailed(QCoreApplication::translate(
            "folio::EngineHost", "The engine is already applying other settings"));
        return;
    }
    if (reconfigurer_.joinable()) {
        reconfigurer_.join();
    }
    reconfiguring_ = true;
    statsTimer_.stop();
    Q_EMIT loadProgress(QCoreApplication::translate("folio::EngineHost", "Applying settings"), -1);
    reconfigurer_ = std::thread([this, config] {
        QString error;
        try {
            service_.reconfigure(config);
        } catch (const std::exception& e) {
            error = QString::fromUtf8(e.what());
        }
        QMetaObject::invokeMethod(
            this,
            [this, error] {
                reconfiguring_ = false;
                if (service_.status().state == ServiceState::Ready) {
                    Q_EMIT statsChanged(service_.stats());
                    statsTimer_.start();
                }
                if (error.isEmpty()) {
                    Q_EMIT reconfigured();
                } else {
                    Q_EMIT reconfigureFailed(error);
                }
            },
            Qt::QueuedConnection);
    });
}

void EngineHost::load(ServiceParams params, const ModelFolders& models, const QString& deviceName) {
    statsTimer_.stop();
    models_ = models;
    deviceName_ = deviceName;
    params_ = params;
    try {
        service_.load(std::move(params));
    } catch (const std::exception& e) {
        Q_EMIT loadFailed(QString::fromUtf8(e.what()));
        return;
    }
    Q_EMIT loadProgress(phaseText(LoadProgress{}), -1);
    loadTimer_.start();
}

void EngineHost::poll() {
    const ServiceStatus status = service_.status();
    switch (status.state) {
        case ServiceState::Loading:
            Q_EMIT loadProgress(phaseText(status.progress), phasePercent(status.progress));
            break;
        case ServiceState::Ready:
            loadTimer_.stop();
            Q_EMIT loaded();
            Q_EMIT statsChanged(service_.stats());
            statsTimer_.start();
            break;
        case ServiceState::Failed:
            loadTimer_.stop();
            if (dropChatModel(status)) {
                break;
            }
            Q_EMIT loadFailed(QString::fromStdString(status.error));
            break;
        case ServiceState::Empty:
            loadTimer_.stop();
            Q_EMIT loadFailed(QCoreApplication::translate("folio::EngineHost", "Loading was cancelled"));
            break;
    }
}

bool EngineHost::dropChatModel(const ServiceStatus& status) {
    const auto chat = std::find_if(params_.models.begin(), params_.models.end(),
                                   [](const ModelSlot& slot) { return slot.role == ModelRole::Chat; });
    const bool hasOther =
        std::any_of(params_.models.begin(), params_.models.end(),
                    [](const ModelSlot& slot) { return slot.role == ModelRole::Recognition; });
    const QString error = QString::fromStdString(status.error);
    const bool memory = status.error_kind == ErrorKind::OutOfMemory ||
                        error.contains(QLatin1String("not enough memory"), Qt::CaseInsensitive) ||
                        error.contains(QLatin1String("out of memory"), Qt::CaseInsensitive);
    if (chat == params_.models.end() || !hasOther || !memory) {
        return false;
    }
    const QString chatName = models_.chatDescription.isEmpty() ? models_.chat : models_.chatDescription;
    Q_EMIT chatModelDropped(
        tr("The chat model %1 and the OCR model %2 do not fit in the memory of %3 together: %4\n\n%2 runs "
           "alone and the chat uses it. To run both, free memory other programs use, lower the context "
           "length or the concurrent sequences, quantize the weights (WINT8, WINT4) or choose a smaller chat "
           "model.")
            .arg(chatName, models_.description, deviceName_, error));
    params_.models.erase(chat);
    models_.chat.clear();
    models_.chatDescription.clear();
    ServiceParams params = params_;
    load(std::move(params), models_, deviceName_);
    return true;
}

}  // namespace folio
