// The folders output files go to: made with the folders above them, or an error that names the folder and
// says why it cannot be made.
#pragma once

#include <QString>

namespace folio {

// Makes `folder` and any folder above it that is missing; nothing happens where it exists. Throws
// folio::Error "FOLDER: cannot create the PURPOSE: REASON", the reason the system's ("Permission denied") or
// "a file of that name is in the way".
void makeOutputFolder(const QString& folder, const char* purpose = "output folder");

}  // namespace folio
