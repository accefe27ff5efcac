#include "app/export/output-folder.h"

#include <QFile>
#include <QFileInfo>
#include <filesystem>
#include <system_error>

#include "engine/common/error.h"

namespace folio {

void makeOutputFolder(const QString& folder, const char* purpose) {
    if (folder.isEmpty()) {
        fail("cannot create the ", purpose, ": no folder given");
    }
    const QFileInfo info(folder);
    if (info.isDir()) {
        return;
    }
    if (info.exists()) {
        fail(folder.toStdString(), ": cannot create the ", purpose, ": a file of that name is in the way");
    }
    const std::filesystem::path path(QFile::encodeName(folder).toStdString());
    std::error_code error;
    std::filesystem::create_directories(path, error);
    if (error) {
        fail(folder.toStdString(), ": cannot create the ", purpose, ": ", error.message());
    }
    if (!QFileInfo(folder).isDir()) {  // a file made there meanwhile
        fail(folder.toStdString(), ": cannot create the ", purpose, ": a file of that name is in the way");
    }
}

}  // namespace folio
