#include "ui/main-window/main-window.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QLabel>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMetaMethod>
#include <QMimeData>
#include <QPainter>
#include <QProgressBar>
#include <QPushButton>
#include <QScopedValueRollback>
#include <QScreen>
#include <QSettings>
#include <QSplitter>
#include <QStandardPaths>
#include <QStatusBar>
#include <QStyle>
#include <QThreadPool>
#include <QToolBar>
#include <QUndoGroup>
#include <QUndoStack>
#include <QVBoxLayout>
#include <exception>

#include "app/document-model/document-model.h"
#include "app/document-model/session-file.h"
#include "app/documents/input-files.h"
#include "app/jobs/document-exporter.h"
#include "app/jobs/installed-models.h"
#include "app/jobs/job-controller.h"
#include "app/jobs/page-renderer.h"
#include "app/jobs/preview-loader.h"
#include "app/pipeline/block-crop.h"
#include "engine/models/model-registry.h"
#include "ui/main-window/engine-status.h"
#include "ui/main-window/error-panel.h"
#include "ui/main-window/export-dialog.h"
#include "ui/page-view/page-view.h"
#include "ui/result-view/result-view.h"

namespace folio {

namespace {

constexpr int kMaxRecent = 10;
const char* const kRecentKey = "recentFiles";

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

QIcon applicationIcon() {
    QIcon icon;
    for (const int size : {16, 24, 32, 48, 64, 128, 256}) {
        icon.addFile(QStringLiteral(":/icons/org.folio.Folio-%1.png").arg(size), QSize(size, size));
    }
    return QIcon::fromTheme(QStringLiteral("org.folio.Folio"), icon);
}

MainWindow::MainWindow(DocumentModel& model, JobController& jobs, EngineHost& engine, QWidget* parent)
    : QMainWindow(parent), model_(model), jobs_(jobs), engine_(engine) {
    setWindowTitle(QStringLiteral("Folio"));
    setWindowIcon(applicationIcon());
    setAcceptDrops(true);
    setDockNestingEnabled(true);
    preview_ = new PreviewLoader(model_, this);
    preview_->setDocumentOptions(jobs_.documentOptions());
    exporter_ = new DocumentExporter(model_, this);
    undoGroup_ = new QUndoGroup(this);
    exportFolder_ = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
    createLayout();
    createActions();
    createMenus();
    connectModel();
    updateActions();
    fitToScreen(QSize(1480, 920));
}

void MainWindow::fitToScreen(const QSize& wanted) {
    // No larger than the screen's room (at 1.5x scale a 1480x920 window does not fit a 1920x1080 screen).
    const QScreen* s = screen() != nullptr ? screen() : QGuiApplication::primaryScreen();
    if (s == nullptr) {
        resize(wanted);
        return;
    }
    const QRect room = s->availableGeometry();
    const QSize size = wanted.boundedTo(room.size() * 0.95);
    resize(size);
    move(room.center() - QPoint(size.width() / 2, size.height() / 2));
}

void MainWindow::saveLayout() const {
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
}

void MainWindow::restoreLayout() {
    const QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    if (!isMaximized() && !isFullScreen()) {
        // A layout saved on a larger screen still fits this one.
        const QScreen* s = screen() != nullptr ? screen() : QGuiApplication::primaryScreen();
        if (s != nullptr && !s->availableGeometry().contains(frameGeometry())) {
            fitToScreen(size());
        }
    }
}

MainWindow::~MainWindow() = default;

void MainWindow::createLayout() {
    splitter_ = new QSplitter(Qt::Horizontal, this);
    splitter_->setChildrenCollapsible(false);

    auto* left = new QSplitter(Qt::Vertical, splitter_);
    documents_ = new QListWidget(left);
    documents_->setObjectName(QStringLiteral("documents"));
    documents_->setMinimumWidth(170);
    documents_->setWordWrap(true);
    documents_->setTextElideMode(Qt::ElideMiddle);
    pages_ = new QListWidget(left);
    pages_->setObjectName(QStringLiteral("pages"));
    pages_->setViewMode(QListView::IconMode);
    pages_->setFlow(QListView::LeftToRight);
    pages_->setWrapping(true);
    pages_->setResizeMode(QListView::Adjust);
    pages_->setMovement(QListView::Static);
    pages_->setIconSize(QSize(96, 128));
    pages_->setGridSize(QSize(116, 156));
    pages_->setSpacing(4);
    pages_->setUniformItemSizes(
        true);  // one size for every thumbnail: a page changing lays nothing out again
    // The scroll bar stays, so that its showing does not narrow the view and lay every thumbnail out again;
    // a long document's thumbnails are laid out a hundred at a time between other events.
    pages_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOn);
    pages_->setLayoutMode(QListView::Batched);
    pages_->setBatchSize(100);
    left->addWidget(documents_);
    left->addWidget(pages_);
    left->setStretchFactor(0, 1);
    left->setStretchFactor(1, 6);
    left->setSizes({110, 700});

