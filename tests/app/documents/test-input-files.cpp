// Input files: folders listed in natural order with hidden and unsupported files left out, recursively on
// request; several inputs in order, each file once; the errors for missing, unsupported and empty inputs.
#include <QtTest>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include "app/documents/input-files.h"
#include "engine/common/error.h"
#include "error-of.h"
#include "test-pdf.h"

using folio::testing::errorOf;

namespace {

const QByteArray kPng("\x89PNG\r\n\x1a\n", 8);
const QByteArray kJpeg("\xff\xd8\xff\xe0", 4);

}  // namespace

class InputFilesTest : public QObject {
    Q_OBJECT

private:
    QTemporaryDir dir_;
    QString root_;

    void add(const QString& relative, const QByteArray& bytes) {
        const QString path = QDir(root_).filePath(relative);
        QVERIFY(QDir().mkpath(QFileInfo(path).path()));
        folio::test::writeFile(path, bytes);
    }

    QStringList relative(const QStringList& paths) const {
        QStringList names;
        for (const QString& path : paths) {
            names.append(QDir(root_).relativeFilePath(path));
        }
        return names;
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        root_ = dir_.filePath(QStringLiteral("scans"));
        add(QStringLiteral("page10.png"), kPng);
        add(QStringLiteral("page2.png"), kPng);
        add(QStringLiteral("page1.png"), kPng);
        add(QStringLiteral("Page3.jpg"), kJpeg);
        add(QStringLiteral("cover.pdf"), "%PDF-1.7\n");
        add(QStringLiteral("misnamed.pdf"), "not a PDF at all");  // listed: opening it says what is wrong
        add(QStringLiteral("photo"), kJpeg);                      // no suffix: told by content
        add(QStringLiteral("notes.txt"), "notes");
        add(QStringLiteral("thumbs.db"), "\0\0\0");
        add(QStringLiteral(".hidden.png"), kPng);
        add(QStringLiteral("sub/b10.png"), kPng);
        add(QStringLiteral("sub/b9.png"), kPng);
        add(QStringLiteral("sub/deeper/c.tif"), QByteArray("II*\0", 4));
        add(QStringLiteral(".cache/x.png"), kPng);
        QVERIFY(QFile::link(root_, QDir(root_).filePath(QStringLiteral("loop"))));  // a link to a folder
        add(QStringLiteral("../empty/only-sub/a.png"), kPng);
    }

    void naturalCompare_data() {
        QTest::addColumn<QString>("a");
        QTest::addColumn<QString>("b");
        QTest::addColumn<int>("expected");
        QTest::newRow("2 before 10") << "page2"
                                     << "page10" << -1;
        QTest::newRow("10 after 9") << "10"
                                    << "9" << 1;
        QTest::newRow("numbers inside") << "a1b2"
                                        << "a1b10" << -1;
        QTest::newRow("case ignored") << "a"
                                      << "B" << -1;
        QTest::newRow("case ignored, reversed") << "B"
                                                << "a" << 1;
        QTest::newRow("case breaks ties") << "Ab"
                                          << "ab" << -1;
        QTest::newRow("fewer leading zeros first") << "file01"
                                                   << "file1" << 1;
        QTest::newRow("equal") << "scan.png"
                               << "scan.png" << 0;
        QTest::newRow("prefix first") << "ab"
                                      << "abc" << -1;
        QTest::newRow("empty first") << ""
                                     << "a" << -1;
        QTest::newRow("long numbers") << "p123456789012345678901234567890"
                                      << "p99" << 1;
        QTest::newRow("digits before letters") << "1a"
                                               << "a1" << -1;
        QTest::newRow("accents fold") << "École2"
                                      << "école10" << -1;
    }

    void naturalCompare() {
        QFETCH(QString, a);
        QFETCH(QString, b);
        QFETCH(int, expected);
        QCOMPARE(folio::naturalCompare(a, b), expected);
        QCOMPARE(folio::naturalCompare(b, a), -expected);
    }

    void folderInNaturalOrder() {
        QCOMPARE(relative(folio::listFolder(root_)),
                 QStringList({"cover.pdf", "misnamed.pdf", "page1.png", "page2.png", "Page3.jpg",
                              "page10.png", "photo"}));
    }

    void folderRecursively() {
        QCOMPARE(relative(folio::listFolder(root_, folio::InputOptions{true})),
                 QStringList({"cover.pdf", "misnamed.pdf", "page1.png", "page2.png", "Page3.jpg",
                              "page10.png", "photo", "sub/b9.png", "sub/b10.png", "sub/deeper/c.tif"}));
    }

    void inputsInOrderEachOnce() {
        const QString cover = QDir(root_).filePath(QStringLiteral("cover.pdf"));
        const QString page2 = QDir(root_).filePath(QStringLiteral("page2.png"));
        const QStringList files = folio::collectInputFiles({page2, root_, cover});
        QCOMPARE(relative(files), QStringList({"page2.png", "cover.pdf", "misnamed.pdf", "page1.png",
                                               "Page3.jpg", "page10.png", "photo"}));
    }

    void errors() {
        const QString missing = dir_.filePath(QStringLiteral("missing.pdf"));
        QCOMPARE(errorOf([&] { folio::collectInputFiles({missing}); }),
                 missing + QStringLiteral(": no such file or folder"));
        const QString notes = QDir(root_).filePath(QStringLiteral("notes.txt"));
        QCOMPARE(
            errorOf([&] { folio::collectInputFiles({notes}); }),
            notes + QStringLiteral(": unsupported file (not a PDF or an image); Folio reads PDF, PNG, JPEG, "
                                   "TIFF, BMP or WebP"));
        const QString empty = dir_.filePath(QStringLiteral("empty"));
        QCOMPARE(errorOf([&] { folio::collectInputFiles({empty}); }),
                 empty + QStringLiteral(": the folder holds no PDF, PNG, JPEG, TIFF, BMP or WebP files (its "
                                        "subfolders were not searched)"));
        QCOMPARE(folio::collectInputFiles({empty}, folio::InputOptions{true}).size(), 1);
        QCOMPARE(errorOf([&] { folio::listFolder(notes); }), notes + QStringLiteral(": not a folder"));
    }
};

QTEST_GUILESS_MAIN(InputFilesTest)
#include "test-input-files.moc"
