// The session file's text: the desktop app's open documents with their pages and blocks, the user's edits
// and drawn boxes included (JSON, version 1), as SessionStore writes and reads it.
#pragma once

#include <QByteArray>
#include <QDateTime>
#include <QString>
#include <vector>

#include "app/document-model/document-model.h"

namespace folio {

// One document as the session file keeps it.
struct SessionDocument {
    QString path;
    qint64 fileSize = -1;
    QDateTime fileModified;        // UTC, to the millisecond
    std::vector<PageEntry> pages;  // sizes, states, results (no page images nor previews), edited marks
};

// The session file's text for these documents (JSON, version 1). Images of blocks kept as images are PNGs.
QByteArray sessionJson(const std::vector<SessionDocument>& documents);
// Reads a session file's text; throws folio::Error naming `where` and what is wrong.
std::vector<SessionDocument> parseSessionJson(const QByteArray& json, const QString& where);

}  // namespace folio