    pageView_ = new PageView(model_, splitter_);
    pageView_->setObjectName(QStringLiteral("pageView"));
    resultView_ = new ResultView(model_, splitter_);
    resultView_->setObjectName(QStringLiteral("resultView"));
    splitter_->addWidget(left);
    splitter_->addWidget(pageView_);
    splitter_->addWidget(resultView_);
    splitter_->setStretchFactor(0, 0);
    splitter_->setStretchFactor(1, 5);
    splitter_->setStretchFactor(2, 4);
    splitter_->setSizes({250, 640, 560});
    setCentralWidget(splitter_);

    errors_ = new ErrorPanel(this);
    addDockWidget(Qt::BottomDockWidgetArea, errors_);
    errors_->hide();
    // It opens when something new is said, a few lines high, under the views rather than in their place.
    connect(errors_, &ErrorPanel::opened, this,
            [this] { resizeDocks({errors_}, {fontMetrics().height() * 7}, Qt::Vertical); });
    // A problem's setting opens the settings dialog there (the whole dialog where only that is connected).
    connect(errors_, &ErrorPanel::settingRequested, this, [this](const QString& setting) {
        if (isSignalConnected(QMetaMethod::fromSignal(&MainWindow::settingRequested))) {
            Q_EMIT settingRequested(setting);
        } else {
            emitSignalOrSay(&MainWindow::settingsRequested, tr("Settings"));
        }
    });

