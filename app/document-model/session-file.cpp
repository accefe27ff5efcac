#include "app/document-model/session-file.h"

#include <QFileInfo>

#include "app/export/deferred-file-writer.h"

namespace folio {

SessionStore::SessionStore(DocumentModel& model, QString path, QObject* parent)
    : QObject(parent),
      model_(model),
      file_(
          std::move(path), [this] { return [documents = collect()] { return sessionJson(documents); }; },
          [this](const QString& message) { Q_EMIT failed(message); }) {
    connect(&model_, &DocumentModel::documentAdded, this, &SessionStore::scheduleWrite);
    connect(&model_, &DocumentModel::documentChanged, this, &SessionStore::scheduleWrite);
    connect(&model_, &DocumentModel::documentClosed, this, &SessionStore::scheduleWrite);
    connect(&model_, &DocumentModel::pageChanged, this, &SessionStore::scheduleWrite);
    connect(&model_, &DocumentModel::blockChanged, this, &SessionStore::scheduleWrite);
}

SessionStore::~SessionStore() = default;

void SessionStore::scheduleWrite() {
    if (!restoring_) {
        file_.schedule();
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
    file_.writeNow();
}

QList<int> SessionStore::restore(QStringList* problems) {
    QList<int> added;
    std::vector<SessionDocument> documents;
    if (!file_.read([&](const QByteArray& bytes) { documents = parseSessionJson(bytes, path()); },
                    problems)) {
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
