// The models the desktop app runs by default: the newest PaddleOCR-VL already on disk (the Hugging Face
// cache, Folio's models folder) with the layout model it was released with, or a folder the user chose.
#pragma once

#include <QString>
#include <optional>

#include "app/jobs/engine-host.h"

namespace folio {

// The recognition repositories looked for, newest first.
QStringList defaultRecognitionRepos();

// The installed pair, or nothing with `why` saying what is missing and how to get it. Reads the disk (call it
// off the GUI thread).
std::optional<ModelFolders> findInstalledModels(QString* why);

// A recognition model folder or ORG/NAME the user named, with its paired layout model where one is installed
// (a missing layout model leaves layout empty and says so in `note`), or the layout model layoutSpec names.
// Throws folio::Error naming what is wrong with either folder.
ModelFolders modelsForFolder(const QString& spec, QString* note, const QString& layoutSpec = {});

// Adds the chat model to the folders: the folder or ORG/NAME spec names (throws folio::Error naming what is
// wrong with it), or with an empty spec the first of the catalogue's chat models installed. False where spec
// is empty and none is installed. Reads the disk.
bool addChatModel(ModelFolders& folders, const QString& spec);

// The catalogue's chat repositories, in its order.
QStringList chatRepos();

}  // namespace folio
