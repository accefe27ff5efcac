// The main window's engine, runs and exports: loading the models (the context length capped at the model's),
// running the document in view, exporting it, and the problems they report.
#include "ui/main-window/main-window.h"

#include <QDir>
#include <QFileDialog>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QStatusBar>
#include <QThreadPool>
#include <exception>

#include "app/document-model/document-model.h"
#include "app/jobs/document-exporter.h"
#include "app/jobs/installed-models.h"
#include "app/jobs/job-controller.h"
#include "engine/models/model-registry.h"
#include "ui/main-window/engine-status.h"
#include "ui/main-window/error-panel.h"
#include "ui/main-window/export-dialog.h"
#include "ui/result-view/result-view.h"

namespace folio {

void MainWindow::setEngineFactory(EngineParamsFactory factory, const QString& deviceName) {
    engineFactory_ = std::move(factory);
    deviceName_ = deviceName;
}

QString MainWindow::modelsTitle(const ModelFolders& models) {
    return models.chat.isEmpty() ? models.description
                                 : QStringLiteral("%1 + %2").arg(models.description, models.chatDescription);
}

void MainWindow::loadModels(const ModelFolders& given) {
    if (!engineFactory_) {
        reportError(tr("No device is set up to load models on"), QLatin1String(setting_key::kDevice));
        return;
    }
    ModelFolders models = given;
    if (models.chat.isEmpty()) {
        // A chat model that cannot be found leaves the document models loading; the chat then uses those.
        try {
            addChatModel(models, chatSpec_);
        } catch (const std::exception& e) {
            reportError(tr("The chat model could not be found: %1").arg(QString::fromUtf8(e.what())),
                        QLatin1String(setting_key::kChatModel));
        }
    }
    ServiceParams params;
    try {
        params = engineFactory_(models);
    } catch (const std::exception& e) {
        reportEngineError(QString::fromUtf8(e.what()), EngineErrorSource::Loading, models.layout);
        return;
    }
    PipelineOptions options = jobs_.pipelineOptions();
    options.useLayout = !models.layout.isEmpty();
    jobs_.setPipelineOptions(options);
    engine_.load(std::move(params), models, deviceName_);
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

void MainWindow::exportDocument(int doc, const QString& folder, const QList<ExportFormat>& formats,
                                const PageRange& pages) {
    if (doc < 0 || formats.isEmpty()) {
        return;
    }
    ExportOptions options;
    options.outputDir = QDir(folder).absolutePath();
    options.markdownLabels = markdownLabels_;
    exporter_->setDocumentOptions(jobs_.documentOptions());
    // Some pages only: the user's changes to the others are not in the files, so the document stays unsaved.
    if (pages.isAll()) {
        partialExports_.remove(doc);
    } else {
        partialExports_.insert(doc);
    }
    exporter_->exportDocument(doc, formats, options, pages);
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
    ExportDialog dialog(exportFolder_, exportFormats_, static_cast<int>(model_.document(doc_).pages.size()),
                        this);
    if (dialog.exec() != QDialog::Accepted) {
        return;
    }
    exportFolder_ = dialog.folder();
    exportFormats_ = dialog.formats();
    exportDocument(doc_, exportFolder_, exportFormats_, dialog.pages());
}

void MainWindow::reportEngineError(const QString& message, EngineErrorSource source,
                                   const QString& layoutFolder) {
    reportError(message, settingForEngineError(message, source, layoutFolder));
}

void MainWindow::reportError(const QString& message, const QString& setting) {
    errors_->addError(message, setting);
    statusBar()->showMessage(message.section(QLatin1Char('\n'), 0, 0), 6000);
}

}  // namespace folio
