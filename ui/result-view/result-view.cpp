#include "ui/result-view/result-view.h"

#include <QEvent>
#include <QPlainTextEdit>
#include <QScrollBar>
#include <QTabWidget>
#include <QTextBlock>
#include <QVBoxLayout>
#include <QWebEngineSettings>
#include <QWebEngineView>
#include <algorithm>

#include "app/export/markdown-block.h"
#include "ui/result-view/result-html.h"
#include "ui/result-view/result-page.h"

namespace folio {

ResultView::ResultView(const DocumentModel& model, QWidget* parent) : QWidget(parent), model_(model) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    tabs_ = new QTabWidget(this);
    tabs_->setDocumentMode(true);
    layout->addWidget(tabs_);

    web_ = new QWebEngineView(tabs_);
    page_ = new ResultPage(web_);
    page_->settings()->setAttribute(QWebEngineSettings::LocalContentCanAccessFileUrls, true);
    page_->settings()->setAttribute(QWebEngineSettings::JavascriptCanOpenWindows, false);
    web_->setPage(page_);
    web_->setContextMenuPolicy(Qt::NoContextMenu);
    tabs_->addTab(web_, tr("Document"));

    source_ = new QPlainTextEdit(tabs_);
    source_->setReadOnly(true);
    source_->setLineWrapMode(QPlainTextEdit::WidgetWidth);
    QFont mono(QStringLiteral("monospace"));
    mono.setStyleHint(QFont::Monospace);
    mono.setPointSizeF(font().pointSizeF() * 0.95);
    source_->setFont(mono);
    tabs_->addTab(source_, tr("Markdown"));
    retranslate();

    connect(page_, &QWebEnginePage::loadFinished, this, [this](bool ok) {
        ready_ = ok;
        if (ok) {
            renderAll();
            Q_EMIT ready();
        }
    });
    connect(page_, &ResultPage::blockClicked, this, [this](int page, int blockId) {
        highlighted_ = {page, blockId};
        Q_EMIT blockActivated(page, blockId);
    });
    connect(page_, &ResultPage::scriptError, this, &ResultView::scriptError);
    connect(source_, &QPlainTextEdit::cursorPositionChanged, this, &ResultView::onSourceCursor);
    connect(tabs_, &QTabWidget::currentChanged, this, [this] {
        if (tabs_->currentWidget() == source_ && sourceDirty_) {
            rebuildSource();
        }
    });
    connect(&model_, &DocumentModel::pageChanged, this, &ResultView::onPageChanged);
    connect(&model_, &DocumentModel::blockChanged, this, &ResultView::onBlockChanged);
    flushTimer_.setInterval(120);
    flushTimer_.setSingleShot(true);
    connect(&flushTimer_, &QTimer::timeout, this, &ResultView::flush);

    page_->setHtml(resultShellHtml(), resultShellBaseUrl());
}

void ResultView::run(const QString& script) {
    if (ready_) {
        page_->runJavaScript(script);
    }
}

void ResultView::showDocument(int doc) {
    if (doc == doc_) {
        return;
    }
    doc_ = doc;
    highlighted_ = {-1, -1};
    renderAll();
}

void ResultView::retranslate() {
    tabs_->setTabText(tabs_->indexOf(web_), tr("Document"));
    tabs_->setTabText(tabs_->indexOf(source_), tr("Markdown"));
}

void ResultView::changeEvent(QEvent* event) {
    if (event->type() == QEvent::LanguageChange) {
        retranslate();
    }
    QWidget::changeEvent(event);
}

void ResultView::setMarkdownLabels(const QSet<QString>& labels) {
    if (labels == labels_) {
        return;
    }
    labels_ = labels;
    renderAll();
}

void ResultView::renderAll() {
    dirtyPages_.clear();
    dirtyBlocks_.clear();
    run(QStringLiteral("folio.clear();"));
    if (!foundText_.isEmpty()) {
        runFind();
    }
    if (doc_ >= 0 && doc_ < model_.documentCount()) {
        const auto& pages = model_.document(doc_).pages;
        for (int p = 0; p < static_cast<int>(pages.size()); ++p) {
            dirtyPages_.insert(p);
        }
    }
    sourceDirty_ = true;
    flush();
}

void ResultView::onPageChanged(int doc, int page) {
    if (doc != doc_) {
        return;
    }
    dirtyPages_.insert(page);
    sourceDirty_ = true;
    if (!flushTimer_.isActive()) {
        flushTimer_.start();
    }
}

void ResultView::onBlockChanged(int doc, int page, int blockId) {
    if (doc != doc_) {
        return;
    }
    dirtyBlocks_.insert({page, blockId});
    sourceDirty_ = true;
    if (!flushTimer_.isActive()) {
        flushTimer_.start();
    }
}