    progressText_ = new QLabel(this);
    progress_ = new QProgressBar(this);
    progress_->setMaximumWidth(220);
    progress_->setMaximumHeight(16);
    progress_->setFormat(QStringLiteral("%v / %m pages"));
    QSizePolicy keepSpace = progress_->sizePolicy();
    keepSpace.setRetainSizeWhenHidden(true);
    progress_->setSizePolicy(keepSpace);
    progressText_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    engineStatus_ = new EngineStatus(this);
    statusBar()->addWidget(progressText_, 1);
    statusBar()->addPermanentWidget(progress_);
    statusBar()->addPermanentWidget(engineStatus_);
    // A status bar of constant height: text and progress coming and going never resize the views above it
    // (resizing the web view is costly).
    statusBar()->setFixedHeight(statusBar()->sizeHint().height() + 4);
    progress_->hide();
}

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

void MainWindow::changeEvent(QEvent* event) {
    if (event->type() == QEvent::LanguageChange) {
        for (const auto& [action, source] : std::as_const(translatedActions_)) {
            if (action != nullptr) {
                action->setText(tr(source));
            }
        }
        for (const auto& [widget, source] : std::as_const(translatedTitles_)) {
            if (widget != nullptr) {
                widget->setWindowTitle(tr(source));
            }
        }
        updateActions();
    }
    QMainWindow::changeEvent(event);
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

void MainWindow::connectModel() {
    connect(&model_, &DocumentModel::documentAdded, this, [this](int doc) {
        auto* item = new QListWidgetItem(documents_);
        item->setData(Qt::UserRole, doc);
        updateDocumentItem(doc);
        if (QUndoStack* stack = model_.undoStack(doc)) {
            undoGroup_->addStack(stack);
        }
    });
    connect(&model_, &DocumentModel::documentClosed, this, &MainWindow::onDocumentClosed);
    connect(&model_, &DocumentModel::documentChanged, this, [this](int doc) {
        updateDocumentItem(doc);
        if (doc == doc_ && pages_->count() != static_cast<int>(model_.document(doc).pages.size())) {
            rebuildThumbnails();
            if (page_ < 0 && pages_->count() > 0) {
                showPage(doc, 0);
            }
        }
        updateActions();
    });
    connect(&model_, &DocumentModel::pageChanged, this, [this](int doc, int page) {
        if (doc == doc_) {
            updateThumbnail(page);
            if (page == page_) {
                usePageImage(doc, page);
                if (block_ >= 0 && model_.block(doc, page, block_) == nullptr) {
                    block_ = -1;
                }
                pageView_->selectBlock(block_);
                updateActions();
            }
        }
    });
    connect(documents_, &QListWidget::currentRowChanged, this, [this](int row) {
        if (row >= 0) {
            showDocument(documents_->item(row)->data(Qt::UserRole).toInt());
        }
    });
    connect(pages_, &QListWidget::currentRowChanged, this, [this](int row) {
        if (row >= 0 && doc_ >= 0) {
            showPage(doc_, row);
        }
    });

    connect(pageView_, &PageView::blockClicked, this, &MainWindow::onPageBlockClicked);
    connect(pageView_, &PageView::regionDrawn, this, &MainWindow::onRegionDrawn);
    connect(pageView_, &PageView::blockMenuRequested, this, [this](int, const QPoint& pos) {
        QMenu menu(this);
        menu.addMenu(rerunMenu_);
        for (QAction* a : std::as_const(blockActions_)) {
            menu.addAction(a);
        }
        menu.exec(pos);
    });
    connect(resultView_, &ResultView::blockActivated, this, &MainWindow::onResultBlockActivated);
    connect(resultView_, &ResultView::scriptError, this,
            [this](const QString& message) { errors_->addError(tr("The result view: %1").arg(message)); });

    connect(&jobs_, &JobController::errorOccurred, this,
            [this](const QString& message) { reportEngineError(message, EngineErrorSource::Running); });
    connect(preview_, &PreviewLoader::openFailed, this,
            [this](int, const QString& message) { reportError(message); });
    connect(preview_, &PreviewLoader::pageImageFailed, this,
            [this](int, int, const QString& message) { reportError(message); });
    connect(&jobs_, &JobController::pageImageNeeded, preview_, &PreviewLoader::loadPageImage);
    connect(&jobs_, &JobController::documentStarted, this, [this](int doc) { runningDocument_ = doc; });
    connect(&jobs_, &JobController::runningChanged, this, [this](bool running) {
        progress_->setVisible(running);
        if (running) {
            progress_->setRange(0, 0);
            progressText_->setText(tr("Starting…"));
        }
        updateActions();
    });
    connect(&jobs_, &JobController::progressChanged, this, [this](const PipelineProgress& p) {
        progress_->setRange(0, std::max(1, p.pagesTotal));
        progress_->setValue(p.pagesDone);
        // The run's progress, named where it is another document's than the one in view.
        QString text = model_.isOpen(runningDocument_) && runningDocument_ != doc_
                           ? model_.document(runningDocument_).name + QStringLiteral(": ")
                           : QString();
        text += tr("%1 of %2 pages · %3 of %4 blocks")
                    .arg(p.pagesDone)
                    .arg(p.pagesTotal)
                    .arg(p.blocksDone)
                    .arg(p.blocksTotal);
        if (p.etaSeconds) {
            text += tr(" · about %1 s left").arg(static_cast<int>(*p.etaSeconds + 0.5));
        }
        progressText_->setText(text);
    });
    connect(&jobs_, &JobController::jobFinished, this, [this](const PipelineSummary& s) {
        progressText_->setText(s.cancelled ? tr("Cancelled after %1 pages").arg(s.pages)
                                           : tr("Done: %1 pages, %2 blocks in %3 s")
                                                 .arg(s.pages)
                                                 .arg(s.blocks)
                                                 .arg(s.seconds, 0, 'f', 1));
    });
    connect(&jobs_, &JobController::blockRecognized, this, [this] { updateActions(); });

    connect(&engine_, &EngineHost::loadProgress, engineStatus_, &EngineStatus::setLoading);
    connect(&engine_, &EngineHost::loaded, this, [this] {
        engineStatus_->setDevice(engine_.deviceName(), engine_.models().description);
        for (int doc = 0; doc < model_.documentCount(); ++doc) {
            updateDocumentItem(doc);
        }
        jobs_.startQueued();
        updateActions();
    });
    connect(&engine_, &EngineHost::loadFailed, this, [this](const QString& message) {
        engineStatus_->setUnloaded(tr("No model loaded"));
        for (int doc = 0; doc < model_.documentCount(); ++doc) {
            updateDocumentItem(doc);  // queued ones wait for a model now
        }
        reportError(tr("The model could not be loaded: %1").arg(message),
                    settingForEngineError(message, EngineErrorSource::Loading, engine_.models().layout));
        updateActions();
    });
    connect(&engine_, &EngineHost::reconfigured, this, [this] {
        engineStatus_->setDevice(engine_.deviceName(), engine_.models().description);
        statusBar()->showMessage(tr("Settings applied to the engine"), 6000);
        jobs_.startQueued();
        updateActions();
    });
    connect(&engine_, &EngineHost::reconfigureFailed, this, [this](const QString& message) {
        if (engine_.state() == ServiceState::Ready) {
            engineStatus_->setDevice(engine_.deviceName(), engine_.models().description);
            reportError(
                tr("The settings could not be applied; the engine keeps its previous ones: %1").arg(message),
                settingForEngineError(message, EngineErrorSource::Reconfiguring));
        } else {
            engineStatus_->setUnloaded(tr("No model loaded"));
            reportError(tr("The engine stopped while applying the settings: %1").arg(message),
                        settingForEngineError(message, EngineErrorSource::Reconfiguring));
        }
        updateActions();
    });
    connect(&engine_, &EngineHost::statsChanged, engineStatus_, &EngineStatus::setStats);

    connect(exporter_, &DocumentExporter::finished, this,
            [this](int doc, const QStringList& files, const QStringList& notes) {
                if (QUndoStack* stack = model_.undoStack(doc)) {
                    stack->setClean();  // the user's changes are in the exported files
                }
                // What was written, and what was not or only in a simpler form, and why (an XLSX without
                // tables, formulas left as LaTeX without KaTeX).
                QString message = tr("Exported %n file(s)", nullptr, static_cast<int>(files.size()));
                if (!notes.isEmpty()) {
                    message += QStringLiteral("; ") + notes.join(QStringLiteral("; "));
                    errors_->addError(tr("Export of “%1”: %2")
                                          .arg(model_.document(doc).name, notes.join(QStringLiteral("; "))));
                }
                statusBar()->showMessage(message, 10000);
                Q_EMIT exportFinished(files);
            });
    connect(exporter_, &DocumentExporter::failed, this,
            [this](int, const QString& message) { reportError(tr("Export failed: %1").arg(message)); });
}

void MainWindow::addPanel(QDockWidget* panel, Qt::DockWidgetArea area) {
    addDockWidget(area, panel);
    viewMenu_->addAction(panel->toggleViewAction());
}

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
        model_.setPageImage(
            doc_, page_,
            PageRenderer(jobs_.documentOptions().password).render(model_.page(doc_, page_).result));
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

void MainWindow::setEngineFactory(EngineParamsFactory factory, const QString& deviceName) {
    engineFactory_ = std::move(factory);
    deviceName_ = deviceName;
}

void MainWindow::loadModels(const ModelFolders& models) {
    if (!engineFactory_) {
        reportError(tr("No device is set up to load models on"), QLatin1String(setting_key::kDevice));
        return;
    }
    ServiceParams params;
    try {
        params = engineFactory_(models);
    } catch (const std::exception& e) {
        reportEngineError(QString::fromUtf8(e.what()), EngineErrorSource::Loading, models.layout);
        return;
    }
    capContextLength(params);
    PipelineOptions options = jobs_.pipelineOptions();
    options.useLayout = !models.layout.isEmpty();
    jobs_.setPipelineOptions(options);
    engine_.load(std::move(params), models, deviceName_);
}

void MainWindow::capContextLength(ServiceParams& params) {
    // A context length beyond the model's would fail the load: the model's own is taken, and said.
    for (const ModelSlot& slot : params.models) {
        if (slot.role != ModelRole::Recognition || slot.dir.empty()) {
            continue;
        }
        int64_t context = 0;
        try {
            context = describe_model(slot.dir).max_context;
        } catch (const std::exception&) {
            return;  // the load says what is wrong with the folder
        }
        if (context > 0 && params.engine.max_model_len > context) {
            const QString message = tr("The context length (Settings > Engine > Context length) is %1 "
                                       "tokens; the model was made for "
                                       "%2, which the engine uses")
                                        .arg(params.engine.max_model_len)
                                        .arg(context);
            params.engine.max_model_len = context;
            statusBar()->showMessage(message, 10000);
            errors_->addError(message, QLatin1String(setting_key::kContextLength));
        }
    }
}

void MainWindow::findAndLoadModels() {
    engineStatus_->setLoading(tr("Looking for models"), -1);
    lookups_.start([this] {
        QString why;
        const std::optional<ModelFolders> found = findInstalledModels(&why);
        QMetaObject::invokeMethod(
            this,
            [this, found, why] {
                if (found) {
                    loadModels(*found);
                    return;
                }
                engineStatus_->setUnloaded(tr("No model installed"));
                reportEngineError(why, EngineErrorSource::Loading);
                statusBar()->showMessage(
                    tr("No PaddleOCR-VL model found: choose a model folder (File menu) or "
                       "download one with the model manager"));
                Q_EMIT modelsMissing();
            },
            Qt::QueuedConnection);
    });
}

void MainWindow::chooseModelFolder() {
    const QString folder = QFileDialog::getExistingDirectory(this, tr("Choose a PaddleOCR-VL model folder"));
    if (folder.isEmpty()) {
        return;
    }
    try {
        QString note;
        const ModelFolders models = modelsForFolder(folder, &note);
        if (!note.isEmpty()) {
            reportEngineError(note, EngineErrorSource::Loading, models.layout);
        }
        loadModels(models);
    } catch (const std::exception& e) {
        reportEngineError(QString::fromUtf8(e.what()), EngineErrorSource::Loading);
    }
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
    if (runOnOpen_ && !added.isEmpty()) {
        jobs_.run(added);
        if (engine_.state() != ServiceState::Ready) {
            statusBar()->showMessage(tr("The documents run once the model is loaded"), 5000);
        }
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
        QString detail = QString::fromLatin1(documentStateName(entry.state));
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

void MainWindow::updateActions() {
    const bool ready = engine_.state() == ServiceState::Ready;
    const bool hasDoc = doc_ >= 0;
    action(QStringLiteral("run"))->setEnabled(hasDoc && ready);
    action(QStringLiteral("runAll"))->setEnabled(hasDoc && ready);
    action(QStringLiteral("cancel"))->setEnabled(jobs_.isRunning() || jobs_.pendingBlockRequests() > 0);
    action(QStringLiteral("export"))->setEnabled(hasDoc);
    action(QStringLiteral("close"))->setEnabled(hasDoc);
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

void MainWindow::runCurrent() {
    if (!model_.isOpen(doc_)) {
        return;
    }
    // A document stopped part way goes on from where it was; one whose pages all have their results runs
    // again, asking first where that would replace the user's changes.
    if (model_.hasPagesToRun(doc_, RunScope::Missing) && !model_.document(doc_).changedOnDisk) {
        if (model_.document(doc_).pagesDone > 0) {
            statusBar()->showMessage(tr("Running the pages without a result"), 4000);
        }
        jobs_.run({doc_}, RunScope::Missing);
        return;
    }
    runCurrentAgain();
}

void MainWindow::runCurrentAgain() {
    if (!model_.isOpen(doc_)) {
        return;
    }
    const int edited = model_.editedPageCount(doc_);
    if (edited == 0) {
        jobs_.run({doc_}, RunScope::All);
        return;
    }
    QMessageBox box(
        QMessageBox::Question, tr("Run again"),
        tr("%n page(s) of “%1” have changes of yours: edited text, deleted blocks, boxes drawn or "
           "blocks re-run. Running them again replaces those changes.",
           nullptr, edited)
            .arg(model_.document(doc_).name),
        QMessageBox::Cancel, this);
    QPushButton* keep = box.addButton(tr("Run the Other Pages"), QMessageBox::AcceptRole);
    keep->setObjectName(QStringLiteral("runUnedited"));
    QPushButton* all = box.addButton(tr("Run Every Page"), QMessageBox::DestructiveRole);
    all->setObjectName(QStringLiteral("runAll"));
    box.setDefaultButton(keep);
    box.exec();
    if (box.clickedButton() == keep) {
        if (!model_.hasPagesToRun(doc_, RunScope::Unedited)) {
            statusBar()->showMessage(tr("Every page has changes of yours: nothing else to run"), 5000);
        }
        jobs_.run({doc_}, RunScope::Unedited);
    } else if (box.clickedButton() == all) {
        jobs_.run({doc_}, RunScope::All);
    }
}

void MainWindow::cancelJobs() {
    jobs_.cancel();
    progressText_->setText(tr("Cancelling…"));
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

void MainWindow::exportDocument(int doc, const QString& folder, const QList<ExportFormat>& formats) {
    if (doc < 0 || formats.isEmpty()) {
        return;
    }
    ExportOptions options;
    options.outputDir = QDir(folder).absolutePath();
    options.markdownLabels = markdownLabels_;
    exporter_->setPassword(jobs_.documentOptions().password);
    exporter_->exportDocument(doc, formats, options);
    statusBar()->showMessage(tr("Exporting to %1…").arg(options.outputDir));
}

void MainWindow::setExportDefaults(const QList<ExportFormat>& formats, const QSet<QString>& markdownLabels) {
    if (!formats.isEmpty()) {
        exportFormats_ = formats;
    }
    markdownLabels_ = markdownLabels;
    resultView_->setMarkdownLabels(markdownLabels);
}

void MainWindow::exportWithDialog() {
    if (doc_ < 0) {
        return;
    }
    ExportDialog dialog(exportFolder_, exportFormats_, this);
    if (dialog.exec() != QDialog::Accepted) {
        return;
    }
    exportFolder_ = dialog.folder();
    exportFormats_ = dialog.formats();
    exportDocument(doc_, exportFolder_, exportFormats_);
}

void MainWindow::reportEngineError(const QString& message, EngineErrorSource source,
                                   const QString& layoutFolder) {
    reportError(message, settingForEngineError(message, source, layoutFolder));
}

void MainWindow::reportError(const QString& message, const QString& setting) {
    errors_->addError(message, setting);
    statusBar()->showMessage(message.section(QLatin1Char('\n'), 0, 0), 6000);
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

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls()) {
        event->acceptProposedAction();
    }
}

void MainWindow::dropEvent(QDropEvent* event) {
    QStringList paths;
    for (const QUrl& url : event->mimeData()->urls()) {
        if (url.isLocalFile()) {
            paths << url.toLocalFile();
        }
    }
    if (!paths.isEmpty()) {
        openFiles(paths);
        event->acceptProposedAction();
    }
}

void MainWindow::closeEvent(QCloseEvent* event) {
    jobs_.cancel();
    saveLayout();
    if (session_ != nullptr) {
        session_->writeNow();
    }
    QMainWindow::closeEvent(event);
}

}  // namespace folio
