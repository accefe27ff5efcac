// An output file written under a temporary name beside its target and renamed over it once complete, so that
// the target is either the whole new file or left as it was.
#pragma once

#include <QFile>
#include <QString>

namespace folio {

class StagedFile {
public:
    // Creates the target's folder if needed and the temporary file, open for writing; throws folio::Error
    // naming the folder or the target when either cannot be made.
    explicit StagedFile(const QString& target);
    // Removes the temporary file unless it was committed.
    ~StagedFile();
    StagedFile(const StagedFile&) = delete;
    StagedFile& operator=(const StagedFile&) = delete;

    QFile& file() { return m_file; }
    const QString& target() const { return m_target; }
    QString temporaryPath() const { return m_file.fileName(); }

    // Flushes and closes the file, if still open, and renames it over the target; throws folio::Error naming
    // the target on failure, the temporary file then removed.
    void commit();
    // Removes the temporary file.
    void discard();

private:
    QString m_target;
    QFile m_file;
    bool m_done = false;
};

}  // namespace folio
