// The status bar's engine part: the device, memory used and total, KV-cache use and tokens per second from
// the service's snapshot, and the loading progress while a model loads.
#pragma once

#include <QWidget>

#include "engine/service/service-stats.h"

class QLabel;
class QProgressBar;

namespace folio {

class EngineStatus : public QWidget {
    Q_OBJECT

public:
    explicit EngineStatus(QWidget* parent = nullptr);

    void setDevice(const QString& device, const QString& model);
    void setLoading(const QString& phase, int percent);
    void setUnloaded(const QString& why);
    void setStats(const ServiceStats& stats);

    QString text() const;  // everything shown, for tests

protected:
    void changeEvent(QEvent* event) override;

private:
    void retranslate();
    QLabel* device_ = nullptr;
    QLabel* memory_ = nullptr;
    QLabel* cache_ = nullptr;
    QLabel* rate_ = nullptr;
    QProgressBar* loading_ = nullptr;
};

// Bytes as people read them: "3.1 GiB", "512 MiB".
QString byteSize(int64_t bytes);

}  // namespace folio
