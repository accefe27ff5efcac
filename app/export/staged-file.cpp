#include "app/export/staged-file.h"

#include <QDir>
#include <QFileInfo>
#include <QRandomGenerator>
#include <filesystem>
#include <system_error>

#include "app/export/output-folder.h"
#include "engine/common/error.h"

namespace folio {

namespace {

constexpr int kNameAttempts = 16;

std::filesystem::path toPath(const QString& path) {
    return std::filesystem::path(QFile::encodeName(path).toStdString());
}

}  // namespace

StagedFile::StagedFile(const QString& target) : m_target(QFileInfo(target).absoluteFilePath()) {
    const QFileInfo info(m_target);
    const QString folder = info.absolutePath();
    makeOutputFolder(folder, "folder of the output file");
    // Hidden, and made with the process's usual permissions (a QTemporaryFile would be private to its owner).
    for (int attempt = 0; attempt < kNameAttempts; ++attempt) {
        const QString suffix = QString::number(QRandomGenerator::global()->generate(), 36);
        m_file.setFileName(QDir(folder).filePath(QStringLiteral(".%1.%2.tmp").arg(info.fileName(), suffix)));
        if (m_file.open(QIODevice::WriteOnly | QIODevice::NewOnly)) {
            return;
        }
        if (QFileInfo::exists(m_file.fileName())) {
            continue;  // a name taken by chance: another try
        }
        break;
    }
    m_done = true;
    fail("cannot create \"", m_target.toStdString(), "\": ", m_file.errorString().toStdString());
}

StagedFile::~StagedFile() {
    discard();
}

void StagedFile::commit() {
    if (m_done) {
        fail("\"", m_target.toStdString(), "\" was already completed or dropped");
    }
    if (m_file.isOpen()) {
        const bool flushed = m_file.flush();
        m_file.close();
        if (!flushed || m_file.error() != QFileDevice::NoError) {
            const std::string why = m_file.errorString().toStdString();
            discard();
            fail("cannot write \"", m_target.toStdString(), "\": ", why);
        }
    }
    std::error_code error;
    std::filesystem::rename(toPath(m_file.fileName()), toPath(m_target), error);
    if (error) {
        discard();
        fail("cannot move \"", m_file.fileName().toStdString(), "\" to \"", m_target.toStdString(),
             "\": ", error.message());
    }
    m_done = true;
}

void StagedFile::discard() {
    if (m_done) {
        return;
    }
    m_done = true;
    m_file.close();
    m_file.remove();
}

}  // namespace folio
