// The main window's parts laid out and wired to the document model, the jobs, the engine and the exporter,
// its geometry, panels, drops and closing. Its actions and menus, documents and pages, block actions, and
// engine, runs and exports are in main-window-actions.cpp, -documents.cpp, -blocks.cpp and -run.cpp.
#include "ui/main-window/main-window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QLabel>
#include <QListWidget>
#include <QMenu>
#include <QMetaMethod>
#include <QMimeData>
#include <QProgressBar>
#include <QScreen>
#include <QSettings>
#include <QSplitter>
#include <QStandardPaths>
#include <QStatusBar>
#include <QUndoGroup>
#include <QUndoStack>
#include <QVBoxLayout>

#include "app/document-model/document-model.h"
#include "app/document-model/document-search.h"
#include "app/document-model/session-file.h"
#include "app/documents/pdf-document.h"
#include "app/jobs/document-exporter.h"
#include "app/jobs/job-controller.h"
#include "app/jobs/preview-loader.h"
#include "ui/main-window/engine-status.h"
#include "ui/main-window/error-panel.h"
#include "ui/main-window/find-bar.h"
#include "ui/page-view/page-view.h"
#include "ui/result-view/result-view.h"

namespace folio {

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
    // The views, and under them the find bar while it is open.
    auto* central = new QWidget(this);
    auto* column = new QVBoxLayout(central);
    column->setContentsMargins(0, 0, 0, 0);
    column->setSpacing(0);
    column->addWidget(splitter_, 1);
    search_ = new DocumentSearch(model_, this);
    findBar_ = new FindBar(*search_, central);
    findBar_->hide();
    column->addWidget(findBar_);
    setCentralWidget(central);
    connect(findBar_, &FindBar::queryChanged, this, [this](const QString& text, Qt::CaseSensitivity cs) {
        resultView_->setFoundText(text, cs);
        search_->setQuery(text, cs, std::max(page_, 0), std::max(block_, 0));
    });
    connect(findBar_, &FindBar::closed, this, [this] {
        resultView_->setFoundText({}, Qt::CaseInsensitive);
        updateFoundBlocks();
        pageView_->setFocus();
    });
    connect(search_, &DocumentSearch::currentMoved, this, &MainWindow::selectBlock);
    connect(search_, &DocumentSearch::changed, this, &MainWindow::updateFoundBlocks);

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
    connect(preview_, &PreviewLoader::openFailed, this, [this](int doc, const QString& message) {
        if (isPasswordError(message) && askPassword(doc, message)) {
            return;  // opened again with the password
        }
        opening_.remove(doc);
        reportError(message);
        runOpened();
    });
    connect(preview_, &PreviewLoader::documentOpened, this, [this](int doc) {
        if (doc == doc_ && model_.hasPage(doc, page_)) {
            usePageImage(doc, page_);  // one that could not render before (a password given since)
        }
        if (opening_.remove(doc)) {
            openedToRun_ << doc;
            runOpened();
        }
    });
    connect(preview_, &PreviewLoader::pageImageFailed, this, [this](int, int, const QString& message) {
        if (!isPasswordError(message)) {  // a locked PDF's opening asks for it, and shows the page after
            reportError(message);
        }
    });
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
        engineStatus_->setDevice(engine_.deviceName(), modelsTitle(engine_.models()));
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
        engineStatus_->setDevice(engine_.deviceName(), modelsTitle(engine_.models()));
        statusBar()->showMessage(tr("Settings applied to the engine"), 6000);
        jobs_.startQueued();
        updateActions();
    });
    connect(&engine_, &EngineHost::reconfigureFailed, this, [this](const QString& message) {
        if (engine_.state() == ServiceState::Ready) {
            engineStatus_->setDevice(engine_.deviceName(), modelsTitle(engine_.models()));
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
    connect(&engine_, &EngineHost::chatModelDropped, this,
            [this](const QString& message) { reportError(message, QLatin1String(setting_key::kChatModel)); });

    connect(exporter_, &DocumentExporter::finished, this,
            [this](int doc, const QStringList& files, const QStringList& notes) {
                QUndoStack* stack = model_.undoStack(doc);
                if (stack != nullptr && !partialExports_.contains(doc)) {
                    stack->setClean();  // the user's changes are in the exported files
                }
                partialExports_.remove(doc);
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
    connect(exporter_, &DocumentExporter::failed, this, [this](int doc, const QString& message) {
        partialExports_.remove(doc);
        reportError(tr("Export failed: %1").arg(message));
    });
}

void MainWindow::addPanel(QDockWidget* panel, Qt::DockWidgetArea area) {
    addDockWidget(area, panel);
    viewMenu_->addAction(panel->toggleViewAction());
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
