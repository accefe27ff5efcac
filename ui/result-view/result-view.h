// The recognised document: rendered (HTML tables, formulas typeset by KaTeX in a web view, offline) and as
// Markdown source. Follows the document model as blocks stream in; clicking a block reports it, and
// highlightBlock scrolls to one.
#pragma once

#include <QSet>
#include <QTimer>
#include <QWidget>
#include <utility>
#include <vector>

#include "app/document-model/document-model.h"
#include "app/export/document-writer.h"

class QPlainTextEdit;
class QTabWidget;
class QWebEngineView;

namespace folio {

class ResultPage;

class ResultView : public QWidget {
    Q_OBJECT

public:
    explicit ResultView(const DocumentModel& model, QWidget* parent = nullptr);

    void showDocument(int doc);
    int currentDocument() const { return doc_; }
    // Scrolls to a block's result and highlights it in both tabs (blockId -1: none).
    void highlightBlock(int page, int blockId);
    // Marks the occurrences of the find bar's text in both tabs (empty: none), as the document's results
    // change too.
    void setFoundText(const QString& text, Qt::CaseSensitivity cs);
    // Scrolls the rendered document to a page's results (the page view went to it).
    void scrollToPage(int page);
    // Messages the page's scripts logged (KaTeX's warnings, ...): counted, kept out of the terminal.
    int consoleMessages() const;
    std::pair<int, int> highlightedBlock() const { return highlighted_; }

    // The web page finished loading its shell (KaTeX included) and shows the document.
    bool isReady() const { return ready_; }
    QWebEngineView* webView() const { return web_; }
    QPlainTextEdit* sourceView() const { return source_; }
    QTabWidget* tabs() const { return tabs_; }
    // Pushes pending updates to the page now instead of at the next tick (tests).
    void flush();
    // The labels whose blocks reach Markdown: the source tab shows only them, the rendered tab dims the rest.
    void setMarkdownLabels(const QSet<QString>& labels);
    const QSet<QString>& markdownLabels() const { return labels_; }

Q_SIGNALS:
    // The user clicked a block's result, in either tab.
    void blockActivated(int page, int blockId);
    void ready();
    // A script error in the page, once per message.
    void scriptError(const QString& message);

protected:
    void changeEvent(QEvent* event) override;

private:
    void retranslate();
    void onPageChanged(int doc, int page);
    void onBlockChanged(int doc, int page, int blockId);
    void renderAll();
    void rebuildSource();
    void onSourceCursor();
    // Marks the found text in the rendered page (none where it is empty).
    void runFind();
    // The Markdown tab's marks: the highlighted block's range and the found text's occurrences.
    void updateSourceSelections();
    void run(const QString& script);

    const DocumentModel& model_;
    QTabWidget* tabs_ = nullptr;
    QWebEngineView* web_ = nullptr;
    ResultPage* page_ = nullptr;
    QPlainTextEdit* source_ = nullptr;
    int doc_ = -1;
    bool ready_ = false;
    QSet<QString> labels_ = defaultMarkdownLabels();
    QSet<int> dirtyPages_;
    QSet<std::pair<int, int>> dirtyBlocks_;
    bool sourceDirty_ = true;
    QTimer flushTimer_;
    std::pair<int, int> highlighted_{-1, -1};
    QString foundText_;
    Qt::CaseSensitivity foundCase_ = Qt::CaseInsensitive;
    // The Markdown tab's text: each block's range, for highlighting and clicks.
    struct SourceRange {
        int page = 0;
        int blockId = 0;
        int start = 0;
        int end = 0;
    };
    std::vector<SourceRange> sourceRanges_;
};

}  // namespace folio
