// The desktop app's session file on the fixture models: a run document with the user's edits, a drawn box, a
// deleted block, a table grid and a block kept as an image written and read back as they were (a file
// changed since flagged, one gone said and left out, an unreadable file set aside), and damaged files
// refused naming the file, table grids that do not hold their cells dropped.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "app/document-model/document-model.h"
#include "app/document-model/session-file.h"
#include "app/jobs/job-controller.h"
#include "fixture-engine.h"
#include "job-runs.h"

using namespace folio;
using namespace std::chrono_literals;

class TestSessionFile : public QObject {
    Q_OBJECT

    EngineService service_;
    QTemporaryDir tmp_;

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        service_.load(test::fixtureParams());
        QCOMPARE(service_.wait_loaded(120s), ServiceState::Ready);
    }

    // The session file keeps each document's pages and blocks, the user's edits, deletions and drawn boxes
    // included: a model restored from it shows them without a run, and a file changed since is flagged.
    void sessionFileRoundTrip() {
        const QString path = tmp_.filePath(QStringLiteral("kept.pdf"));
        QVERIFY(QFile::copy(QString::fromUtf8(test::kSamplePdf), path));
        DocumentModel model;
        JobController jobs(service_, model);
        test::useShortRuns(jobs);
        const int doc = model.addDocument(path);
        test::runAndWait(jobs, {doc});
        QCOMPARE(model.document(doc).state, DocumentState::Done);
        QSignalSpy recognized(&jobs, &JobController::blockRecognized);
        model.editBlockText(doc, 0, 0, QStringLiteral("Edited by hand"));
        const int drawn = jobs.recognizeRegion(doc, 1, BlockBox{12, 14, 180, 90}, QStringLiteral("OCR:"));
        QVERIFY(recognized.wait(60000));
        model.deleteBlock(doc, 1, 0);
        // A table as recognition leaves one, and a block kept as an image.
        BlockResult table = *model.block(doc, 0, 0);
        table.label = QStringLiteral("table");
        table.table = TableGrid{2,
                                2,
                                {{0, 0, 1, 2, QStringLiteral("head")},
                                 {1, 0, 1, 1, QStringLiteral("a")},
                                 {1, 1, 1, 1, QStringLiteral("b")}}};
        QImage figure(40, 30, QImage::Format_RGB888);
        figure.fill(QColor(10, 120, 200));
        table.image = figure;
        model.setBlock(doc, 0, table);

        const QString file = tmp_.filePath(QStringLiteral("config/session.json"));
        {
            SessionStore store(model, file);
            QSignalSpy failed(&store, &SessionStore::failed);
            store.writeNow();
            QVERIFY(failed.isEmpty());
        }
        QVERIFY(QFile::exists(file));
        QCOMPARE(QDir(QFileInfo(file).absolutePath()).entryList(QDir::Files | QDir::Hidden).size(), 1);

        DocumentModel restored;
        SessionStore store(restored, file);
        QStringList problems;
        const QList<int> docs = store.restore(&problems);
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join('\n')));
        QCOMPARE(docs.size(), 1);
        const int back = docs.first();
        QCOMPARE(restored.document(back).path, path);
        QCOMPARE(restored.document(back).state, DocumentState::Done);
        QCOMPARE(restored.document(back).pagesDone, 2);
        QVERIFY(!restored.document(back).changedOnDisk);
        QCOMPARE(restored.document(back).pages.size(), model.document(doc).pages.size());
        for (int p = 0; p < 2; ++p) {
            const PageEntry& a = model.page(doc, p);
            const PageEntry& b = restored.page(back, p);
            QCOMPARE(b.state, a.state);
            QCOMPARE(b.size, a.size);
            QCOMPARE(b.edited, a.edited);
            QCOMPARE(b.result.dpi, a.result.dpi);
            QCOMPARE(b.result.width, a.result.width);
            QCOMPARE(b.result.blocks.size(), a.result.blocks.size());
            for (size_t i = 0; i < a.result.blocks.size(); ++i) {
                const BlockResult& x = a.result.blocks[i];
                const BlockResult& y = b.result.blocks[i];
                QCOMPARE(y.id, x.id);
                QCOMPARE(y.label, x.label);
                QCOMPARE(y.task, x.task);
                QCOMPARE(y.content, x.content);
                QCOMPARE(y.rawText, x.rawText);
                QCOMPARE(y.box.x1, x.box.x1);
                QCOMPARE(y.box.y2, x.box.y2);
                QCOMPARE(y.polygon, x.polygon);
                QCOMPARE(y.order, x.order);
                QCOMPARE(y.groupId, x.groupId);
                QCOMPARE(y.nTokens, x.nTokens);
                QCOMPARE(y.edited, x.edited);
                QCOMPARE(y.drawn, x.drawn);
                QCOMPARE(y.table.has_value(), x.table.has_value());
                QCOMPARE(y.image.isNull(), x.image.isNull());
            }
        }
        const BlockResult* kept = restored.block(back, 0, 0);
        QCOMPARE(kept->content, QStringLiteral("Edited by hand"));
        QVERIFY(kept->edited);
        QCOMPARE(kept->table->cells.size(), size_t{3});
        QCOMPARE(kept->table->cells[0].columnSpan, 2);
        QCOMPARE(kept->table->cells[2].text, QStringLiteral("b"));
        QCOMPARE(kept->image.convertToFormat(QImage::Format_RGB888), figure);
        QVERIFY(restored.block(back, 1, drawn - 1)->drawn);
        QVERIFY(restored.page(back, 1).edited);
        // Nothing to run; the page images are rendered again when needed.
        QVERIFY(!restored.hasPagesToRun(back, RunScope::Missing));
        QVERIFY(restored.needsPageImage(back, 0));

        // The file changed since: its results come back flagged.
        {
            QFile pdf(path);
            QVERIFY(pdf.open(QIODevice::Append));
            pdf.write("\n% changed\n");
        }
        DocumentModel changed;
        SessionStore again(changed, file);
        const QList<int> changedDocs = again.restore();
        QCOMPARE(changedDocs.size(), 1);
        QVERIFY(changed.document(changedDocs.first()).changedOnDisk);
        QCOMPARE(changed.block(changedDocs.first(), 0, 0)->content, QStringLiteral("Edited by hand"));

        // A change to the model is written a moment later; a closed document leaves the file.
        restored.closeDocument(back);
        QTRY_VERIFY_WITH_TIMEOUT(parseSessionJson(
                                     [&] {
                                         QFile f(file);
                                         return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
                                     }(),
                                     file)
                                     .empty(),
                                 10000);

        // A file that is gone is said, and left out.
        QVERIFY(QFile::remove(path));
        DocumentModel gone;
        SessionStore none(gone, file);
        {
            SessionStore writer(changed, file);
            writer.writeNow();
        }
        problems.clear();
        QVERIFY(none.restore(&problems).isEmpty());
        QCOMPARE(problems.size(), 1);
        QVERIFY(problems.first().contains(QStringLiteral("kept.pdf")));

        // A damaged file is said and set aside, not written over by the next change.
        {
            QFile damaged(file);
            QVERIFY(damaged.open(QIODevice::WriteOnly | QIODevice::Truncate));
            damaged.write("{\"folioSession\":1,\"documents\":[");
        }
        DocumentModel fresh;
        SessionStore reader(fresh, file);
        problems.clear();
        QVERIFY(reader.restore(&problems).isEmpty());
        QCOMPARE(problems.size(), 1);
        QVERIFY2(problems.first().endsWith(QStringLiteral("(kept as %1.unreadable)").arg(file)),
                 qPrintable(problems.first()));
        QVERIFY(!QFile::exists(file));
        QFile aside(file + QStringLiteral(".unreadable"));
        QVERIFY(aside.open(QIODevice::ReadOnly));
        QCOMPARE(aside.readAll(), QByteArray("{\"folioSession\":1,\"documents\":["));
    }

    // A damaged session file is refused naming the file, and a table grid whose cells lie outside it (or one
    // too large for any page) is dropped while its block keeps its text.
    void damagedSessionFiles_data() {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<bool>("parses");
        QTest::addColumn<bool>("keepsTable");
        const auto session = [](const QByteArray& table) {
            return QByteArrayLiteral(
                       R"({"folioSession":1,"documents":[{"path":"/tmp/a.pdf","size":1,"pages":[)"
                       R"({"blocks":[{"id":0,"label":"table","box":[0,0,10,10],"content":"t",)"
                       R"("table":)") +
                   table + QByteArrayLiteral("}]}]}]}");
        };
        QTest::newRow("truncated") << QByteArrayLiteral(R"({"folioSession":1,"documents":[)") << false
                                   << false;
        QTest::newRow("not json") << QByteArrayLiteral("\x00\xff") << false << false;
        QTest::newRow("other version") << QByteArrayLiteral(R"({"folioSession":99})") << false << false;
        QTest::newRow("good table") << session(
                                           R"({"rows":1,"columns":2,"cells":[[0,0,1,1,"a"],[0,1,1,1,"b"]]})")
                                    << true << true;
        QTest::newRow("cell outside")
            << session(R"({"rows":1,"columns":1,"cells":[[0,5,1,1,"a"]]})") << true << false;
        QTest::newRow("span outside")
            << session(R"({"rows":2,"columns":2,"cells":[[1,0,2,1,"a"]]})") << true << false;
        QTest::newRow("negative") << session(R"({"rows":1,"columns":1,"cells":[[-1,0,1,1,"a"]]})") << true
                                  << false;
        QTest::newRow("huge") << session(R"({"rows":2000000000,"columns":2000000000,"cells":[]})") << true
                              << false;
    }

    void damagedSessionFiles() {
        QFETCH(QByteArray, json);
        QFETCH(bool, parses);
        QFETCH(bool, keepsTable);
        const QString where = QStringLiteral("/home/u/.config/Folio/session.json");
        if (!parses) {
            try {
                parseSessionJson(json, where);
                QFAIL("a damaged session file was read");
            } catch (const Error& e) {
                QVERIFY2(QString::fromUtf8(e.what()).contains(where), e.what());
            }
            return;
        }
        const std::vector<SessionDocument> docs = parseSessionJson(json, where);
        QCOMPARE(docs.size(), size_t{1});
        QCOMPARE(docs[0].pages.size(), size_t{1});
        const BlockResult& block = docs[0].pages[0].result.blocks.at(0);
        QCOMPARE(block.content, QStringLiteral("t"));
        QCOMPARE(block.table.has_value(), keepsTable);
    }
};

QTEST_MAIN(TestSessionFile)
#include "test-session-file.moc"
