#include "ui/models/model-manager-dialog.h"

#include <QCloseEvent>
#include <QDir>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QVBoxLayout>

#include <algorithm>

#include "app/hub/model-download.h"

namespace folio {

namespace {

enum Column { kName, kKind, kSize, kWhere, kState };
constexpr int kIndexRole = Qt::UserRole;

QString bytesText(qint64 bytes) {
    return QString::fromStdString(hub::bytes_text(bytes));
}

QString kindText(hub::ModelKind kind) {
    switch (kind) {
        case hub::ModelKind::Layout:
            return ModelManagerDialog::tr("layout");
        case hub::ModelKind::Chat:
            return ModelManagerDialog::tr("chat");
        case hub::ModelKind::Recognition:
            break;
    }
    return ModelManagerDialog::tr("recognition");
}

}  // namespace

ModelManagerDialog::ModelManagerDialog(hub::HubSettings settings, QWidget* parent)
    : QDialog(parent),
      settings_(std::move(settings)),
      job_(new ModelDownloadJob(settings_, {}, this)),
      problem_(new QLabel(this)),
      installedTitle_(new QLabel(this)),
      installedView_(new QTreeWidget(this)),
      details_(new QLabel(this)),
      catalogueTitle_(new QLabel(this)),
      catalogueView_(new QTreeWidget(this)),
      progress_(new QProgressBar(this)),
      status_(new QLabel(this)),
      downloadButton_(new QPushButton(this)),
      cancelButton_(new QPushButton(this)),
      folderButton_(new QPushButton(this)),
      useButton_(new QPushButton(this)),
      closeButton_(new QPushButton(this)) {
    for (const hub::CatalogueEntry& entry : hub::model_catalogue()) {
        if (entry.kind == hub::ModelKind::Recognition) {
            catalogue_.push_back(entry);
        }
    }
    problem_->setWordWrap(true);
    problem_->setVisible(false);
    problem_->setStyleSheet(QStringLiteral(
        "QLabel { background: #fdecea; color: #8a1c13; border: 1px solid #f5c2bd; padding: 6px; }"));
    QFont bold = installedTitle_->font();
    bold.setBold(true);
    installedTitle_->setFont(bold);
    catalogueTitle_->setFont(bold);

    installedView_->setRootIsDecorated(false);
    installedView_->setColumnCount(5);
    installedView_->setSelectionMode(QAbstractItemView::SingleSelection);
    installedView_->header()->setStretchLastSection(true);
    installedView_->setMinimumHeight(120);
    details_->setWordWrap(true);
    details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    catalogueView_->setRootIsDecorated(false);
    catalogueView_->setColumnCount(3);
    catalogueView_->setSelectionMode(QAbstractItemView::SingleSelection);
    catalogueView_->setMinimumHeight(90);
    progress_->setRange(0, 1000);
    progress_->setValue(0);
    progress_->setVisible(false);
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    cancelButton_->setVisible(false);
    useButton_->setDefault(true);

    connect(installedView_, &QTreeWidget::itemSelectionChanged, this, [this] {
        showDetails();
        updateButtons();
    });
    connect(installedView_, &QTreeWidget::itemDoubleClicked, this, &ModelManagerDialog::useSelected);
    connect(catalogueView_, &QTreeWidget::itemSelectionChanged, this, &ModelManagerDialog::updateButtons);
    connect(downloadButton_, &QPushButton::clicked, this, [this] {
        if (QTreeWidgetItem* item = catalogueView_->currentItem()) {
            download(item->data(kName, kIndexRole).toString());
        }
    });
    connect(cancelButton_, &QPushButton::clicked, this, &ModelManagerDialog::cancelDownload);
    connect(folderButton_, &QPushButton::clicked, this, &ModelManagerDialog::pickFolder);
    connect(useButton_, &QPushButton::clicked, this, &ModelManagerDialog::useSelected);
    connect(closeButton_, &QPushButton::clicked, this, &ModelManagerDialog::reject);

    auto* downloadRow = new QHBoxLayout;
    downloadRow->addWidget(progress_, 1);
    downloadRow->addWidget(cancelButton_);
    downloadRow->addWidget(downloadButton_, 0, Qt::AlignRight);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(folderButton_);
    buttons->addStretch(1);
    buttons->addWidget(closeButton_);
    buttons->addWidget(useButton_);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(problem_);
    layout->addWidget(installedTitle_);
    layout->addWidget(installedView_, 2);
    layout->addWidget(details_);
    layout->addSpacing(6);
    layout->addWidget(catalogueTitle_);
    layout->addWidget(catalogueView_, 1);
    layout->addLayout(downloadRow);
    layout->addWidget(status_);
    layout->addSpacing(6);
    layout->addLayout(buttons);
    resize(760, 560);

    connect(job_, &ModelDownloadJob::progress, this, &ModelManagerDialog::onProgress);
    connect(job_, &ModelDownloadJob::finished, this, &ModelManagerDialog::onFinished);
    retranslate();
    refresh();
}

void ModelManagerDialog::setCatalogue(std::vector<hub::CatalogueEntry> entries) {
    catalogue_ = std::move(entries);
    fillCatalogue();
}

void ModelManagerDialog::setClientOptions(hub::ClientOptions options) {
    job_->setClientOptions(options);
}

void ModelManagerDialog::showProblem(const QString& message) {
    problem_->setText(message);
    problem_->setVisible(!message.isEmpty());
}

void ModelManagerDialog::setFoldersInUse(const QStringList& folders) {
    foldersInUse_ = folders;
    refresh();
}

void ModelManagerDialog::refresh() {
    installed_ = installedModels(settings_);
    for (const QString& folder : std::as_const(foldersInUse_)) {
        const QString dir = QFileInfo(folder).canonicalFilePath();
        const bool listed = std::any_of(
            installed_.begin(), installed_.end(),
            [&dir](const InstalledModel& model) { return QFileInfo(model.dir).canonicalFilePath() == dir; });
        if (!dir.isEmpty() && !listed) {
            InstalledModel model = inspectModelFolder(dir);
            model.source = tr("in use: %1").arg(QDir::toNativeSeparators(dir));
            installed_.append(std::move(model));
        }
    }
    fillInstalled();
    fillCatalogue();
}

void ModelManagerDialog::fillInstalled() {
    installedView_->clear();
    for (qsizetype i = 0; i < installed_.size(); ++i) {
        const InstalledModel& model = installed_[i];
        auto* item = new QTreeWidgetItem(installedView_);
        item->setText(kName, model.title);
        item->setToolTip(kName, model.dir);
        item->setData(kName, kIndexRole, static_cast<int>(i));
        item->setText(kKind, kindText(model.kind));
        item->setText(kSize, bytesText(model.bytes));
        item->setText(kWhere, model.source);
        item->setText(kState, model.ok() ? tr("ready") : tr("broken: %1").arg(model.problems.first()));
        item->setToolTip(kState, model.problems.join(QLatin1Char('\n')));
        item->setForeground(kState,
                            model.ok() ? QBrush(QColor(0x1b, 0x7f, 0x3b)) : QBrush(QColor(0xb0, 0, 0x20)));
        item->setIcon(kState, QIcon::fromTheme(model.ok() ? QStringLiteral("emblem-ok")
                                                          : QStringLiteral("dialog-warning")));
    }
    for (int c = 0; c < kState; ++c) {
        installedView_->resizeColumnToContents(c);
    }
    // The first working recognition model is selected, as the one the app would use; without one, the first
    // model, so that what is wrong with it shows.
    for (int i = 0; i < installedView_->topLevelItemCount(); ++i) {
        const InstalledModel& model = installed_[i];
        if (model.ok() && model.kind == hub::ModelKind::Recognition) {
            installedView_->setCurrentItem(installedView_->topLevelItem(i));
            break;
        }
    }
    if (!installedView_->currentItem() && installedView_->topLevelItemCount() > 0) {
        installedView_->setCurrentItem(installedView_->topLevelItem(0));
    }
    showDetails();
    updateButtons();
}

void ModelManagerDialog::fillCatalogue() {
    catalogueView_->clear();
    for (const hub::CatalogueEntry& entry : catalogue_) {
        const QString repo = QString::fromStdString(entry.repo);
        const QString layout = QString::fromStdString(entry.layout_repo);
        auto* item = new QTreeWidgetItem(catalogueView_);
        item->setText(0, QString::fromStdString(entry.title));
        item->setData(0, kIndexRole, repo);
        item->setText(1, layout.isEmpty() ? repo : tr("%1 with %2").arg(repo, layout));
        const bool have = findInstalled(installed_, repo) != nullptr &&
                          (layout.isEmpty() || findInstalled(installed_, layout) != nullptr);
        item->setText(2, have ? tr("installed") : tr("not installed"));
    }
    for (int c = 0; c < 2; ++c) {
        catalogueView_->resizeColumnToContents(c);
    }
    if (catalogueView_->topLevelItemCount() > 0 && !catalogueView_->currentItem()) {
        catalogueView_->setCurrentItem(catalogueView_->topLevelItem(0));
    }
    updateButtons();
}

void ModelManagerDialog::showDetails() {
    const QTreeWidgetItem* item = installedView_->currentItem();
    if (!item) {
        details_->setText(installed_.isEmpty()
                              ? tr("No model is installed yet: download one below, or choose a "
                                   "folder that holds one.")
                              : QString());
        details_->setStyleSheet(QString());
        return;
    }
    const InstalledModel& model = installed_[item->data(kName, kIndexRole).toInt()];
    if (model.ok()) {
        details_->setText(tr("%1\n%2").arg(model.repo.isEmpty() ? model.title : model.repo, model.dir));
        details_->setStyleSheet(QString());
    } else {
        details_->setText(tr("This model cannot be used:\n%1").arg(model.problems.join(QLatin1Char('\n'))));
        details_->setStyleSheet(QStringLiteral("color: #b00020;"));
    }
}

void ModelManagerDialog::updateButtons() {
    const bool busy = job_->running();
    downloadButton_->setEnabled(!busy && catalogueView_->currentItem() != nullptr);
    cancelButton_->setVisible(busy);
    const QTreeWidgetItem* item = installedView_->currentItem();
    const bool usable = item && installed_[item->data(kName, kIndexRole).toInt()].ok() &&
                        installed_[item->data(kName, kIndexRole).toInt()].kind == hub::ModelKind::Recognition;
    useButton_->setEnabled(usable);
}

bool ModelManagerDialog::download(const QString& repo) {
    QStringList repos = {repo};
    for (const hub::CatalogueEntry& entry : catalogue_) {
        if (QString::fromStdString(entry.repo).compare(repo, Qt::CaseInsensitive) == 0 &&
            !entry.layout_repo.empty()) {
            repos << QString::fromStdString(entry.layout_repo);
        }
    }
    if (!job_->start(repos)) {
        return false;
    }
    downloadingRepo_ = repo;
    progress_->setValue(0);
    progress_->setVisible(true);
    setStatus(tr("Connecting to %1…").arg(QString::fromStdString(settings_.endpoint)), false);
    updateButtons();
    return true;
}

void ModelManagerDialog::cancelDownload() {
    if (job_->running()) {
        job_->cancel();
        setStatus(tr("Cancelling…"), false);
    }
}

void ModelManagerDialog::onProgress(const DownloadProgress& p) {
    if (p.bytesTotal > 0) {
        progress_->setValue(static_cast<int>(1000 * p.bytesDone / p.bytesTotal));
    }
    QString line;
    if (p.stage == QLatin1String("downloading") && p.bytesTotal > 0) {
        line = tr("%1: %2 of %3, file %4 of %5")
                   .arg(p.repo, bytesText(p.bytesDone), bytesText(p.bytesTotal))
                   .arg(p.filesDone)
                   .arg(p.filesTotal);
        if (p.bytesPerSecond > 0) {
            line += tr(", %1/s").arg(bytesText(static_cast<qint64>(p.bytesPerSecond)));
        }
        if (p.etaSeconds >= 0) {
            line += tr(", %1 s left").arg(qRound(p.etaSeconds));
        }
    } else if (p.stage == QLatin1String("resolving") || p.stage == QLatin1String("listing")) {
        line = tr("%1: looking up the files…").arg(p.repo);
    } else if (p.stage == QLatin1String("verifying")) {
        line = tr("%1: checking the files…").arg(p.repo);
    } else if (p.stage == QLatin1String("done")) {
        line = tr("%1: done").arg(p.repo);
    }
    if (!p.note.isEmpty()) {
        line += QStringLiteral(" (") + p.note + QLatin1Char(')');
    }
    if (!line.isEmpty()) {
        setStatus(line, false);
    }
}

void ModelManagerDialog::onFinished(bool ok, bool cancelled, const QString& message,
                                    const QStringList& folders) {
    progress_->setVisible(false);
    refresh();
    if (ok) {
        progress_->setValue(1000);
        setStatus(tr("%1 is downloaded and ready.").arg(downloadingRepo_), false);
        // Select what arrived.
        for (int i = 0; i < installedView_->topLevelItemCount(); ++i) {
            if (installed_[i].repo.compare(downloadingRepo_, Qt::CaseInsensitive) == 0) {
                installedView_->setCurrentItem(installedView_->topLevelItem(i));
            }
        }
    } else if (cancelled) {
        setStatus(tr("Download cancelled. What arrived is kept; downloading again resumes it."), false);
    } else {
        setStatus(tr("Download failed: %1").arg(message), true);
    }
    Q_UNUSED(folders);
    updateButtons();
    Q_EMIT downloadFinished(ok, ok ? QString() : message);
}

void ModelManagerDialog::setStatus(const QString& text, bool error) {
    status_->setText(text);
    status_->setStyleSheet(error ? QStringLiteral("color: #b00020;") : QString());
}

void ModelManagerDialog::useSelected() {
    const QTreeWidgetItem* item = installedView_->currentItem();
    if (!item) {
        return;
    }
    const InstalledModel& model = installed_[item->data(kName, kIndexRole).toInt()];
    if (!model.ok() || model.kind != hub::ModelKind::Recognition) {
        return;
    }
    chosenFolder_ = model.dir;
    chosenRepo_ = model.repo;
    Q_EMIT modelChosen(chosenFolder_, chosenRepo_);
    accept();
}

void ModelManagerDialog::pickFolder() {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Choose a model folder"));
    if (!dir.isEmpty()) {
        chooseFolder(dir);
    }
}

bool ModelManagerDialog::chooseFolder(const QString& dir) {
    const InstalledModel model = inspectModelFolder(dir);
    if (!model.ok()) {
        setStatus(tr("%1 cannot be used: %2").arg(dir, model.problems.join(QStringLiteral("; "))), true);
        return false;
    }
    if (model.kind != hub::ModelKind::Recognition) {
        setStatus(tr("%1 holds a layout model; choose a PaddleOCR-VL folder.").arg(dir), true);
        return false;
    }
    chosenFolder_ = model.dir;
    chosenRepo_ = model.repo;
    Q_EMIT modelChosen(chosenFolder_, chosenRepo_);
    accept();
    return true;
}

void ModelManagerDialog::closeEvent(QCloseEvent* event) {
    cancelDownload();
    QDialog::closeEvent(event);
}

void ModelManagerDialog::reject() {
    cancelDownload();
    QDialog::reject();
}

void ModelManagerDialog::changeEvent(QEvent* event) {
    if (event->type() == QEvent::LanguageChange) {
        retranslate();
        fillInstalled();
        fillCatalogue();
    }
    QDialog::changeEvent(event);
}

void ModelManagerDialog::retranslate() {
    setWindowTitle(tr("Models"));
    installedTitle_->setText(tr("Installed models"));
    installedView_->setHeaderLabels({tr("Model"), tr("Kind"), tr("Size"), tr("Where"), tr("State")});
    catalogueTitle_->setText(tr("Download from the Hugging Face Hub"));
    catalogueView_->setHeaderLabels({tr("Model"), tr("Repository"), tr("State")});
    downloadButton_->setText(tr("Download"));
    cancelButton_->setText(tr("Cancel download"));
    folderButton_->setText(tr("Choose folder…"));
    useButton_->setText(tr("Use this model"));
    closeButton_->setText(tr("Close"));
}

}  // namespace folio
