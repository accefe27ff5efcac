// folio: the desktop application. Opens the files named on the command line, finds the installed
// PaddleOCR-VL model (or the one --model names) and loads it on the GPU in the background.
//
//   folio [FILE|FOLDER...] [--model DIR|ORG/NAME] [--device cuda[:N]|cpu] [--threads N]
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QDockWidget>
#include <QSettings>
#include <memory>

#include "chat-panel.h"
#include "cli-options.h"
#include "device-memory.h"
#include "document-model.h"
#include "engine-host.h"
#include "hub-settings.h"
#include "installed-models.h"
#include "job-controller.h"
#include "main-window.h"
#include "model-manager-dialog.h"
#include "settings-dialog.h"
#include "settings.h"
#include "translation-loader.h"

int main(int argc, char** argv) {
    QCoreApplication::setAttribute(Qt::AA_ShareOpenGLContexts);  // QtWebEngine's requirement
    QApplication app(argc, argv);
    QCoreApplication::setOrganizationName(QStringLiteral("Folio"));
    QCoreApplication::setApplicationName(QStringLiteral("folio"));
    QCoreApplication::setApplicationVersion(QStringLiteral(FOLIO_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("folio"));

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Documents to Markdown with PaddleOCR-VL on the local GPU"));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption modelOption(QStringLiteral("model"),
                                         QStringLiteral("Recognition model folder or ORG/NAME."),
                                         QStringLiteral("DIR"));
    const QCommandLineOption deviceOption(
        QStringLiteral("device"), QStringLiteral("cuda, cuda:N or cpu (default: cuda where built with it)."),
        QStringLiteral("DEVICE"));
    const QCommandLineOption threadsOption(QStringLiteral("threads"),
                                           QStringLiteral("CPU threads (cpu device)."), QStringLiteral("N"),
                                           QStringLiteral("0"));
    parser.addOptions({modelOption, deviceOption, threadsOption});
    parser.addPositionalArgument(QStringLiteral("files"), QStringLiteral("PDFs, images or folders to open."));
    parser.process(app);

#ifdef FOLIO_WITH_CUDA
    const QString defaultDevice = QStringLiteral("cuda");
#else
    const QString defaultDevice = QStringLiteral("cpu");
#endif
    const QString device = parser.isSet(deviceOption) ? parser.value(deviceOption) : defaultDevice;
    const int threads = parser.value(threadsOption).toInt();

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
    chat->setPageProvider([&window] { return window.currentPageImage(); });
    QObject::connect(&window, &folio::MainWindow::currentPageChanged, chat, [&model, chat](int doc, int) {
        if (doc >= 0 && doc < model.documentCount()) {
            chat->setDocument(model.document(doc).path);
        }
    });

    // The model manager: installed models and downloads; the model chosen is loaded.
    const auto openModelManager = [&window] {
        folio::ModelManagerDialog dialog(folio::hub::hub_settings_from_environment(), &window);
        QObject::connect(&dialog, &folio::ModelManagerDialog::modelChosen, &window,
                         [&window](const QString& folder, const QString&) {
                             try {
                                 QString note;
                                 const folio::ModelFolders models = folio::modelsForFolder(folder, &note);
                                 if (!note.isEmpty()) {
                                     window.reportError(note);
                                 }
                                 window.loadModels(models);
                             } catch (const std::exception& e) {
                                 window.reportError(QString::fromUtf8(e.what()));
                             }
                         });
        dialog.exec();
    };
    QObject::connect(&window, &folio::MainWindow::modelManagerRequested, &window, openModelManager);
    QObject::connect(&window, &folio::MainWindow::settingsRequested, &window, [&window, &settings, openModelManager] {
        folio::SettingsDialog dialog(settings, &window);
        QObject::connect(&dialog, &folio::SettingsDialog::manageModelsRequested, &dialog, openModelManager);
        dialog.exec();
    });

    const std::string deviceName = device.toStdString();
    window.setEngineFactory(
        [deviceName, threads](const folio::ModelFolders& models) {
            folio::ServiceParams params;
            params.device.make_backend = [deviceName, threads] {
                return folio::cli::make_backend(deviceName, threads);
            };
            std::vector<std::string> args = {"folio", "--device", deviceName};
            std::vector<char*> pointers;
            for (std::string& a : args) {
                pointers.push_back(a.data());
            }
            const folio::cli::Options options(static_cast<int>(pointers.size()), pointers.data(), 1);
            params.device.free_memory = folio::cli::device_free_memory(options);
            params.models.push_back({folio::ModelRole::Recognition, models.recognition.toStdString(), {}});
            if (!models.layout.isEmpty()) {
                folio::ModelSlot layout{folio::ModelRole::Layout, models.layout.toStdString(), {}};
                params.models.push_back(std::move(layout));
            }
            return params;
        },
        device == QLatin1String("cpu") ? QStringLiteral("CPU") : device.toUpper());
    window.show();

    if (parser.isSet(modelOption)) {
        try {
            QString note;
            const folio::ModelFolders models = folio::modelsForFolder(parser.value(modelOption), &note);
            if (!note.isEmpty()) {
                window.reportError(note);
            }
            window.loadModels(models);
        } catch (const std::exception& e) {
            window.reportError(QString::fromUtf8(e.what()));
        }
    } else {
        window.findAndLoadModels();
    }
    if (!parser.positionalArguments().isEmpty()) {
        window.openFiles(parser.positionalArguments());
    }
    return QApplication::exec();
}
