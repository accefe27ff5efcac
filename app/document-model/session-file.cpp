#include "app/document-model/session-file.h"

#include <QFile>
#include <QFileInfo>
#include <exception>

#include "app/export/staged-file.h"
#include "engine/common/error.h"

namespace folio {

namespace {

constexpr int kWriteDelayMs = 1500;

}  // namespace

SessionStore::SessionStore(DocumentModel& model, QString path, QObject* parent)
    : QObject(parent), model_(model), path_(std::move(path)) {
    writer_.setMaxThreadCount(1);
    timer_.setSingleShot(true);
    timer_.setInterval(kWriteDelayMs);
    connect(&timer_, &QTimer::timeout, this, &SessionStore::startWrite);
    connect(&model_, &DocumentModel::documentAdded, this, &SessionStore::scheduleWrite);
    connect(&model_, &DocumentModel::documentChanged, this, &SessionStore::scheduleWrite);
    connect(&model_, &DocumentModel::documentClosed, this, &SessionStore::scheduleWrite);
    connect(&model_, &DocumentModel::pageChanged, this, &SessionStore::scheduleWrite);
    connect(&model_, &DocumentModel::blockChanged, this, &SessionStore::scheduleWrite);
}

SessionStore::~SessionStore() {
    writer_.waitForDone();
}

void SessionStore::startWrite() {
    std::vector<SessionDocument> documents = collect();
    writer_.start([this, documents = std::move(documents)] {
        try {
            StagedFile file(path_);
            file.file().write(sessionJson(documents));
            file.commit();
        } catch (const std::exception& e) {
            const QString message = QString::fromUtf8(e.what());
            QMetaObject::invokeMethod(
                this, [this, message] { Q_EMIT failed(message); }, Qt::QueuedConnection);
        }
    });
}

void SessionStore::scheduleWrite() {
    // Started once, not restarted: a stream of changes still writes every couple of seconds.
    if (!restoring_ && !timer_.isActive()) {
        timer_.start();
    }
}

std::vector<SessionDocument> SessionStore::collect() const {
    std::vector<SessionDocument> documents;
    for (int doc = 0; doc < model_.documentCount(); ++doc) {
        if (!model_.isOpen(doc)) {
            continue;
        }
        const DocumentEntry& entry = model_.document(doc);
        const QFileInfo info(entry.path);
        SessionDocument d;
        d.path = entry.path;
        d.fileSize = info.exists() ? info.size() : -1;
        d.fileModified = info.lastModified().toUTC();
        d.pages = entry.pages;
        for (PageEntry& p : d.pages) {
            p.preview = QImage();  // made again from the file
            p.result.image = QImage();
        }
        if (entry.changedOnDisk) {
            d.fileSize = entry.savedFileSize;  // still the saved results' file, until a run replaces them
            d.fileModified = entry.savedFileModified;
        }
        documents.push_back(std::move(d));
    }
    return documents;
}

void SessionStore::writeNow() {
    timer_.stop();
    startWrite();
    writer_.waitForDone();
}

QList<int> SessionStore::restore(QStringList* problems) {
    QList<int> added;
    QFile file(path_);
    if (!file.exists()) {
        return added;
    }
    std::vector<SessionDocument> documents;
    try {
        if (!file.open(QIODevice::ReadOnly)) {
            fail(path_.toStdString(), ": ", file.errorString().toStdString());
        }
        documents = parseSessionJson(file.readAll(), path_);
    } catch (const std::exception& e) {
        // Set aside rather than written over by the next change, so that its results can still be looked at.
        file.close();
        const QString aside = path_ + QStringLiteral(".unreadable");
        QFile::remove(aside);
        const bool kept = QFile::rename(path_, aside);
        if (problems != nullptr) {
            problems->append(kept ? tr("%1 (kept as %2)").arg(QString::fromUtf8(e.what()), aside)
                                  : QString::fromUtf8(e.what()));
        }
        return added;
    }
    restoring_ = true;
    for (SessionDocument& d : documents) {
        const QFileInfo info(d.path);
        if (!info.exists()) {
            if (problems != nullptr) {
                problems->append(tr("%1 is gone: its results were not restored").arg(d.path));
            }
            continue;
        }
        if (model_.findDocument(d.path) >= 0) {
            continue;
        }
        const bool changed = info.size() != d.fileSize || info.lastModified().toUTC() != d.fileModified;
        added << model_.addRestoredDocument(d.path, std::move(d.pages), changed, d.fileSize, d.fileModified);
    }
    restoring_ = false;
    return added;
}

}  // namespace folio
