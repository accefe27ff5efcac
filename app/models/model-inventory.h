// The models on disk as the desktop app lists them: every repository in the Hugging Face cache and in Folio's
// models folder, and folders the user picks, each checked (files, JSON, safetensors headers, sizes against
// the listing) so that a broken model says what is wrong before it is loaded.
#pragma once

#include <QList>
#include <QString>
#include <QStringList>

#include "app/hub/hub-settings.h"
#include "app/hub/model-catalogue.h"

namespace folio {

struct InstalledModel {
    QString repo;   // ORG/NAME where known
    QString title;  // the catalogue's title, else the repository or folder name
    QString dir;
    QString source;  // where it was found, for people
    hub::ModelKind kind = hub::ModelKind::Recognition;
    qint64 bytes = 0;
    QStringList problems;  // each names the file and what is wrong
    bool ok() const { return problems.isEmpty(); }
};

// Every model in the cache and the models folder, recognition models first, then by name.
QList<InstalledModel> installedModels(const hub::HubSettings& settings);

// A folder the user picked, checked as a model of its declared kind.
InstalledModel inspectModelFolder(const QString& dir);

// The installed, working model of a repository (compared without regard to case), if any.
const InstalledModel* findInstalled(const QList<InstalledModel>& models, const QString& repo);

}  // namespace folio
