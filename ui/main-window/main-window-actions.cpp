// The main window's actions, menus and toolbar: each action made once with its shortcut and translated again
// on a language change, enabled for what is in view, and the recent files.
#include "ui/main-window/main-window.h"

#include <QAction>
#include <QApplication>
#include <QFileDialog>
#include <QFileInfo>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMetaMethod>
#include <QSettings>
#include <QStatusBar>
#include <QStyle>
#include <QToolBar>
#include <QUndoGroup>

#include "app/document-model/document-model.h"
#include "app/document-model/document-search.h"
#include "app/jobs/job-controller.h"
#include "ui/main-window/error-panel.h"
#include "ui/main-window/find-bar.h"
#include "ui/main-window/shortcuts-dialog.h"
#include "ui/page-view/page-view.h"
#include "ui/result-view/result-view.h"

namespace folio {

namespace {

constexpr int kMaxRecent = 10;
const char* const kRecentKey = "recentFiles";

}  // namespace

QAction* MainWindow::makeAction(const QString& name, const char* text, const QKeySequence& shortcut,
                                const std::function<void()>& slot) {
    auto* a = new QAction(this);
    translate(a, text);
    a->setObjectName(name);
    if (!shortcut.isEmpty()) {
        a->setShortcut(shortcut);
    }
    connect(a, &QAction::triggered, this, [slot] { slot(); });
    addAction(a);
    return a;
}

QAction* MainWindow::action(const QString& name) const {
    return findChild<QAction*>(name);
}

void MainWindow::createActions() {
    makeAction(QStringLiteral("open"), QT_TR_NOOP("&Open Files…"), QKeySequence::Open, [this] {
        const QStringList files = QFileDialog::getOpenFileNames(
            this, tr("Open documents"), QString(),
            tr("Documents (*.pdf *.png *.jpg *.jpeg *.tif *.tiff *.bmp *.webp);;All files (*)"));
        if (!files.isEmpty()) {
            openFiles(files);
        }
    });
    makeAction(
        QStringLiteral("openFolder"), QT_TR_NOOP("Open &Folder…"), QKeySequence(tr("Ctrl+Shift+O")), [this] {
            const QString folder = QFileDialog::getExistingDirectory(this, tr("Open a folder of documents"));
            if (!folder.isEmpty()) {
                openFiles({folder});
            }
        });
    makeAction(QStringLiteral("export"), QT_TR_NOOP("&Export…"), QKeySequence(tr("Ctrl+E")),
               [this] { exportWithDialog(); });
    makeAction(QStringLiteral("close"), QT_TR_NOOP("&Close Document"), QKeySequence::Close,
               [this] { closeDocument(doc_); });
    makeAction(QStringLiteral("quit"), QT_TR_NOOP("&Quit"), QKeySequence::Quit, [this] { close(); });
    makeAction(QStringLiteral("chooseModel"), QT_TR_NOOP("Choose &Model Folder…"), {},
               [this] { chooseModelFolder(); });

    makeAction(QStringLiteral("run"), QT_TR_NOOP("&Run"), QKeySequence(tr("Ctrl+R")),
               [this] { runCurrent(); });
    makeAction(QStringLiteral("runAll"), QT_TR_NOOP("Run &All Pages Again"), QKeySequence(tr("Ctrl+Shift+R")),
               [this] { runCurrentAgain(); });
    makeAction(QStringLiteral("cancel"), QT_TR_NOOP("&Cancel"), QKeySequence(tr("Ctrl+.")),
               [this] { cancelJobs(); });

    // Undo and redo act on the document in view: its stack is the group's active one.
    QAction* undo = undoGroup_->createUndoAction(this);
    undo->setObjectName(QStringLiteral("undo"));
    undo->setShortcut(QKeySequence::Undo);
    addAction(undo);
    QAction* redo = undoGroup_->createRedoAction(this);
    redo->setObjectName(QStringLiteral("redo"));
    redo->setShortcuts({QKeySequence(tr("Ctrl+Shift+Z")), QKeySequence(tr("Ctrl+Y"))});
    addAction(redo);

    makeAction(QStringLiteral("copyPage"), QT_TR_NOOP("Copy &Page Text"), QKeySequence(tr("Ctrl+Alt+C")),
               [this] { copyPage(); });
    makeAction(QStringLiteral("find"), QT_TR_NOOP("&Find…"), QKeySequence::Find,
               [this] { findBar_->open(); });
    // With the bar closed, F3 and Shift+F3 open it again on its text.
    makeAction(QStringLiteral("findNext"), QT_TR_NOOP("Find &Next"), QKeySequence::FindNext,
               [this] { findBar_->isVisible() ? search_->next() : findBar_->open(); });
    makeAction(QStringLiteral("findPrevious"), QT_TR_NOOP("Find Pre&vious"), QKeySequence::FindPrevious,
               [this] { findBar_->isVisible() ? search_->previous() : findBar_->open(); });

    makeAction(QStringLiteral("shortcuts"), QT_TR_NOOP("&Keyboard Shortcuts"), QKeySequence::HelpContents,
               [this] {
                   action(QStringLiteral("undo"))->setProperty(ShortcutsDialog::kListedName, tr("Undo"));
                   action(QStringLiteral("redo"))->setProperty(ShortcutsDialog::kListedName, tr("Redo"));
                   ShortcutsDialog dialog(menuBar(), this);
                   dialog.exec();
               });

    makeAction(QStringLiteral("zoomIn"), QT_TR_NOOP("Zoom &In"), QKeySequence::ZoomIn,
               [this] { pageView_->zoomIn(); });
    makeAction(QStringLiteral("zoomOut"), QT_TR_NOOP("Zoom &Out"), QKeySequence::ZoomOut,
               [this] { pageView_->zoomOut(); });
    makeAction(QStringLiteral("fitWidth"), QT_TR_NOOP("&Fit Width"), QKeySequence(tr("Ctrl+0")),
               [this] { pageView_->fitWidth(); });
    makeAction(QStringLiteral("nextPage"), QT_TR_NOOP("&Next Page"), QKeySequence(Qt::Key_PageDown),
               [this] { nextPage(1); });
    makeAction(QStringLiteral("previousPage"), QT_TR_NOOP("&Previous Page"), QKeySequence(Qt::Key_PageUp),
               [this] { nextPage(-1); });
    makeAction(QStringLiteral("goToPage"), QT_TR_NOOP("&Go to Page…"), QKeySequence(tr("Ctrl+G")),
               [this] { goToPage(); });

    blockActions_ << makeAction(QStringLiteral("editBlock"), QT_TR_NOOP("&Edit Text…"),
                                QKeySequence(Qt::Key_F2), [this] { editSelectedBlock(); });
    blockActions_ << makeAction(QStringLiteral("copyBlock"), QT_TR_NOOP("&Copy Text"),
                                QKeySequence(tr("Ctrl+Shift+C")), [this] { copySelectedBlock(); });
    blockActions_ << makeAction(QStringLiteral("deleteBlock"), QT_TR_NOOP("&Delete Block"),
                                QKeySequence::Delete, [this] { deleteSelectedBlock(); });
    // Block actions act on the block selected in the page view or the result view: their keys only while
    // one of those has the focus (Delete in the document list closes a document instead).
    for (QAction* a : std::as_const(blockActions_)) {
        a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
        removeAction(a);
        pageView_->addAction(a);
        resultView_->addAction(a);
    }
    QAction* closeSelected =
        makeAction(QStringLiteral("closeSelected"), QT_TR_NOOP("&Close"), QKeySequence::Delete, [this] {
            if (QListWidgetItem* item = documents_->currentItem()) {
                closeDocument(item->data(Qt::UserRole).toInt());
            }
        });
    closeSelected->setShortcutContext(Qt::WidgetShortcut);
    removeAction(closeSelected);
    documents_->addAction(closeSelected);
    documents_->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(documents_, &QWidget::customContextMenuRequested, this, [this, closeSelected](const QPoint& pos) {
        QListWidgetItem* item = documents_->itemAt(pos);
        if (item == nullptr) {
            return;
        }
        showDocument(item->data(Qt::UserRole).toInt());
        QMenu menu(this);
        menu.addAction(action(QStringLiteral("run")));
        menu.addAction(action(QStringLiteral("runAll")));
        menu.addAction(action(QStringLiteral("export")));
        menu.addSeparator();
        menu.addAction(closeSelected);
        menu.exec(documents_->viewport()->mapToGlobal(pos));
    });
    QAction* draw =
        makeAction(QStringLiteral("drawBox"), QT_TR_NOOP("Draw &Box"), QKeySequence(tr("Ctrl+D")), [] {});
    draw->setCheckable(true);
    connect(draw, &QAction::toggled, pageView_, &PageView::setDrawMode);

    settingsAction_ =
        makeAction(QStringLiteral("settings"), QT_TR_NOOP("&Settings…"), QKeySequence::Preferences,
                   [this] { emitSignalOrSay(&MainWindow::settingsRequested, tr("Settings")); });
    modelManagerAction_ =
        makeAction(QStringLiteral("modelManager"), QT_TR_NOOP("&Model Manager…"), {},
                   [this] { emitSignalOrSay(&MainWindow::modelManagerRequested, tr("The model manager")); });
    settingsAction_->setMenuRole(QAction::PreferencesRole);
}

void MainWindow::translate(QAction* action, const char* source) {
    action->setText(tr(source));
    translatedActions_.append({action, source});
}

QMenu* MainWindow::translatedMenu(QWidget* parent, const char* source) {
    QMenu* menu = nullptr;
    if (auto* bar = qobject_cast<QMenuBar*>(parent)) {
        menu = bar->addMenu(QString());
    } else {
        menu = qobject_cast<QMenu*>(parent)->addMenu(QString());
    }
    translate(menu->menuAction(), source);
    return menu;
}

void MainWindow::emitSignalOrSay(void (MainWindow::*signal)(), const QString& what) {
    if (isSignalConnected(QMetaMethod::fromSignal(signal))) {
        Q_EMIT(this->*signal)();
    } else {
        statusBar()->showMessage(tr("%1 is not available in this build").arg(what), 4000);
    }
}

void MainWindow::createMenus() {
    fileMenu_ = translatedMenu(menuBar(), QT_TR_NOOP("&File"));
    fileMenu_->addAction(action(QStringLiteral("open")));
    fileMenu_->addAction(action(QStringLiteral("openFolder")));
    recentMenu_ = translatedMenu(fileMenu_, QT_TR_NOOP("Open &Recent"));
    fileMenu_->addSeparator();
    fileMenu_->addAction(action(QStringLiteral("export")));
    fileMenu_->addAction(action(QStringLiteral("close")));
    fileMenu_->addSeparator();
    fileMenu_->addAction(action(QStringLiteral("chooseModel")));
    fileMenu_->addSeparator();
    fileMenu_->addAction(action(QStringLiteral("quit")));
    updateRecentMenu();

    QMenu* editMenu = translatedMenu(menuBar(), QT_TR_NOOP("&Edit"));
    editMenu->addAction(action(QStringLiteral("undo")));
    editMenu->addAction(action(QStringLiteral("redo")));
    editMenu->addSeparator();
    editMenu->addAction(action(QStringLiteral("copyPage")));
    editMenu->addSeparator();
    editMenu->addAction(action(QStringLiteral("find")));
    editMenu->addAction(action(QStringLiteral("findNext")));
    editMenu->addAction(action(QStringLiteral("findPrevious")));

    QMenu* runMenu = translatedMenu(menuBar(), QT_TR_NOOP("&Run"));
    runMenu->addAction(action(QStringLiteral("run")));
    runMenu->addAction(action(QStringLiteral("runAll")));
    runMenu->addAction(action(QStringLiteral("cancel")));

    viewMenu_ = translatedMenu(menuBar(), QT_TR_NOOP("&View"));
    viewMenu_->addAction(action(QStringLiteral("zoomIn")));
    viewMenu_->addAction(action(QStringLiteral("zoomOut")));
    viewMenu_->addAction(action(QStringLiteral("fitWidth")));
    viewMenu_->addSeparator();
    viewMenu_->addAction(action(QStringLiteral("nextPage")));
    viewMenu_->addAction(action(QStringLiteral("previousPage")));
    viewMenu_->addAction(action(QStringLiteral("goToPage")));
    viewMenu_->addSeparator();
    viewMenu_->addAction(errors_->toggleViewAction());

    blockMenu_ = translatedMenu(menuBar(), QT_TR_NOOP("&Block"));
    rerunMenu_ = translatedMenu(blockMenu_, QT_TR_NOOP("&Re-run As"));
    for (const BlockTaskChoice& choice : blockTaskChoices()) {
        QAction* a = rerunMenu_->addAction(choice.name);
        a->setObjectName(QStringLiteral("rerun") + choice.name);
        const QString prompt = choice.prompt;
        connect(a, &QAction::triggered, this, [this, prompt] { rerunSelectedBlock(prompt); });
    }
    blockMenu_->addAction(action(QStringLiteral("editBlock")));
    blockMenu_->addAction(action(QStringLiteral("copyBlock")));
    blockMenu_->addAction(action(QStringLiteral("deleteBlock")));
    blockMenu_->addSeparator();
    blockMenu_->addAction(action(QStringLiteral("drawBox")));

    toolsMenu_ = translatedMenu(menuBar(), QT_TR_NOOP("&Tools"));
    toolsMenu_->addAction(modelManagerAction_);
    toolsMenu_->addAction(settingsAction_);
    helpMenu_ = translatedMenu(menuBar(), QT_TR_NOOP("&Help"));
    helpMenu_->addAction(action(QStringLiteral("shortcuts")));
    QAction* about = helpMenu_->addAction(QString(), this, [this] {
        QMessageBox::about(this, tr("About Folio"),
                           tr("<b>Folio</b> %1<br>Documents to Markdown with PaddleOCR-VL, on your own GPU.")
                               .arg(QApplication::applicationVersion()));
    });
    translate(about, QT_TR_NOOP("&About Folio"));

    QToolBar* bar = addToolBar(tr("Main"));
    translatedTitles_.append({bar, QT_TR_NOOP("Main")});
    bar->setObjectName(QStringLiteral("mainToolBar"));
    bar->setMovable(false);
    bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    bar->setIconSize(QSize(16, 16));
    const auto icon = [this](const char* name, QStyle::StandardPixmap pixmap) {
        action(QString::fromLatin1(name))->setIcon(style()->standardIcon(pixmap));
    };
    icon("open", QStyle::SP_DialogOpenButton);
    icon("run", QStyle::SP_MediaPlay);
    icon("cancel", QStyle::SP_MediaStop);
    icon("export", QStyle::SP_DialogSaveButton);
    icon("previousPage", QStyle::SP_ArrowUp);
    icon("nextPage", QStyle::SP_ArrowDown);
    bar->addAction(action(QStringLiteral("open")));
    bar->addAction(action(QStringLiteral("run")));
    bar->addAction(action(QStringLiteral("cancel")));
    bar->addAction(action(QStringLiteral("export")));
    bar->addSeparator();
    bar->addAction(action(QStringLiteral("previousPage")));
    bar->addAction(action(QStringLiteral("nextPage")));
    bar->addAction(action(QStringLiteral("zoomOut")));
    bar->addAction(action(QStringLiteral("zoomIn")));
    bar->addAction(action(QStringLiteral("fitWidth")));
    bar->addSeparator();
    bar->addAction(action(QStringLiteral("drawBox")));
}

void MainWindow::updateActions() {
    const bool ready = engine_.state() == ServiceState::Ready;
    const bool hasDoc = doc_ >= 0;
    action(QStringLiteral("run"))->setEnabled(hasDoc && ready);
    action(QStringLiteral("runAll"))->setEnabled(hasDoc && ready);
    action(QStringLiteral("cancel"))->setEnabled(jobs_.isRunning() || jobs_.pendingBlockRequests() > 0);
    action(QStringLiteral("export"))->setEnabled(hasDoc);
    action(QStringLiteral("close"))->setEnabled(hasDoc);
    action(QStringLiteral("goToPage"))->setEnabled(hasDoc && !model_.document(doc_).pages.empty());
    action(QStringLiteral("copyPage"))->setEnabled(model_.hasPage(doc_, page_));
    // A page still being recognised takes no edits: its run's result would replace them.
    const bool recognising =
        model_.hasPage(doc_, page_) && model_.page(doc_, page_).state == PageState::LaidOut;
    const BlockResult* block = recognising ? nullptr : model_.block(doc_, page_, block_);
    const bool hasImage = model_.hasPage(doc_, page_) && !model_.page(doc_, page_).result.image.isNull();
    for (QAction* a : std::as_const(blockActions_)) {
        a->setEnabled(block != nullptr);
    }
    rerunMenu_->setEnabled(block != nullptr && hasImage && ready);
    action(QStringLiteral("drawBox"))->setEnabled(hasImage && ready);
}

void MainWindow::updateRecentMenu() {
    recentMenu_->clear();
    const QStringList recent = QSettings().value(QLatin1String(kRecentKey)).toStringList();
    for (const QString& path : recent) {
        QAction* a = recentMenu_->addAction(QFileInfo(path).fileName());
        a->setToolTip(path);
        connect(a, &QAction::triggered, this, [this, path] { openFiles({path}); });
    }
    recentMenu_->setEnabled(!recent.isEmpty());
}

void MainWindow::addRecent(const QString& path) {
    QSettings settings;
    QStringList recent = settings.value(QLatin1String(kRecentKey)).toStringList();
    recent.removeAll(path);
    recent.prepend(path);
    while (recent.size() > kMaxRecent) {
        recent.removeLast();
    }
    settings.setValue(QLatin1String(kRecentKey), recent);
    updateRecentMenu();
}

}  // namespace folio
