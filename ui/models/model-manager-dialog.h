// The model manager: the models installed (each checked, a broken one saying what is wrong), the catalogue's
// models to download with progress and cancel (a recognition model with the layout model it pairs with), and
// a folder to pick. Shown on first start when no model is set, and from the settings.
#pragma once

#include <QDialog>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QTreeWidget>
#include <vector>

#include "app/hub/hub-client.h"
#include "app/hub/hub-settings.h"
#include "app/hub/model-catalogue.h"
#include "app/models/model-download-job.h"
#include "app/models/model-inventory.h"

namespace folio {

class ModelManagerDialog : public QDialog {
    Q_OBJECT

public:
    explicit ModelManagerDialog(hub::HubSettings settings, QWidget* parent = nullptr);

    // The downloads offered; the catalogue's recognition models by default.
    void setCatalogue(std::vector<hub::CatalogueEntry> entries);
    // Timeouts and retries of the Hub client (tests shorten them).
    void setClientOptions(hub::ClientOptions options);
    // A problem with the model in use, shown at the top ("the model at ... is missing tokenizer.json").
    void showProblem(const QString& message);

    // The folders of the models the app runs now (a folder given in the settings or on the command line is in
    // neither the cache nor the models folder): listed with the installed models where they are not among
    // them.
    void setFoldersInUse(const QStringList& folders);
    // Scans the cache and the models folder again.
    void refresh();
    QList<InstalledModel> installed() const { return installed_; }

    // The model the user chose (a folder), and its repository where known.
    QString chosenFolder() const { return chosenFolder_; }
    QString chosenRepo() const { return chosenRepo_; }

    // Starts downloading a catalogue entry's repository (and its layout model) as its button does.
    bool download(const QString& repo);
    void cancelDownload();
    bool downloading() const { return job_->running(); }
    // The line under the progress bar.
    QString statusText() const { return status_->text(); }
    int progressValue() const { return progress_->value(); }
    // Takes a folder as the model, if it passes the checks (otherwise shows why); as "Choose folder" does.
    bool chooseFolder(const QString& dir);

Q_SIGNALS:
    // The user chose a model (a folder and, where known, its repository); the dialog then closes.
    void modelChosen(const QString& folder, const QString& repo);
    void downloadFinished(bool ok, const QString& message);

protected:
    void changeEvent(QEvent* event) override;
    void closeEvent(QCloseEvent* event) override;
    void reject() override;

private:
    void retranslate();
    void fillInstalled();
    void fillCatalogue();
    void updateButtons();
    void showDetails();
    void useSelected();
    void pickFolder();
    void onProgress(const DownloadProgress& progress);
    void onFinished(bool ok, bool cancelled, const QString& message, const QStringList& folders);
    void setStatus(const QString& text, bool error);

    hub::HubSettings settings_;
    std::vector<hub::CatalogueEntry> catalogue_;
    QStringList foldersInUse_;
    QList<InstalledModel> installed_;
    ModelDownloadJob* job_;
    QString downloadingRepo_;
    QString chosenFolder_;
    QString chosenRepo_;

    QLabel* problem_;
    QLabel* installedTitle_;
    QTreeWidget* installedView_;
    QLabel* details_;
    QLabel* catalogueTitle_;
    QTreeWidget* catalogueView_;
    QProgressBar* progress_;
    QLabel* status_;
    QPushButton* downloadButton_;
    QPushButton* cancelButton_;
    QPushButton* folderButton_;
    QPushButton* useButton_;
    QPushButton* closeButton_;
};

}  // namespace folio
