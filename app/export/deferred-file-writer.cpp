#include "app/export/deferred-file-writer.h"

#include <QCoreApplication>
#include <QFile>
#include <exception>

#include "app/export/staged-file.h"
#include "engine/common/error.h"

namespace folio {

namespace {

// An unreadable state file moved aside; `why` with where it went.
QString setAsideUnreadable(const QString& path, const QString& why) {
    const QString aside = path + QStringLiteral(".unreadable");
    QFile::remove(aside);
    if (!QFile::rename(path, aside)) {
        return why;
    }
    return QCoreApplication::translate("folio::DeferredFileWriter", "%1 (kept as %2)").arg(why, aside);
}

}  // namespace

DeferredFileWriter::DeferredFileWriter(QString path, Snapshot snapshot,
                                       std::function<void(const QString&)> failed, int delayMs)
    : path_(std::move(path)), snapshot_(std::move(snapshot)), failed_(std::move(failed)) {
    writer_.setMaxThreadCount(1);
    timer_.setSingleShot(true);
    timer_.setInterval(delayMs);
    QObject::connect(&timer_, &QTimer::timeout, &timer_, [this] { start(); });
}

DeferredFileWriter::~DeferredFileWriter() {
    writer_.waitForDone();
}

void DeferredFileWriter::schedule() {
    // Started once, not restarted: a stream of changes still writes every couple of seconds.
    if (!timer_.isActive()) {
        timer_.start();
    }
}

void DeferredFileWriter::writeNow() {
    timer_.stop();
    start();
    writer_.waitForDone();
}

void DeferredFileWriter::start() {
    writer_.start([this, bytes = snapshot_()] {
        try {
            StagedFile file(path_);
            file.file().write(bytes());
            file.commit();
        } catch (const std::exception& e) {
            const QString message = QString::fromUtf8(e.what());
            // On the owner's thread, where the timer lives; dropped if the writer is gone by then.
            QMetaObject::invokeMethod(
                &timer_,
                [this, message] {
                    if (failed_) {
                        failed_(message);
                    }
                },
                Qt::QueuedConnection);
        }
    });
}

bool DeferredFileWriter::read(const std::function<void(const QByteArray&)>& parse,
                              QStringList* problems) const {
    QFile file(path_);
    if (!file.exists()) {
        return false;
    }
    try {
        if (!file.open(QIODevice::ReadOnly)) {
            fail(path_.toStdString(), ": ", file.errorString().toStdString());
        }
        parse(file.readAll());
        return true;
    } catch (const std::exception& e) {
        file.close();
        const QString message = setAsideUnreadable(path_, QString::fromUtf8(e.what()));
        if (problems != nullptr) {
            problems->append(message);
        }
        return false;
    }
}

}  // namespace folio