void ResultView::flush() {
    flushTimer_.stop();
    if (doc_ < 0 || doc_ >= model_.documentCount()) {
        return;
    }
    if (ready_) {
        QString script;
        QList<int> pages = dirtyPages_.values();
        std::sort(pages.begin(), pages.end());
        for (const int p : pages) {
            if (model_.hasPage(doc_, p)) {
                script += QStringLiteral("folio.setPage(%1,%2);\n")
                              .arg(p)
                              .arg(jsString(resultPageHtml(model_.page(doc_, p), p, labels_)));
            }
        }
        for (const auto& [p, b] : std::as_const(dirtyBlocks_)) {
            if (dirtyPages_.contains(p)) {
                continue;
            }
            const BlockResult* block = model_.block(doc_, p, b);
            if (block != nullptr) {
                script += QStringLiteral("folio.setBlock(%1,%2,%3);\n")
                              .arg(p)
                              .arg(b)
                              .arg(jsString(resultBlockHtml(model_.page(doc_, p), p, *block, labels_)));
            }
        }
        dirtyPages_.clear();
        dirtyBlocks_.clear();
        if (!script.isEmpty()) {
            page_->runJavaScript(script);
        }
    }
    if (sourceDirty_ && tabs_->currentWidget() == source_) {
        rebuildSource();
    }
}

void ResultView::rebuildSource() {
    sourceDirty_ = false;
    sourceRanges_.clear();
    if (doc_ < 0 || doc_ >= model_.documentCount()) {
        source_->clear();
        return;
    }
    QString text;
    const auto& pages = model_.document(doc_).pages;
    for (int p = 0; p < static_cast<int>(pages.size()); ++p) {
        const PageEntry& page = pages[static_cast<size_t>(p)];
        for (const BlockResult& block : page.result.blocks) {
            // The labels with a Markdown form (the export library's), of those the settings chose.
            if (!folio::markdownLabels().contains(block.label) || !labels_.contains(block.label)) {
                continue;
            }
            const QString imageLink =
                block.image.isNull() ? QString()
                                     : QStringLiteral("imgs/page%1_block%2.jpg").arg(p + 1).arg(block.id);
            const QString markdown = markdownOfBlock(block, imageLink, page.result.width);
            if (markdown.trimmed().isEmpty()) {
                continue;
            }
            const int start = static_cast<int>(text.size());
            text += markdown.trimmed();
            sourceRanges_.push_back({p, block.id, start, static_cast<int>(text.size())});
            text += QStringLiteral("\n\n");
        }
    }
    const QSignalBlocker blocker(source_);
    const int scroll = source_->verticalScrollBar() ? source_->verticalScrollBar()->value() : 0;
    source_->setPlainText(text);
    source_->verticalScrollBar()->setValue(scroll);
    if (highlighted_.first >= 0) {
        highlightBlock(highlighted_.first, highlighted_.second);
    } else {
        updateSourceSelections();
    }
}

void ResultView::scrollToPage(int page) {
    flush();  // the page's section exists before the scroll
    run(QStringLiteral("folio.scrollToPage(%1);").arg(page));
}

int ResultView::consoleMessages() const {
    return page_->consoleMessages();
}

void ResultView::highlightBlock(int page, int blockId) {
    highlighted_ = {page, blockId};
    run(QStringLiteral("folio.mark(%1,%2,true);").arg(page).arg(blockId));
    for (const SourceRange& range : sourceRanges_) {
        if (range.page == page && range.blockId == blockId) {
            const QSignalBlocker blocker(source_);
            QTextCursor cursor(source_->document());
            cursor.setPosition(range.start);
            source_->setTextCursor(cursor);
            source_->centerCursor();
            break;
        }
    }
    updateSourceSelections();
}

void ResultView::setFoundText(const QString& text, Qt::CaseSensitivity cs) {
    foundText_ = text;
    foundCase_ = cs;
    runFind();
    updateSourceSelections();
}

void ResultView::runFind() {
    run(QStringLiteral("folio.find(%1,%2);")
            .arg(jsString(foundText_))
            .arg(foundCase_ == Qt::CaseSensitive ? "true" : "false"));
}

void ResultView::updateSourceSelections() {
    QList<QTextEdit::ExtraSelection> selections;
    for (const SourceRange& range : sourceRanges_) {
        if (range.page == highlighted_.first && range.blockId == highlighted_.second) {
            QTextEdit::ExtraSelection selection;
            selection.format.setBackground(QColor(0xff, 0xf3, 0xc4));
            selection.cursor = QTextCursor(source_->document());
            selection.cursor.setPosition(range.start);
            selection.cursor.setPosition(range.end, QTextCursor::KeepAnchor);
            selections << selection;
            break;
        }
    }
    // The found text's occurrences over it, as many as a view can mark without slowing down.
    constexpr int kMaxMarks = 2000;
    const QTextDocument::FindFlags flags =
        foundCase_ == Qt::CaseSensitive ? QTextDocument::FindCaseSensitively : QTextDocument::FindFlags();
    QTextCursor at(source_->document());
    for (int n = 0; !foundText_.isEmpty() && n < kMaxMarks; ++n) {
        at = source_->document()->find(foundText_, at, flags);
        if (at.isNull()) {
            break;
        }
        QTextEdit::ExtraSelection selection;
        selection.format.setBackground(QColor(0xff, 0xe0, 0x66));
        selection.cursor = at;
        selections << selection;
    }
    source_->setExtraSelections(selections);
}

void ResultView::onSourceCursor() {
    const int position = source_->textCursor().position();
    for (const SourceRange& range : sourceRanges_) {
        if (position >= range.start && position <= range.end) {
            if (highlighted_ != std::pair{range.page, range.blockId}) {
                highlightBlock(range.page, range.blockId);
                Q_EMIT blockActivated(range.page, range.blockId);
            }
            return;
        }
    }
}

}  // namespace folio
