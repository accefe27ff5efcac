// The Qt application folio-cli's document commands need (Qt's PDF writer, fonts, painting on page images): a
// GUI application on the offscreen platform unless QT_QPA_PLATFORM names another, with a private runtime
// folder where XDG_RUNTIME_DIR is unset (where Qt would otherwise make one itself, with a warning on stderr).
#pragma once

#include <QGuiApplication>
#include <memory>
#include <string>

namespace folio::cli {

class OffscreenApplication {
public:
    explicit OffscreenApplication(std::string program);
    OffscreenApplication(const OffscreenApplication&) = delete;
    OffscreenApplication& operator=(const OffscreenApplication&) = delete;

private:
    std::string program_;
    int argc_ = 1;
    char* argv_[2] = {nullptr, nullptr};
    std::unique_ptr<QGuiApplication> application_;
};

}  // namespace folio::cli
