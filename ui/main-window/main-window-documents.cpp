// The main window's documents and pages: opening files and the session, the document and page in view, the
// selected block, the document list and the page thumbnails, closing, and the page images in use.
#include "ui/main-window/main-window.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QInputDialog>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QPainter>
#include <QPushButton>
#include <QScopedValueRollback>
#include <QStatusBar>
#include <QUndoGroup>
#include <QUndoStack>
#include <exception>

#include "app/document-model/document-model.h"
#include "app/document-model/document-search.h"
#include "app/document-model/session-file.h"
#include "app/documents/input-files.h"
#include "app/jobs/job-controller.h"
#include "app/jobs/page-renderer.h"
#include "app/jobs/preview-loader.h"
#include "app/pipeline/block-crop.h"
#include "ui/main-window/error-panel.h"
#include "ui/main-window/find-bar.h"
#include "ui/page-view/page-view.h"
#include "ui/result-view/result-view.h"

namespace folio {

namespace {

QPixmap placeholderThumbnail(const QSize& pageSize) {
    const QSize size = pageSize.isValid() ? pageSize.scaled(96, 128, Qt::KeepAspectRatio) : QSize(96, 124);
    QPixmap pixmap(size);
    pixmap.fill(QColor(0xf3, 0xf4, 0xf6));
    QPainter painter(&pixmap);
    painter.setPen(QColor(0xd1, 0xd5, 0xdb));
    painter.drawRect(pixmap.rect().adjusted(0, 0, -1, -1));
    return pixmap;
}

}  // namespace

QImage MainWindow::currentPageImage() const {
    if (!model_.hasPage(doc_, page_)) {
        return {};
    }
    ensurePageImageNow();
    const PageEntry& page = model_.page(doc_, page_);
    return page.result.image.isNull() ? page.preview : page.result.image;
}

QImage MainWindow::selectedBlockImage() const {
    const BlockResult* block = model_.block(doc_, page_, block_);
    if (block == nullptr) {
        return {};
    }
    ensurePageImageNow();
    return cropBlock(model_.page(doc_, page_).result.image, block->box, block->polygon);
}

void MainWindow::ensurePageImageNow() const {
    // Asked for by the user (an attachment), so rendered here rather than waited for: one page, once.
    if (!model_.needsPageImage(doc_, page_)) {
        return;
    }
    try {
        model_.setPageImage(doc_, page_,
                            PageRenderer(jobs_.documentOptions()).render(model_.page(doc_, page_).result));
    } catch (const std::exception& e) {
        errors_->addError(QString::fromUtf8(e.what()));
    }
}

void MainWindow::usePageImage(int doc, int page) {
    model_.touchPageImage(doc, page);
    if (model_.needsPageImage(doc, page)) {
        preview_->loadPageImage(doc, page);
    }
}

bool MainWindow::askPassword(int doc, const QString& why) {
    // Opening again, or a document restored with its results as they were.
    model_.setDocumentState(doc, DocumentModel::stateOfPages(model_.document(doc)));
    const DocumentEntry& entry = model_.document(doc);
    const QString path = entry.path;
    const bool again = jobs_.documentOptions().passwords.contains(path);
    std::optional<QString> password;
    if (passwordPrompt_) {
        password = passwordPrompt_(entry.name, again);
    } else {
        bool ok = false;
        const QString text =
            QInputDialog::getText(this, tr("Encrypted PDF"),
                                  again ? tr("The password does not open “%1”. Its password:").arg(entry.name)
                                        : tr("“%1” is encrypted. Its password:").arg(entry.name),
                                  QLineEdit::Password, QString(), &ok);
        if (ok) {
            password = text;
        }
    }
    if (!model_.isOpen(doc)) {
        return true;  // closed while the question was asked: nothing left to open or say
    }
    if (!password) {
        model_.setDocumentState(doc, DocumentState::Failed, why);
        return false;
    }
    // Kept for this run only, for opening, running and exporting the file.
    DocumentOptions options = jobs_.documentOptions();
    options.passwords.insert(path, *password);
    jobs_.setDocumentOptions(options);
    preview_->setDocumentOptions(options);
    preview_->load(doc);
    return true;
}

void MainWindow::setSessionFile(const QString& path) {
    delete session_;
    session_ = new SessionStore(model_, path, this);
    connect(session_, &SessionStore::failed, this, [this](const QString& message) {
        reportError(tr("The session was not saved: %1").arg(message));
    });
    QStringList problems;
    const QList<int> restored = session_->restore(&problems);
    for (const QString& problem : std::as_const(problems)) {
        reportError(problem);
    }
    for (const int doc : restored) {
        preview_->setDocumentOptions(jobs_.documentOptions());
        preview_->load(doc);  // thumbnails; the pages' images are rendered again when shown
        if (model_.document(doc).changedOnDisk) {
            reportError(tr("“%1” changed since its results were saved: they show until you run it again "
                           "(Run)")
                            .arg(model_.document(doc).name));
        }
    }
    if (!restored.isEmpty() && !model_.isOpen(doc_)) {
        showDocument(restored.first());
    }
}

void MainWindow::openFiles(const QStringList& paths) {
    QStringList files;
    for (const QString& path : paths) {
        try {
            files << collectInputFiles({path});
        } catch (const std::exception& e) {
            reportError(QString::fromUtf8(e.what()));
        }
    }
    QList<int> added;
    int first = -1;
    for (const QString& file : std::as_const(files)) {
        const QString path = QFileInfo(file).absoluteFilePath();
        int doc = model_.findDocument(path);
        if (doc < 0) {
            doc = model_.addDocument(path);
            preview_->setDocumentOptions(jobs_.documentOptions());  // page sizes at the DPI runs use
            preview_->load(doc);
            added << doc;
        }
        if (first < 0) {
            first = doc;
        }
        addRecent(path);
    }
    if (first >= 0) {
        showDocument(first);
    }
    if (runOnOpen_) {
        // They run together once each has opened (or failed to): a locked PDF asks for its password first.
        for (const int doc : std::as_const(added)) {
            opening_.insert(doc);
        }
        runOpened();
    }
}

void MainWindow::runOpened() {
    if (!opening_.isEmpty() || openedToRun_.isEmpty()) {
        return;
    }
    jobs_.run(openedToRun_);
    openedToRun_.clear();
    if (engine_.state() != ServiceState::Ready) {
        statusBar()->showMessage(tr("The documents run once the model is loaded"), 5000);
    }
}

void MainWindow::showDocument(int doc) {
    if (!model_.isOpen(doc)) {
        return;
    }
    const bool changed = doc != doc_;
    doc_ = doc;
    undoGroup_->setActiveStack(model_.undoStack(doc));
    for (int row = 0; row < documents_->count(); ++row) {
        if (documents_->item(row)->data(Qt::UserRole).toInt() == doc) {
            const QSignalBlocker blocker(documents_);
            documents_->setCurrentRow(row);
        }
    }
    setWindowTitle(model_.document(doc).name + QStringLiteral(" — Folio"));
    resultView_->showDocument(doc);
    if (changed) {
        search_->setDocument(doc);
        statusBar()->clearMessage();  // messages about the document shown before
        page_ = -1;
        block_ = -1;
        rebuildThumbnails();
        if (pages_->count() > 0) {
            showPage(doc, 0);
        } else {
            pageView_->showPage(doc, -1);  // nothing yet (or a file that did not open): not the last document
        }
    }
    updateActions();
}

void MainWindow::showPage(int doc, int page) {
    if (doc != doc_) {
        showDocument(doc);
    }
    if (!model_.hasPage(doc, page)) {
        return;
    }
    if (page != page_) {
        block_ = -1;
    }
    page_ = page;
    {
        const QSignalBlocker blocker(pages_);
        pages_->setCurrentRow(page);
    }
    usePageImage(doc, page);
    const bool pageChanged = pageView_->currentDocument() != doc || pageView_->currentPage() != page;
    pageView_->showPage(doc, page);
    updateFoundBlocks();
    if (pageChanged && !followingResult_) {
        resultView_->scrollToPage(page);
    }
    updateActions();
    Q_EMIT currentPageChanged(doc, page);
}

void MainWindow::nextPage(int step) {
    if (doc_ < 0) {
        return;
    }
    const int count = static_cast<int>(model_.document(doc_).pages.size());
    const int page = std::clamp(page_ + step, 0, std::max(0, count - 1));
    showPage(doc_, page);
}

void MainWindow::goToPage() {
    if (doc_ < 0 || model_.document(doc_).pages.empty()) {
        return;
    }
    const int count = static_cast<int>(model_.document(doc_).pages.size());
    bool ok = false;
    const int number = QInputDialog::getInt(this, tr("Go to Page"), tr("Page (1–%1):").arg(count),
                                            std::max(page_, 0) + 1, 1, count, 1, &ok);
    if (ok) {
        showPage(doc_, number - 1);
    }
}

void MainWindow::selectBlock(int page, int blockId) {
    if (page != page_) {
        showPage(doc_, page);
    }
    block_ = model_.block(doc_, page, blockId) != nullptr ? blockId : -1;
    pageView_->selectBlock(block_);
    const BlockResult* block = model_.block(doc_, page, block_);
    // A block read as part of a stack shows its group's result.
    const int resultBlock = block != nullptr && block->groupId >= 0 ? block->groupId : block_;
    resultView_->highlightBlock(page, resultBlock);
    updateActions();
    Q_EMIT blockSelected(doc_, page_, block_);
}

void MainWindow::updateFoundBlocks() {
    QSet<int> found;
    if (findBar_->isVisible() && search_->document() == doc_) {
        for (const SearchMatch& m : search_->matches()) {
            if (m.page == page_) {
                found.insert(m.blockId);
            }
        }
    }
    pageView_->setFoundBlocks(found);
}

void MainWindow::onPageBlockClicked(int blockId) {
    selectBlock(page_, blockId);
}

void MainWindow::onResultBlockActivated(int page, int blockId) {
    // The result view is where the user is: it does not jump to the page's top.
    const QScopedValueRollback following(followingResult_, true);
    selectBlock(page, blockId);
}

void MainWindow::updateDocumentItem(int doc) {
    for (int row = 0; row < documents_->count(); ++row) {
        QListWidgetItem* item = documents_->item(row);
        if (item->data(Qt::UserRole).toInt() != doc) {
            continue;
        }
        const DocumentEntry& entry = model_.document(doc);
        const int pages = static_cast<int>(entry.pages.size());
        QString detail = QCoreApplication::translate("folio::DocumentState", documentStateName(entry.state));
        if (entry.state == DocumentState::Queued &&
            (engine_.state() == ServiceState::Failed || engine_.state() == ServiceState::Empty)) {
            // Queued for an engine that is not loading: it runs once a model loads.
            detail = tr("waiting for a model");
        }
        if (entry.state == DocumentState::Running || entry.state == DocumentState::Done ||
            entry.state == DocumentState::Cancelled) {
            detail = tr("%1 · %2/%3 pages").arg(detail).arg(entry.pagesDone).arg(pages);
        } else if (pages > 0) {
            detail = tr("%1 · %n page(s)", nullptr, pages).arg(detail);
        }
        if (entry.changedOnDisk) {
            detail += tr(" · file changed");
        }
        item->setText(entry.name + QStringLiteral("\n") + detail);
        item->setToolTip(entry.error.isEmpty() ? entry.path
                                               : entry.path + QStringLiteral("\n") + entry.error);
        item->setForeground(entry.state == DocumentState::Failed ? QColor(0xb9, 0x1c, 0x1c)
                                                                 : palette().text().color());
    }
}

void MainWindow::rebuildThumbnails() {
    const QSignalBlocker blocker(pages_);
    pages_->clear();
    if (doc_ < 0) {
        return;
    }
    const int count = static_cast<int>(model_.document(doc_).pages.size());
    for (int p = 0; p < count; ++p) {
        auto* item = new QListWidgetItem(QString::number(p + 1), pages_);
        item->setTextAlignment(Qt::AlignHCenter);
        updateThumbnail(p);
    }
    if (page_ >= 0 && page_ < count) {
        pages_->setCurrentRow(page_);
    }
}

void MainWindow::updateThumbnail(int page) {
    QListWidgetItem* item = pages_->item(page);
    if (item == nullptr || !model_.hasPage(doc_, page)) {
        return;
    }
    const PageEntry& entry = model_.page(doc_, page);
    QPixmap pixmap = entry.preview.isNull() ? placeholderThumbnail(entry.size)
                                            : QPixmap::fromImage(entry.preview.scaled(
                                                  96, 128, Qt::KeepAspectRatio, Qt::SmoothTransformation));
    QString state = tr("not run");
    if (entry.state != PageState::Pending) {
        // A small mark of the page's state: blue while recognising, amber where a run stopped part way,
        // green when done, red when failed.
        QPainter painter(&pixmap);
        painter.setRenderHint(QPainter::Antialiasing);
        QColor mark(0x25, 0x63, 0xeb);
        state = tr("recognising");
        if (entry.state == PageState::Done) {
            mark = QColor(0x16, 0xa3, 0x4a);
            state = tr("done");
        } else if (entry.state == PageState::Failed) {
            mark = QColor(0xdc, 0x26, 0x26);
            state = tr("failed");
        } else if (entry.state == PageState::Partial) {
            mark = QColor(0xd9, 0x77, 0x06);
            state = tr("partly recognised");
        }
        painter.setPen(Qt::white);
        painter.setBrush(mark);
        painter.drawEllipse(QPointF(pixmap.width() - 9, pixmap.height() - 9), 6, 6);
    }
    item->setIcon(QIcon(pixmap));
    item->setToolTip(tr("Page %1 · %2 · %3 blocks").arg(page + 1).arg(state).arg(entry.result.blocks.size()));
}

bool MainWindow::closeDocument(int doc) {
    if (!model_.isOpen(doc)) {
        return false;
    }
    if (model_.hasUnsavedEdits(doc)) {
        QMessageBox box(QMessageBox::Question, tr("Close document"),
                        tr("“%1” has changes of yours that were not exported. Close it and lose them?")
                            .arg(model_.document(doc).name),
                        QMessageBox::Cancel, this);
        QPushButton* close = box.addButton(tr("Close Without Exporting"), QMessageBox::DestructiveRole);
        close->setObjectName(QStringLiteral("closeDocument"));
        box.setDefaultButton(QMessageBox::Cancel);
        box.exec();
        if (box.clickedButton() != close) {
            return false;
        }
    }
    model_.closeDocument(doc);
    return true;
}

void MainWindow::onDocumentClosed(int doc) {
    opening_.remove(doc);
    openedToRun_.removeAll(doc);
    runOpened();
    int row = -1;
    for (int r = 0; r < documents_->count(); ++r) {
        if (documents_->item(r)->data(Qt::UserRole).toInt() == doc) {
            row = r;
        }
    }
    if (row >= 0) {
        const QSignalBlocker blocker(documents_);
        delete documents_->takeItem(row);
    }
    if (doc != doc_) {
        return;
    }
    // The next document in the list takes its place, or none.
    doc_ = -1;
    page_ = -1;
    block_ = -1;
    const int next = std::min(row, documents_->count() - 1);
    if (next >= 0) {
        showDocument(documents_->item(next)->data(Qt::UserRole).toInt());
        return;
    }
    undoGroup_->setActiveStack(nullptr);
    rebuildThumbnails();
    pageView_->showPage(-1, -1);
    resultView_->showDocument(-1);
    setWindowTitle(QStringLiteral("Folio"));
    updateActions();
}

}  // namespace folio
