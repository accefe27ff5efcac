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
    // KaTeX warns about every formula it types in a way it does not like (tens of megabytes in a long
    // session): not the terminal's business. Script errors go to the problems panel, each once.
    ++consoleMessages_;
    if (level == ErrorMessageLevel && errorsSaid_.size() < 20 && !errorsSaid_.contains(message)) {
        errorsSaid_.insert(message);
        Q_EMIT scriptError(QStringLiteral("%1 (%2:%3)").arg(message, source).arg(line));
    }
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
