#include "app/models/model-inventory.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <algorithm>
#include <filesystem>

#include "app/hub/folder-check.h"
#include "app/hub/hub-cache.h"

namespace folio {

namespace {

namespace fs = std::filesystem;

QString titleOf(const QString& repo, const QString& dir) {
    if (const hub::CatalogueEntry* entry = hub::find_catalogue_entry(repo.toStdString())) {
        return QString::fromStdString(entry->title);
    }
    return repo.isEmpty() ? QFileInfo(dir).fileName() : repo;
}

// A folder checked as its kind (from config.json), against a cache listing where there is one.
InstalledModel inspect(const fs::path& dir, const QString& repo, const QString& source,
                       const std::vector<hub::TreeEntry>* listing) {
    InstalledModel model;
    model.repo = repo;
    model.dir = QString::fromStdString(dir.string());
    model.title = titleOf(repo, model.dir);
    model.source = source;
    const std::optional<hub::ModelKind> kind = hub::detect_model_kind(dir);
    const hub::CatalogueEntry* entry = hub::find_catalogue_entry(repo.toStdString());
    model.kind = entry ? entry->kind : kind.value_or(hub::ModelKind::Recognition);
    hub::FolderCheckOptions options;
    options.kind = model.kind;
    if (listing) {
        options.listing = listing;
        options.patterns = hub::fetch_patterns(model.kind);
    }
    try {
        const hub::FolderCheck check = hub::check_model_folder(dir, options);
        model.bytes = check.bytes;
        for (const std::string& problem : check.problems) {
            model.problems << QString::fromStdString(problem);
        }
    } catch (const std::exception& e) {
        model.problems << QString::fromStdString(e.what());
    }
    return model;
}

// Repositories kept in a cache's layout under root: the newest snapshot of each.
void fromCache(const fs::path& root, const QString& source, QList<InstalledModel>& out) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) {
        return;
    }
    const hub::HubCache cache(root);
    for (const hub::CachedRepo& repo : cache.list()) {
        if (repo.snapshots.empty()) {
            continue;
        }
        const hub::CachedSnapshot& snapshot = repo.snapshots.front();
        const auto listing = cache.read_tree(repo.repo, snapshot.commit);
        out << inspect(snapshot.dir, QString::fromStdString(repo.repo), source,
                       listing ? &*listing : nullptr);
    }
}

// Plain ORG/NAME folders with a config.json under root.
void fromFolders(const fs::path& root, const QString& source, QList<InstalledModel>& out) {
    const QDir top(QString::fromStdString(root.string()));
    for (const QString& org : top.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        if (org.startsWith(QLatin1String("models--")) || org.startsWith(QLatin1Char('.'))) {
            continue;
        }
        const QDir orgDir(top.filePath(org));
        for (const QString& name : orgDir.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
            const QString dir = orgDir.filePath(name);
            if (QFileInfo::exists(QDir(dir).filePath(QStringLiteral("config.json")))) {
                out << inspect(dir.toStdString(), org + QLatin1Char('/') + name, source, nullptr);
            }
        }
    }
}

}  // namespace

QList<InstalledModel> installedModels(const hub::HubSettings& settings) {
    QList<InstalledModel> models;
    fromCache(settings.cache_dir, QCoreApplication::translate("folio::ModelInventory", "Hugging Face cache"),
              models);
    fromCache(settings.models_dir,
              QCoreApplication::translate("folio::ModelInventory", "Folio's models folder"), models);
    fromFolders(settings.models_dir,
                QCoreApplication::translate("folio::ModelInventory", "Folio's models folder"), models);
    std::stable_sort(models.begin(), models.end(), [](const InstalledModel& a, const InstalledModel& b) {
        if (a.kind != b.kind) {
            return a.kind == hub::ModelKind::Recognition;
        }
        return a.title.compare(b.title, Qt::CaseInsensitive) < 0;
    });
    return models;
}

InstalledModel inspectModelFolder(const QString& dir) {
    if (!QFileInfo(dir).isDir()) {
        InstalledModel model;
        model.dir = dir;
        model.title = QFileInfo(dir).fileName();
        model.source = QCoreApplication::translate("folio::ModelInventory", "folder");
        model.problems << QCoreApplication::translate("folio::ModelInventory", "%1: no such folder").arg(dir);
        return model;
    }
    return inspect(dir.toStdString(), QString(),
                   QCoreApplication::translate("folio::ModelInventory", "folder"), nullptr);
}

const InstalledModel* findInstalled(const QList<InstalledModel>& models, const QString& repo) {
    for (const InstalledModel& model : models) {
        if (model.ok() && model.repo.compare(repo, Qt::CaseInsensitive) == 0) {
            return &model;
        }
    }
    return nullptr;
}

}  // namespace folio
