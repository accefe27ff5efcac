#include "app/cli/offscreen-application.h"

#include <unistd.h>

#include <QDir>
#include <QFile>
#include <utility>

namespace folio::cli {

OffscreenApplication::OffscreenApplication(std::string program) : program_(std::move(program)) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
        qputenv("QT_QPA_PLATFORM", "offscreen");
    }
    if (qEnvironmentVariableIsEmpty("XDG_RUNTIME_DIR")) {
        const QString runtime = QDir::temp().filePath(QStringLiteral("runtime-%1").arg(getuid()));
        if (QDir().mkpath(runtime)) {
            QFile::setPermissions(runtime,
                                  QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
            qputenv("XDG_RUNTIME_DIR", runtime.toLocal8Bit());
        }
    }
    argv_[0] = program_.data();
    application_ = std::make_unique<QGuiApplication>(argc_, argv_);
}

}  // namespace folio::cli
