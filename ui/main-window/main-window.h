// Folio's main window: documents and page thumbnails on the left, the page with its layout overlays in the
// middle, the recognised document (rendered and Markdown) on the right, problems below, the engine's state
// in the status bar. Opening files or dropping them starts their run once the engine is ready.
//
// Integration points for other parts of the app: addPanel() docks a panel (chat, ...); the Tools and Help
// menus take more actions; settingsRequested() and modelManagerRequested() come from their menu items, and
// settingRequested() from a problem that a setting may fix;
// currentPageChanged() and blockSelected() tell what the user looks at, and currentPageImage() and
// selectedBlockImage() give it.
#pragma once

#include <QIcon>
#include <QList>
#include <QMainWindow>
#include <QPointer>
#include <QSet>
#include <QThreadPool>
#include <functional>
#include <optional>

#include "app/documents/page-range.h"
#include "app/export/document-writer.h"
#include "app/jobs/engine-host.h"
#include "app/settings/error-setting.h"

class QAction;
class QActionGroup;
class QListWidget;
class QMenu;
class QProgressBar;
class QLabel;
class QSplitter;
class QUndoGroup;

namespace folio {

class DocumentExporter;
class DocumentModel;
class DocumentSearch;
class EngineStatus;
class ErrorPanel;
class FindBar;
class JobController;
class PageView;
class PreviewLoader;
class ResultView;
class SessionStore;

// Folio's icon: the icon theme's (installed with the desktop entry), else the one built in.
QIcon applicationIcon();

// What the engine is loaded with for a model pair: the device and engine options are the app's choice.
using EngineParamsFactory = std::function<ServiceParams(const ModelFolders&)>;

class MainWindow : public QMainWindow {
    Q_OBJECT

public:
    MainWindow(DocumentModel& model, JobController& jobs, EngineHost& engine, QWidget* parent = nullptr);
    ~MainWindow() override;

    // Integration.
    void addPanel(QDockWidget* panel, Qt::DockWidgetArea area = Qt::RightDockWidgetArea);
    QMenu* fileMenu() const { return fileMenu_; }
    QMenu* viewMenu() const { return viewMenu_; }
    QMenu* toolsMenu() const { return toolsMenu_; }
    QMenu* helpMenu() const { return helpMenu_; }
    QAction* settingsAction() const { return settingsAction_; }
    QAction* modelManagerAction() const { return modelManagerAction_; }
    QImage currentPageImage() const;
    QImage selectedBlockImage() const;

    // The engine: how to load a model pair, and loading the models found on disk (in the background).
    void setEngineFactory(EngineParamsFactory factory, const QString& deviceName);
    // The chat model loaded beside the recognition model (Settings' chatModel: a folder or ORG/NAME; empty:
    // the first chat model installed, else none), looked for each time models load.
    void setChatModelSpec(const QString& spec) { chatSpec_ = spec; }
    void loadModels(const ModelFolders& models);
    void findAndLoadModels();

    // Keeps the open documents' results in a session file and opens the documents of the last session with
    // theirs (checked against each file's size and time).
    void setSessionFile(const QString& path);
    SessionStore* sessionStore() const { return session_; }

    // Documents.
    void openFiles(const QStringList& paths);
    void setRunOnOpen(bool on) { runOnOpen_ = on; }
    // Asks for a locked PDF's password (its name; again: the last one given did not open it); nothing where
    // the user declines. A dialog by default; tests give their own.
    using PasswordPrompt = std::function<std::optional<QString>(const QString& name, bool again)>;
    void setPasswordPrompt(PasswordPrompt prompt) { passwordPrompt_ = std::move(prompt); }
    void showDocument(int doc);
    void showPage(int doc, int page);
    int currentDocument() const { return doc_; }
    int currentPage() const { return page_; }
    int selectedBlock() const { return block_; }
    // Selects a block in the page view and the result view (-1: none).
    void selectBlock(int page, int blockId);
    // Runs the document in view: the pages without a result where some have theirs (a cancelled run goes on),
    // else every page again, asking first where pages have the user's changes.
    void runCurrent();
    // Every page again, asking first where pages have the user's changes (keep those, or run them too).
    void runCurrentAgain();
    void cancelJobs();
    // Closes a document, asking first where it has changes not exported; whether it closed.
    bool closeDocument(int doc);
    void exportDocument(int doc, const QString& folder, const QList<ExportFormat>& formats,
                        const PageRange& pages = {});
    // What exports write by default (the export dialog's choice until the user changes it) and the labels
    // whose blocks reach Markdown and HTML (the result view dims the others).
    void setExportDefaults(const QList<ExportFormat>& formats, const QSet<QString>& markdownLabels);
    QList<ExportFormat> exportFormats() const { return exportFormats_; }

    // The window's size, position and panels as the user left them (saved as the window closes), fitted
    // to the screen.
    void saveLayout() const;
    void restoreLayout();

    // Parts, for tests and integration.
    PageView* pageView() const { return pageView_; }
    ResultView* resultView() const { return resultView_; }
    ErrorPanel* errorPanel() const { return errors_; }
    FindBar* findBar() const { return findBar_; }
    DocumentSearch* documentSearch() const { return search_; }
    EngineStatus* engineStatus() const { return engineStatus_; }
    QListWidget* pageList() const { return pages_; }
    QListWidget* documentList() const { return documents_; }
    DocumentExporter* exporter() const { return exporter_; }
    PreviewLoader* previewLoader() const { return preview_; }
    QAction* action(const QString& name) const;  // by object name: "run", "cancel", "export", ...
    QUndoGroup* undoGroup() const { return undoGroup_; }

