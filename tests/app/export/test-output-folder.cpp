// makeOutputFolder: nested folders made, an existing one kept, and errors that name the folder and say why
// (a file in the way, a file above it, an empty name).
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include "app/export/output-folder.h"
#include "engine/common/error.h"

using namespace folio;

class TestOutputFolder : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void makesNestedFolders() {
        QTemporaryDir dir;
        const QString folder = QDir(dir.path()).filePath(QStringLiteral("a/b/c"));
        makeOutputFolder(folder);
        QVERIFY(QFileInfo(folder).isDir());
        makeOutputFolder(folder);  // already there: nothing to do
        QVERIFY(QFileInfo(folder).isDir());
    }

    void refusals_data() {
        QTest::addColumn<QString>("relative");
        QTest::addColumn<QString>("reason");
        QTest::newRow("a file of that name") << "blocker"
                                             << "a file of that name is in the way";
        QTest::newRow("a file above it") << "blocker/out"
                                         << "Not a directory";
    }

    void refusals() {
        QFETCH(QString, relative);
        QFETCH(QString, reason);
        QTemporaryDir dir;
        QFile blocker(QDir(dir.path()).filePath(QStringLiteral("blocker")));
        QVERIFY(blocker.open(QIODevice::WriteOnly));
        blocker.close();
        const QString folder = QDir(dir.path()).filePath(relative);
        try {
            makeOutputFolder(folder, "folder of the test");
            QFAIL("a folder was made where a file is");
        } catch (const Error& error) {
            const QString message = QString::fromStdString(error.what());
            QCOMPARE(message, folder + QStringLiteral(": cannot create the folder of the test: ") + reason);
        }
        QVERIFY(QFileInfo(blocker.fileName()).isFile());
    }

    void emptyNameIsRefused() { QVERIFY_THROWS_EXCEPTION(Error, makeOutputFolder(QString())); }
};

QTEST_GUILESS_MAIN(TestOutputFolder)
#include "test-output-folder.moc"
