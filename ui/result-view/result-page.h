// The result view's web page: reports a click on a block (the page's script logs "folio:block:P:B") and
// keeps navigation inside the rendered document.
#pragma once

#include <QSet>
#include <QWebEnginePage>

namespace folio {

class ResultPage : public QWebEnginePage {
    Q_OBJECT

public:
    explicit ResultPage(QObject* parent = nullptr) : QWebEnginePage(parent) {}

    // Console messages other than the page's own (KaTeX's warnings, ...), counted rather than printed.
    int consoleMessages() const { return consoleMessages_; }

Q_SIGNALS:
    void blockClicked(int page, int blockId);
    // A script error, once per distinct message.
    void scriptError(const QString& message);

protected:
    void javaScriptConsoleMessage(JavaScriptConsoleMessageLevel level, const QString& message, int line,
                                  const QString& source) override;
    bool acceptNavigationRequest(const QUrl& url, NavigationType type, bool isMainFrame) override;

private:
    int consoleMessages_ = 0;
    QSet<QString> errorsSaid_;
};

}  // namespace folio
