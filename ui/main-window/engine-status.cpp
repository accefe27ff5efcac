#include "ui/main-window/engine-status.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>

namespace folio {

QString byteSize(int64_t bytes) {
    const double gib = static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
    if (gib >= 1.0) {
        return QStringLiteral("%1 GiB").arg(gib, 0, 'f', 1);
    }
    return QStringLiteral("%1 MiB").arg(static_cast<double>(bytes) / (1024.0 * 1024.0), 0, 'f', 0);
}

EngineStatus::EngineStatus(QWidget* parent) : QWidget(parent) {
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 4, 0);
    layout->setSpacing(14);
    loading_ = new QProgressBar(this);
    loading_->setMaximumWidth(160);
    loading_->setMaximumHeight(14);
    loading_->setTextVisible(false);
    loading_->hide();
    device_ = new QLabel(this);
    memory_ = new QLabel(this);
    cache_ = new QLabel(this);
    rate_ = new QLabel(this);
    retranslate();
    for (QWidget* w :
         {static_cast<QWidget*>(loading_), static_cast<QWidget*>(device_), static_cast<QWidget*>(memory_),
          static_cast<QWidget*>(cache_), static_cast<QWidget*>(rate_)}) {
        layout->addWidget(w);
    }
    setUnloaded(tr("No model loaded"));
}

void EngineStatus::setDevice(const QString& device, const QString& model) {
    loading_->hide();
    device_->setText(model.isEmpty() ? device : QStringLiteral("%1 · %2").arg(model, device));
}

void EngineStatus::setLoading(const QString& phase, int percent) {
    loading_->show();
    loading_->setRange(0, percent < 0 ? 0 : 100);
    if (percent >= 0) {
        loading_->setValue(percent);
    }
    device_->setText(phase + QStringLiteral("…"));
    memory_->clear();
    cache_->clear();
    rate_->clear();
}

void EngineStatus::setUnloaded(const QString& why) {
    loading_->hide();
    device_->setText(why);
    memory_->clear();
    cache_->clear();
    rate_->clear();
}

void EngineStatus::setStats(const ServiceStats& s) {
    if (s.devices.size() > 1) {
        // Each device's memory and requests.
        QStringList parts;
        for (const DeviceStats& d : s.devices) {
            const QString name = QString::fromStdString(d.device);
            parts << (d.failed ? tr("%1 failed").arg(name)
                               : tr("%1 %2, load %3")
                                     .arg(name, byteSize(d.vram_used_bytes))
                                     .arg(d.n_running + d.n_waiting));
        }
        memory_->setText(parts.join(QStringLiteral(" · ")));
    } else if (s.vram_free_bytes >= 0) {
        const int64_t total = s.vram_used_bytes + s.vram_other_bytes + s.vram_free_bytes;
        memory_->setText(tr("VRAM %1 / %2").arg(byteSize(s.vram_used_bytes), byteSize(total)));
    } else {
        memory_->setText(tr("Memory %1").arg(byteSize(s.vram_used_bytes)));
    }
    const double kv =
        s.n_kv_blocks > 0 ? 100.0 * static_cast<double>(s.n_kv_blocks_used) / s.n_kv_blocks : 0.0;
    cache_->setText(tr("KV %1%").arg(kv, 0, 'f', 0));
    // The service takes its snapshot after each step: an idle engine's last one still has the rate of the
    // last work, which is no rate now.
    int64_t busy = 0;
    for (size_t i = 0; i < s.n_running.size(); ++i) {
        busy += s.n_running[i] + s.n_waiting[i];
    }
    rate_->setText(tr("%1 tok/s").arg(busy > 0 ? s.tokens_per_second : 0.0, 0, 'f', 0));
}

QString EngineStatus::text() const {
    return QStringList{device_->text(), memory_->text(), cache_->text(), rate_->text()}.join(
        QStringLiteral(" | "));
}

void EngineStatus::retranslate() {
    memory_->setToolTip(
        tr("Device memory used by Folio, of the device's total; with several devices, each "
           "device's memory and its requests running and waiting"));
    cache_->setToolTip(tr("KV-cache blocks in use"));
    rate_->setToolTip(tr("Tokens generated per second over the last seconds"));
}

void EngineStatus::changeEvent(QEvent* event) {
    if (event->type() == QEvent::LanguageChange) {
        retranslate();
    }
    QWidget::changeEvent(event);
}

}  // namespace folio
