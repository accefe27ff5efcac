// Saves a widget as PNG under FOLIO_SCREENSHOT_DIR when that variable is set, so that the dialogs and panels
// can be looked at as users see them (offscreen platform).
#pragma once

#include <QCoreApplication>
#include <QDir>
#include <QWidget>

namespace folio::test {

inline void saveScreenshot(QWidget* widget, const QString& name) {
    const QString dir = qEnvironmentVariable("FOLIO_SCREENSHOT_DIR");
    if (dir.isEmpty()) {
        return;
    }
    QDir().mkpath(dir);
    widget->show();
    // Let pending layout requests settle first.
    for (int i = 0; i < 3; ++i) {
        QCoreApplication::processEvents();
    }
    widget->grab().save(QDir(dir).filePath(name + QStringLiteral(".png")));
}

}  // namespace folio::test
