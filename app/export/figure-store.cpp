#include "app/export/figure-store.h"

#include <QDir>
#include <QImageWriter>
#include <QUrl>
#include <filesystem>
#include <system_error>

#include "app/export/output-folder.h"
#include "engine/common/error.h"

namespace folio {
namespace {

const QString kFolder = QStringLiteral("imgs");

std::filesystem::path toPath(const QString& path) {
    return std::filesystem::path(path.toStdU16String());
}

}  // namespace

void FigureStore::begin(const QString& outputDir, const QString& stem) {
    outputDir_ = outputDir;
    stem_ = stem;
    names_.clear();
    committed_.clear();
    staging_ =
        std::make_unique<QTemporaryDir>(QDir(outputDir).filePath(QStringLiteral(".folio-figures-XXXXXX")));
    if (!staging_->isValid()) {
        fail(outputDir.toStdString(),
             ": cannot create a folder for the figures: ", staging_->errorString().toStdString());
    }
}

QString FigureStore::add(const BlockResult& block) {
    const BlockBox& b = block.box;
    const QString base =
        QStringLiteral("img_in_%1_box_%2_%3_%4_%5").arg(block.label).arg(b.x1).arg(b.y1).arg(b.x2).arg(b.y2);
    QString name = base + QStringLiteral(".jpg");
    for (int n = 2; names_.count(name) > 0; ++n) {
        name = base + QLatin1Char('_') + QString::number(n) + QStringLiteral(".jpg");
    }
    const QString path = QDir(staging_->path()).filePath(name);
    QImageWriter writer(path, "jpg");
    if (!writer.write(block.image)) {
        fail(path.toStdString(), ": cannot write the image: ", writer.errorString().toStdString());
    }
    names_.insert(name);
    return kFolder + QLatin1Char('/') + QString::fromLatin1(QUrl::toPercentEncoding(stem_)) +
           QLatin1Char('/') + name;
}

QStringList FigureStore::commit() {
    if (names_.empty()) {
        staging_.reset();
        return {};
    }
    const QDir target(QDir(outputDir_).filePath(kFolder + QLatin1Char('/') + stem_));
    try {
        makeOutputFolder(target.path(), "folder of the document's images");
    } catch (...) {
        discard();
        throw;
    }
    for (const QString& name : names_) {
        const QString to = target.absoluteFilePath(name);
        std::error_code error;
        std::filesystem::rename(toPath(QDir(staging_->path()).filePath(name)), toPath(to), error);
        if (error) {
            discard();
            fail(to.toStdString(), ": cannot move the image into place: ", error.message());
        }
        committed_.push_back(to);
    }
    staging_.reset();
    return committed_;
}

void FigureStore::discard() {
    staging_.reset();  // removes the staging folder and what is left in it
    for (const QString& path : committed_) {
        QFile::remove(path);
    }
    if (!committed_.isEmpty()) {
        QDir folder(QDir(outputDir_).filePath(kFolder + QLatin1Char('/') + stem_));
        QDir().rmdir(folder.path());                       // only where empty
        QDir().rmdir(QDir(outputDir_).filePath(kFolder));  // likewise
    }
    committed_.clear();
    names_.clear();
}

}  // namespace folio
