// A file that keeps the app's state (the session, the conversations): written a moment after it is asked to
// (the first request starts the wait and later ones join it, so that a stream of changes still writes every
// so often), on a thread of its own through StagedFile, so that the file is always whole. The state is taken
// on the owner's thread and turned into bytes on the writer's.
#pragma once

#include <QByteArray>
#include <QString>
#include <QStringList>
#include <QThreadPool>
#include <QTimer>
#include <functional>

namespace folio {

class DeferredFileWriter {
public:
    // Called on the owner's thread when a write starts: takes the state and gives the work that makes the
    // file's bytes from it on the writer's thread.
    using Snapshot = std::function<std::function<QByteArray()>()>;

    // failed: why a write failed, called on the owner's thread.
    DeferredFileWriter(QString path, Snapshot snapshot, std::function<void(const QString&)> failed,
                       int delayMs = 1500);
    // Waits for a write under way.
    ~DeferredFileWriter();
    DeferredFileWriter(const DeferredFileWriter&) = delete;
    DeferredFileWriter& operator=(const DeferredFileWriter&) = delete;

    const QString& path() const { return path_; }
    // Writes the file a moment from now.
    void schedule();
    // Writes the file now and waits for it (quitting, tests).
    void writeNow();
    // Reads the file back and gives its bytes to `parse`, which throws for what it cannot read; true where
    // it read them. A file that cannot be read is moved to PATH.unreadable (replacing an older one), so that
    // the next write does not replace it, and said in `problems` with where it went. False, and nothing said,
    // where there is no file yet.
    bool read(const std::function<void(const QByteArray&)>& parse, QStringList* problems) const;

private:
    void start();

    QString path_;
    Snapshot snapshot_;
    std::function<void(const QString&)> failed_;
    QTimer timer_;
    QThreadPool writer_;  // one thread: writes in order
};

}  // namespace folio
