// The main window's block actions on the selected block: edit, copy, delete, re-run with another task, and a
// box drawn by hand recognised; and the page in view's text copied.
#include "ui/main-window/main-window.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QInputDialog>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QStatusBar>

#include "app/document-model/document-model.h"
#include "app/export/markdown-block.h"
#include "app/jobs/job-controller.h"
#include "ui/result-view/result-view.h"

namespace folio {

void MainWindow::editSelectedBlock() {
    const BlockResult* block = model_.block(doc_, page_, block_);
    if (block == nullptr) {
        return;
    }
    bool ok = false;
    const QString text =
        QInputDialog::getMultiLineText(this, tr("Edit block %1").arg(block_ + 1),
                                       tr("Text (Markdown; tables as HTML):"), block->content, &ok);
    if (ok) {
        model_.editBlockText(doc_, page_, block_, text);
    }
}

void MainWindow::copySelectedBlock() {
    const BlockResult* block = model_.block(doc_, page_, block_);
    if (block != nullptr) {
        QApplication::clipboard()->setText(block->content);
        statusBar()->showMessage(tr("Copied block %1").arg(block_ + 1), 3000);
    }
}

void MainWindow::copyPage() {
    if (!model_.hasPage(doc_, page_)) {
        return;
    }
    // The page's Markdown as the result view's Markdown tab shows it: the labels chosen, no figures.
    const PageEntry& page = model_.page(doc_, page_);
    QStringList parts;
    for (const BlockResult& block : page.result.blocks) {
        if (!block.image.isNull() || !markdownLabels().contains(block.label) ||
            !resultView_->markdownLabels().contains(block.label)) {
            continue;
        }
        const QString markdown = markdownOfBlock(block, QString(), page.result.width).trimmed();
        if (!markdown.isEmpty()) {
            parts << markdown;
        }
    }
    if (parts.isEmpty()) {
        statusBar()->showMessage(tr("Page %1 has no text to copy yet").arg(page_ + 1), 3000);
        return;
    }
    QApplication::clipboard()->setText(parts.join(QStringLiteral("\n\n")) + u'\n');
    statusBar()->showMessage(tr("Copied the text of page %1").arg(page_ + 1), 3000);
}

void MainWindow::deleteSelectedBlock() {
    if (model_.block(doc_, page_, block_) == nullptr) {
        return;
    }
    const int removed = block_;
    block_ = -1;
    model_.deleteBlock(doc_, page_, removed);
    resultView_->highlightBlock(-1, -1);
    updateActions();
}

void MainWindow::rerunSelectedBlock(const QString& prompt) {
    const BlockResult* block = model_.block(doc_, page_, block_);
    if (block == nullptr) {
        return;
    }
    if (block->edited) {
        QMessageBox box(
            QMessageBox::Question, tr("Re-run block"),
            tr("You edited the text of block %1. Running it again replaces your text (Undo brings "
               "it back).")
                .arg(block_ + 1),
            QMessageBox::Cancel, this);
        QPushButton* rerun = box.addButton(tr("Re-run"), QMessageBox::AcceptRole);
        rerun->setObjectName(QStringLiteral("rerun"));
        box.exec();
        if (box.clickedButton() != rerun) {
            return;
        }
    }
    jobs_.rerunBlock(doc_, page_, block_, prompt);
    updateActions();
}

void MainWindow::onRegionDrawn(const QRect& rect) {
    QMenu menu(this);
    menu.setTitle(tr("Recognise as"));
    for (const BlockTaskChoice& choice : blockTaskChoices()) {
        menu.addAction(choice.name)->setData(choice.prompt);
    }
    const QAction* chosen = menu.exec(QCursor::pos());
    if (chosen == nullptr) {
        return;
    }
    const int id = jobs_.recognizeRegion(
        doc_, page_, BlockBox{rect.left(), rect.top(), rect.right() + 1, rect.bottom() + 1},
        chosen->data().toString());
    if (id >= 0) {
        selectBlock(page_, id);
    }
    updateActions();
    action(QStringLiteral("drawBox"))->setChecked(false);
}

}  // namespace folio
