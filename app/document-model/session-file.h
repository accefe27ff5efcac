// The desktop app's session: each open document's pages and blocks, the user's edits and drawn boxes
// included, kept in a JSON file beside the settings, so that a document opened again shows its results
// without running. Each document records its file's size and modification time: a file changed since is
// restored with its results flagged (DocumentEntry::changedOnDisk), for the app to offer a new run.
#pragma once

#include <QDateTime>
#include <QHash>
#include <QObject>
#include <QString>
#include <vector>

#include "app/document-model/document-model.h"
#include "app/document-model/session-json.h"
#include "app/export/deferred-file-writer.h"

namespace folio {

// Keeps the model's open documents in a session file: written a moment after the model changes (at most every
// couple of seconds, on a thread of its own, under a temporary name renamed over the file), and read back
// into the model by restore().
class SessionStore : public QObject {
    Q_OBJECT

public:
    SessionStore(DocumentModel& model, QString path, QObject* parent = nullptr);
    ~SessionStore() override;

    const QString& path() const { return file_.path(); }
    // Adds the session file's documents to the model, each with its pages and blocks as they were saved; a
    // document whose file is gone is left out (said in `problems`), one whose file changed is flagged. The
    // new documents' indices.
    QList<int> restore(QStringList* problems = nullptr);
    // Writes the file now and waits for it (quitting, tests).
    void writeNow();

Q_SIGNALS:
    // The file could not be written or read: why.
    void failed(const QString& message);

private:
    void scheduleWrite();
    std::vector<SessionDocument> collect() const;

    DocumentModel& model_;
    DeferredFileWriter file_;
    bool restoring_ = false;
};

}  // namespace folio