    // An error for the problems panel (any part of the app); `setting`: the key of the setting that may fix
    // it (app/settings/error-setting.h), which the panel offers to open.
    void reportError(const QString& message, const QString& setting = {});
    // An engine error (a model that does not load, memory, the device), offered with the setting it calls
    // for (settingForEngineError); layoutFolder: the layout model's folder, where loading names it.
    void reportEngineError(const QString& message, EngineErrorSource source,
                           const QString& layoutFolder = {});

Q_SIGNALS:
    void settingsRequested();
    // The settings dialog, open at one setting (a key of app/settings/error-setting.h): a problem's setting.
    void settingRequested(const QString& setting);
    void modelManagerRequested();
    // No model was found installed (a first start): the app offers its model manager.
    void modelsMissing();
    void currentPageChanged(int doc, int page);
    void blockSelected(int doc, int page, int blockId);
    void exportFinished(const QStringList& files);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void closeEvent(QCloseEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    void createActions();
    void createMenus();
    void createLayout();
    void connectModel();
    // An action whose text is the translation of `text` (QT_TR_NOOP), again after a language change.
    QAction* makeAction(const QString& name, const char* text, const QKeySequence& shortcut,
                        const std::function<void()>& slot);
    void translate(QAction* action, const char* source);
    QMenu* translatedMenu(QWidget* parent, const char* source);
    void updateDocumentItem(int doc);
    void rebuildThumbnails();
    void updateThumbnail(int page);
    void updateActions();
    // The page is in use: its image stays, and comes back (rendered again) where the model let go of it.
    void usePageImage(int doc, int page);
    void ensurePageImageNow() const;
    void updateRecentMenu();
    void addRecent(const QString& path);
    void editSelectedBlock();
    void copySelectedBlock();
    // The page in view's text as Markdown, to the clipboard.
    void copyPage();
    void deleteSelectedBlock();
    void rerunSelectedBlock(const QString& prompt);
    void onDocumentClosed(int doc);
    // A locked PDF (`why`: what opening it said): asks for its password, the document shown as opening (or,
    // restored, with its results' state) meanwhile, and opens it again with it; false, the document failed
    // with `why`, where the user declined (true where it was closed meanwhile).
    bool askPassword(int doc, const QString& why);
    // Runs the documents opened to run once none is still opening.
    void runOpened();
    // The models as the status bar names them: "PaddleOCR-VL-1.5 + ERNIE-4.5-VL-28B-A3B-PT".
    static QString modelsTitle(const ModelFolders& models);
    void fitToScreen(const QSize& wanted);
    void onRegionDrawn(const QRect& rect);
    void exportWithDialog();
    void chooseModelFolder();
    void nextPage(int step);
    // Asks for a page number of the document in view and shows that page.
    void goToPage();
    void onPageBlockClicked(int blockId);
    // Outlines the blocks of the page in view where the find bar's text occurs (none with the bar closed).
    void updateFoundBlocks();
    void onResultBlockActivated(int page, int blockId);
    void emitSignalOrSay(void (MainWindow::*signal)(), const QString& what);

    DocumentModel& model_;
    JobController& jobs_;
    EngineHost& engine_;
    PreviewLoader* preview_ = nullptr;
    DocumentExporter* exporter_ = nullptr;
    QUndoGroup* undoGroup_ = nullptr;  // the documents' undo stacks, the one in view active
    SessionStore* session_ = nullptr;
    EngineParamsFactory engineFactory_;
    QString deviceName_;
    QString chatSpec_;

    QListWidget* documents_ = nullptr;
    QListWidget* pages_ = nullptr;
    PageView* pageView_ = nullptr;
    ResultView* resultView_ = nullptr;
    ErrorPanel* errors_ = nullptr;
    DocumentSearch* search_ = nullptr;  // the find bar's, in the document in view
    FindBar* findBar_ = nullptr;
    PasswordPrompt passwordPrompt_;
    // Documents opened to run (runOnOpen_) that are still opening, and those opened: they run together once
    // none is left opening.
    QSet<int> opening_;
    QList<int> openedToRun_;
    EngineStatus* engineStatus_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QLabel* progressText_ = nullptr;
    QSplitter* splitter_ = nullptr;

    QMenu* fileMenu_ = nullptr;
    QMenu* recentMenu_ = nullptr;
    QMenu* viewMenu_ = nullptr;
    QMenu* blockMenu_ = nullptr;
    QMenu* rerunMenu_ = nullptr;
    QMenu* toolsMenu_ = nullptr;
    QMenu* helpMenu_ = nullptr;
    QAction* settingsAction_ = nullptr;
    QAction* modelManagerAction_ = nullptr;
    QList<QAction*> blockActions_;
    QList<std::pair<QPointer<QAction>, const char*>> translatedActions_;  // retranslated on LanguageChange
    QList<std::pair<QPointer<QWidget>, const char*>> translatedTitles_;

    int doc_ = -1;
    QSet<int> partialExports_;      // documents whose export under way writes some pages only
    int runningDocument_ = -1;      // the document the run reports progress of
    bool followingResult_ = false;  // a page shown because its result was clicked
    int page_ = -1;
    int block_ = -1;
    bool runOnOpen_ = true;
    QString exportFolder_;
    QList<ExportFormat> exportFormats_{ExportFormat::Markdown, ExportFormat::Json};
    QSet<QString> markdownLabels_ = defaultMarkdownLabels();
    QThreadPool lookups_;  // model lookups on disk; waited for before the window goes
};

}  // namespace folio
