#include "ui/result-view/result-page.h"

#include <QDesktopServices>
#include <QStringList>

namespace folio {

void ResultPage::javaScriptConsoleMessage(JavaScriptConsoleMessageLevel level, const QString& message,
                                          int line, const QString& source) {
    static const QString kPrefix = QStringLiteral("folio:block:");
    if (message.startsWith(kPrefix)) {
        const QStringList parts = message.mid(kPrefix.size()).split(QLatin1Char(':'));
        if (parts.size() == 2) {
            Q_EMIT blockClicked(parts[0].toInt(), parts[1].toInt());
        }
        return;
    }
    QWebEnginePage::javaScriptConsoleMessage(level, message, line, source);
}

bool ResultPage::acceptNavigationRequest(const QUrl& url, NavigationType type, bool isMainFrame) {
    // The document is set as HTML; a link clicked in it opens outside.
    if (type == NavigationTypeLinkClicked) {
        QDesktopServices::openUrl(url);
        return false;
    }
    return QWebEnginePage::acceptNavigationRequest(url, type, isMainFrame);
}

}  // namespace folio
