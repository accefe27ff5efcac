#include "app/jobs/installed-models.h"

#include <QCoreApplication>
#include <QStringList>
#include <exception>

#include "app/hub/hub-settings.h"
#include "app/hub/model-catalogue.h"
#include "app/hub/model-locator.h"

namespace folio {

QStringList defaultRecognitionRepos() {
    return {QStringLiteral("PaddlePaddle/PaddleOCR-VL-1.6"), QStringLiteral("PaddlePaddle/PaddleOCR-VL-1.5"),
            QStringLiteral("PaddlePaddle/PaddleOCR-VL")};
}

ModelFolders modelsForFolder(const QString& spec, QString* note, const QString& layoutSpec) {
    const hub::HubSettings settings = hub::hub_settings_from_environment();
    hub::LocateOptions options;
    options.kind = hub::ModelKind::Recognition;
    const hub::LocatedModel model = hub::locate_model(spec.toStdString(), settings, options);
    ModelFolders folders;
    folders.recognition = QString::fromStdString(model.dir.string());
    folders.description =
        QString::fromStdString(model.repo.empty() ? model.dir.filename().string() : model.repo);
    if (!layoutSpec.trimmed().isEmpty()) {
        hub::LocateOptions layoutOptions;
        layoutOptions.kind = hub::ModelKind::Layout;
        folders.layout = QString::fromStdString(
            hub::locate_model(layoutSpec.trimmed().toStdString(), settings, layoutOptions).dir.string());
    } else if (const std::optional<std::string> paired = hub::paired_layout_repo(model)) {
        try {
            hub::LocateOptions layoutOptions;
            layoutOptions.kind = hub::ModelKind::Layout;
            folders.layout =
                QString::fromStdString(hub::locate_model(*paired, settings, layoutOptions).dir.string());
        } catch (const std::exception& e) {
            if (note != nullptr) {
                *note = QString::fromUtf8(e.what());
            }
        }
    } else if (note != nullptr) {
        // In English: the app finds the setting to offer from its words (settingForEngineError).
        *note =
            QStringLiteral("No layout model is known for %1: pages are read whole").arg(folders.description);
    }
    return folders;
}

std::optional<ModelFolders> findInstalledModels(QString* why) {
    QStringList problems;
    for (const QString& repo : defaultRecognitionRepos()) {
        try {
            QString note;
            ModelFolders folders = modelsForFolder(repo, &note);
            if (folders.layout.isEmpty()) {
                problems << note;
                continue;  // an older model with its layout model may be complete
            }
            return folders;
        } catch (const std::exception& e) {
            problems << QString::fromUtf8(e.what());
        }
    }
    if (why != nullptr) {
        *why = QCoreApplication::translate(
                   "folio::InstalledModels",
                   "No PaddleOCR-VL model is installed. Download one with the model manager "
                   "or with \"folio-cli model pull PaddlePaddle/PaddleOCR-VL-1.5\", or "
                   "choose a model folder.") +
               QStringLiteral("\n\n") + problems.join(QStringLiteral("\n"));
    }
    return std::nullopt;
}

QStringList chatRepos() {
    QStringList repos;
    for (const hub::CatalogueEntry& entry : hub::model_catalogue()) {
        if (entry.kind == hub::ModelKind::Chat) {
            repos << QString::fromStdString(entry.repo);
        }
    }
    return repos;
}

bool addChatModel(ModelFolders& folders, const QString& spec) {
    const hub::HubSettings settings = hub::hub_settings_from_environment();
    hub::LocateOptions options;
    options.kind = hub::ModelKind::Chat;
    const auto take = [&](const hub::LocatedModel& model) {
        folders.chat = QString::fromStdString(model.dir.string());
        folders.chatDescription =
            QString::fromStdString(model.repo.empty() ? model.dir.filename().string() : model.repo);
    };
    if (!spec.trimmed().isEmpty()) {
        take(hub::locate_model(spec.trimmed().toStdString(), settings, options));
        return true;
    }
    for (const QString& repo : chatRepos()) {
        try {
            take(hub::locate_model(repo.toStdString(), settings, options));
            return true;
        } catch (const std::exception&) {
            // not installed, or incomplete: the next one
        }
    }
    return false;
}

}  // namespace folio
