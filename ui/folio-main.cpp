// folio: the desktop application. Opens the files named on the command line, finds the installed
// PaddleOCR-VL model (the settings' or the one --model names) and loads it in the background on the settings'
// device; a first start without a model opens the model manager.
//
//   folio [FILE|FOLDER...] [--model DIR|ORG/NAME] [--device cuda[:N]|cpu] [--threads N]
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QSettings>
#include <cstdio>
#include <memory>

#include "app/chat/chat-store.h"
#include "app/document-model/document-model.h"
#include "app/hub/hub-settings.h"
#include "app/hub/model-catalogue.h"
#include "app/i18n/translation-loader.h"
#include "app/jobs/engine-host.h"
#include "app/jobs/job-controller.h"
#include "app/settings/error-setting.h"
#include "app/settings/settings.h"
#include "engine/models/model-registry.h"
#include "ui/chat/chat-panel.h"
#include "ui/main-window/main-window.h"
#include "ui/main-window/settings-binding.h"
#include "ui/models/model-manager-dialog.h"
#include "ui/settings/settings-dialog.h"

namespace {

struct CommandLine {
    QCommandLineParser parser;
    QCommandLineOption helpOption;
    QCommandLineOption versionOption;
    QCommandLineOption modelOption{
        QStringLiteral("model"),
        QStringLiteral("Recognition model folder or ORG/NAME (default: the settings' model)."),
        QStringLiteral("DIR")};
    QCommandLineOption deviceOption{
        QStringLiteral("device"),
        QStringLiteral("cuda, cuda:N, cpu, or several cards as cuda:0,cuda:1 (a copy of the models on each; "
                       "default: the settings' device)."),
        QStringLiteral("DEVICE")};
    QCommandLineOption threadsOption{QStringLiteral("threads"), QStringLiteral("CPU threads (cpu device)."),
                                     QStringLiteral("N"), QStringLiteral("0")};

    CommandLine() : helpOption(parser.addHelpOption()), versionOption(parser.addVersionOption()) {
        parser.setApplicationDescription(
            QStringLiteral("Documents to Markdown with PaddleOCR-VL on the local GPU"));
        parser.addOptions({modelOption, deviceOption, threadsOption});
        parser.addPositionalArgument(QStringLiteral("files"),
                                     QStringLiteral("PDFs, images or folders to open."));
    }
};

void setApplicationNames() {
    QCoreApplication::setOrganizationName(QStringLiteral("Folio"));
    QCoreApplication::setApplicationName(QStringLiteral("folio"));
    QCoreApplication::setApplicationVersion(QStringLiteral(FOLIO_VERSION));
}

}  // namespace

