// The result view's web page: reports a click on a block (the page's script logs "folio:block:P:B") and
// keeps navigation inside the rendered document.
#pragma once

#include <QWebEnginePage>

namespace folio {

class ResultPage : public QWebEnginePage {
    Q_OBJECT

public:
    explicit ResultPage(QObject* parent = nullptr) : QWebEnginePage(parent) {}

Q_SIGNALS:
    void blockClicked(int page, int blockId);

protected:
    void javaScriptConsoleMessage(JavaScriptConsoleMessageLevel level, const QString& message, int line,
                                  const QString& source) override;
    bool acceptNavigationRequest(const QUrl& url, NavigationType type, bool isMainFrame) override;
};

}  // namespace folio