int main(int argc, char** argv) {
    // --help and --version are answered before a window system is needed, so they work in a terminal without
    // a display. Everything else waits for QApplication, which takes its own options (-platform, -style, ...)
    // out of the arguments first.
    for (int i = 1; i < argc; ++i) {
        const QString argument = QString::fromLocal8Bit(argv[i]);
        if (argument == QLatin1String("--")) {
            break;
        }
        if (argument == QLatin1String("-h") || argument == QLatin1String("--help") ||
            argument == QLatin1String("-?") || argument == QLatin1String("-v") ||
            argument == QLatin1String("--version")) {
            const QCoreApplication core(argc, argv);
            setApplicationNames();
            CommandLine early;
            early.parser.process(core);  // prints the help or the version (or an error), and ends the process
        }
    }

    QCoreApplication::setAttribute(Qt::AA_ShareOpenGLContexts);  // QtWebEngine's requirement
    QApplication app(argc, argv);
    setApplicationNames();
    // The installed desktop entry's name (packaging/org.folio.Folio.desktop): Wayland's app id, the entry a
    // desktop finds the window's icon and name in.
    QApplication::setDesktopFileName(QStringLiteral("org.folio.Folio"));
    QApplication::setWindowIcon(folio::applicationIcon());

    CommandLine commandLine;
    QCommandLineParser& parser = commandLine.parser;
    const QCommandLineOption& modelOption = commandLine.modelOption;
    const QCommandLineOption& deviceOption = commandLine.deviceOption;
    const QCommandLineOption& threadsOption = commandLine.threadsOption;
    parser.process(app);

    bool counted = false;
    const int threads = parser.value(threadsOption).toInt(&counted);
    if (!counted || threads < 0) {
        std::fprintf(stderr, "folio: --threads takes a number of CPU threads (0: all of them), got '%s'\n",
                     qPrintable(parser.value(threadsOption)));
        return 2;
    }

    // The interface's language: the settings' choice, else the system locale's.
    folio::Settings settings;
    folio::TranslationLoader translations;
    translations.setLanguage(settings.values().language);
    QObject::connect(&settings, &folio::Settings::languageChanged, &translations,
                     [&translations](const QString& language) { translations.setLanguage(language); });

    folio::DocumentModel model;
    folio::EngineHost engine;
    folio::JobController jobs(engine.service(), model);
    folio::MainWindow window(model, jobs, engine);

    // The chat panel beside the page, on the current document's page.
    auto* chatDock = new QDockWidget(QObject::tr("Chat"), &window);
    chatDock->setObjectName(QStringLiteral("chatPanel"));
    auto* chat = new folio::ChatPanel(engine.service(), chatDock);
    chatDock->setWidget(chat);
    window.addPanel(chatDock);
    QObject::connect(&settings, &folio::Settings::languageChanged, chatDock,
                     [chatDock] { chatDock->setWindowTitle(QObject::tr("Chat")); });
    chat->setPageProvider([&window] { return window.currentPageImage(); });
    // Ask the document: the current document's recognised blocks; a citation clicked selects its block.
    chat->setDocumentContextProvider([&window, &model]() -> std::shared_ptr<const folio::DocumentContext> {
        const int doc = window.currentDocument();
        if (doc < 0 || !model.isOpen(doc)) {
            return nullptr;
        }
        std::vector<folio::PageResult> pages;
        for (const folio::PageEntry& page : model.document(doc).pages) {
            pages.push_back(page.result);
        }
        return std::make_shared<const folio::DocumentContext>(folio::DocumentContext::fromPages(pages));
    });
    QObject::connect(chat, &folio::ChatPanel::citationActivated, &window,
                     [&window](int page, int blockId) { window.selectBlock(page, blockId); });
    // A chat turn's engine error that a setting may fix (out of memory, no model) goes to the problems panel
    // too, which offers the setting; the chat says every error where it happened.
    const auto chatProblem = [&window](const QString& message) {
        const QString setting = folio::settingForEngineError(message, folio::EngineErrorSource::Running);
        if (!setting.isEmpty()) {
            window.reportError(QObject::tr("Chat: %1").arg(message), setting);
        }
    };
    QObject::connect(chat->session(), &folio::ChatSession::failed, &window, chatProblem);
    QObject::connect(chat->session(), &folio::ChatSession::answerFinished, &window,
                     [chatProblem](const QString&, int, folio::ChatTurn::State state, const QString& error) {
                         if (state == folio::ChatTurn::State::Failed) {
                             chatProblem(error);
                         }
                     });
    QObject::connect(&window, &folio::MainWindow::currentPageChanged, chat, [&model, chat](int doc, int) {
        if (doc >= 0 && doc < model.documentCount()) {
            chat->setDocument(model.document(doc).path);
        }
    });

    // The settings drive the engine, the documents and the exports; the command line's model and device
    // come first until the user changes them.
    folio::SettingsBinding::Overrides overrides;
    overrides.model = parser.value(modelOption);
    overrides.device = parser.value(deviceOption);
    overrides.cpuThreads = threads;
    folio::SettingsBinding binding(settings, window, engine, jobs, overrides);

    // The model manager: installed models and downloads; the model chosen becomes the settings' model (a chat
    // model the chat model), which loads it. chatOnly: opened from the chat panel, on the chat models.
    const auto openModelManager = [&window, &settings, &engine](bool chatOnly) {
        folio::ModelManagerDialog dialog(folio::hub::hub_settings_from_environment(), &window);
        // The models running now, where their folders are not in the cache or the models folder.
        QStringList inUse;
        for (const QString& folder :
             {engine.models().recognition, engine.models().layout, engine.models().chat}) {
            if (!folder.isEmpty()) {
                inUse << folder;
            }
        }
        dialog.setFoldersInUse(inUse);
        if (chatOnly) {
            std::vector<folio::hub::CatalogueEntry> entries;
            for (const folio::hub::CatalogueEntry& entry : folio::hub::model_catalogue()) {
                if (entry.kind == folio::hub::ModelKind::Chat) {
                    entries.push_back(entry);
                }
            }
            dialog.setCatalogue(std::move(entries));
        }
        QObject::connect(
            &dialog, &folio::ModelManagerDialog::modelChosen, &window,
            [&window, &settings](const QString& folder, const QString&) {
                folio::SettingsValues values = settings.values();
                bool chatModel = false;
                try {
                    chatModel = folio::describe_model(folder.toStdString()).role == folio::ModelRole::Chat;
                } catch (const std::exception&) {
                    // loading the folder says what is wrong with it
                }
                if (chatModel) {
                    values.chatModel = folder;
                } else {
                    values.model = folder;
                    values.layoutModel.clear();  // the one released with it
                }
                const QList<folio::SettingsProblem> problems = settings.apply(values);
                for (const folio::SettingsProblem& problem : problems) {
                    window.reportError(problem.message, folio::settingForProblemKey(problem.key));
                }
            });
        dialog.exec();
    };
    QObject::connect(&window, &folio::MainWindow::modelManagerRequested, &window,
                     [openModelManager] { openModelManager(false); });
    QObject::connect(chat, &folio::ChatPanel::chatModelDownloadRequested, &window,
                     [openModelManager] { openModelManager(true); });
    // The chat says which model answers once models load or fail.
    QObject::connect(&engine, &folio::EngineHost::loaded, chat, &folio::ChatPanel::updateModel);
    QObject::connect(&engine, &folio::EngineHost::loadFailed, chat, &folio::ChatPanel::updateModel);
    // A first start without a model: the model manager, once the window shows.
    QObject::connect(
        &window, &folio::MainWindow::modelsMissing, &window, [openModelManager] { openModelManager(false); },
        Qt::QueuedConnection);
    // The settings dialog, at the setting a problem calls for where one does (empty: as it was left).
    const auto openSettings = [&window, &settings, &engine, openModelManager](const QString& setting) {
        folio::SettingsDialog dialog(settings, &window);
        // The loaded recognition model's context bounds max_model_len (a chat model beside it takes the
        // context up to its own).
        QString recognition, chatModel;
        for (const folio::ModelDescription& loaded : engine.service().models()) {
            if (loaded.role == folio::ModelRole::Recognition && loaded.max_context > 0) {
                dialog.setModelContext(loaded.max_context);
            }
            if (loaded.role == folio::ModelRole::Recognition) {
                recognition = QString::fromStdString(loaded.name);
            } else if (loaded.role == folio::ModelRole::Chat) {
                chatModel = QString::fromStdString(loaded.name);
            }
        }
        dialog.setLoadedModels(recognition, chatModel);
        QObject::connect(&dialog, &folio::SettingsDialog::manageModelsRequested, &dialog,
                         [openModelManager] { openModelManager(false); });
        QObject::connect(&dialog, &folio::SettingsDialog::manageChatModelsRequested, &dialog,
                         [openModelManager] { openModelManager(true); });
        if (!setting.isEmpty()) {
            dialog.showSetting(setting);
        }
        dialog.exec();
    };
    QObject::connect(&window, &folio::MainWindow::settingsRequested, &window,
                     [openSettings] { openSettings(QString()); });
    QObject::connect(&window, &folio::MainWindow::settingRequested, &window, openSettings);

    // The last session's documents with their results; the session file sits beside the settings.
    const QDir settingsDir = QFileInfo(QSettings().fileName()).absoluteDir();
    window.setSessionFile(settingsDir.filePath(QStringLiteral("session.json")));
    // The open documents' conversations, beside it.
    folio::ChatStore chats(*chat->session(), settingsDir.filePath(QStringLiteral("chats.json")),
                           [&model](const QString& key) {
                               const int doc = model.findDocument(key);
                               return doc >= 0 && model.isOpen(doc);
                           });
    QObject::connect(&chats, &folio::ChatStore::failed, &window, [&window](const QString& message) {
        window.reportError(QObject::tr("The conversations were not saved: %1").arg(message));
    });
    QObject::connect(&model, &folio::DocumentModel::documentClosed, &chats, &folio::ChatStore::scheduleWrite);
    QObject::connect(&app, &QCoreApplication::aboutToQuit, &chats, &folio::ChatStore::writeNow);
    QStringList chatProblems;
    chats.restore(&chatProblems);
    for (const QString& problem : std::as_const(chatProblems)) {
        window.reportError(problem);
    }

    window.restoreLayout();
    window.show();
    binding.start();
    if (!parser.positionalArguments().isEmpty()) {
        window.openFiles(parser.positionalArguments());
    }
    return QApplication::exec();
}
