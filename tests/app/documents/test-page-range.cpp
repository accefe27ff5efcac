// PageRange: the ranges users type, parsed or refused with the text and position named, and the pages they
// select from documents of a given length.
#include <QtTest>

#include <string>
#include <vector>

#include "app/documents/page-range.h"
#include "engine/common/error.h"

using folio::PageRange;

Q_DECLARE_METATYPE(std::vector<int>)

namespace {

QString errorOf(const std::string& text) {
    try {
        PageRange::parse(text);
    } catch (const folio::Error& e) {
        return QString::fromStdString(e.what());
    }
    return QStringLiteral("<no error>");
}

std::vector<int> pages(std::initializer_list<int> oneBased) {
    std::vector<int> indices;
    for (const int page : oneBased) {
        indices.push_back(page - 1);
    }
    return indices;
}

}  // namespace

class PageRangeTest : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void selects_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<int>("pageCount");
        QTest::addColumn<std::vector<int>>("expected");
        QTest::addColumn<QString>("normalised");
        QTest::newRow("all") << "all" << 3 << pages({1, 2, 3}) << "all";
        QTest::newRow("ALL with spaces") << "  ALL " << 2 << pages({1, 2}) << "all";
        QTest::newRow("one page") << "2" << 3 << pages({2}) << "2";
        QTest::newRow("the example") << "1-3,5,8-" << 10 << pages({1, 2, 3, 5, 8, 9, 10}) << "1-3,5,8-";
        QTest::newRow("open end to the last page") << "3-" << 5 << pages({3, 4, 5}) << "3-";
        QTest::newRow("open start") << "-2" << 5 << pages({1, 2}) << "1-2";
        QTest::newRow("spaces around parts") << " 1 - 2 , 4 " << 5 << pages({1, 2, 4}) << "1-2,4";
        QTest::newRow("tabs") << "1\t,\t3" << 5 << pages({1, 3}) << "1,3";
        QTest::newRow("overlaps and order merged")
            << "4-6,1,5,2-3" << 6 << pages({1, 2, 3, 4, 5, 6}) << "4-6,1,5,2-3";
        QTest::newRow("single-page span") << "3-3" << 5 << pages({3}) << "3";
        QTest::newRow("leading zeros") << "007" << 8 << pages({7}) << "7";
        QTest::newRow("cut at the last page") << "2-9" << 4 << pages({2, 3, 4}) << "2-9";
        QTest::newRow("part beyond the end skipped") << "1,7" << 4 << pages({1}) << "1,7";
        QTest::newRow("largest number") << "1000000000" << 1000000000 << std::vector<int>{} << "1000000000";
    }

    void selects() {
        QFETCH(QString, text);
        QFETCH(int, pageCount);
        QFETCH(std::vector<int>, expected);
        QFETCH(QString, normalised);
        const PageRange range = PageRange::parse(text.toStdString());
        QCOMPARE(QString::fromStdString(range.toString()), normalised);
        if (pageCount == 1000000000) {
            QCOMPARE(range.spans().front().first, PageRange::kMaxPage);  // parsed, not expanded
            return;
        }
        QCOMPARE(range.select(pageCount, "doc.pdf").pages, expected);
    }

    void rejects_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("message");
        QTest::newRow("empty") << ""
                               << "page range \"\" is empty; expected pages such as \"1-3,5,8-\" or \"all\"";
        QTest::newRow("spaces")
            << "   "
            << "page range \"   \" is empty; expected pages such as \"1-3,5,8-\" or \"all\"";
        QTest::newRow("letter in a span")
            << "2-x"
            << "page range \"2-x\": unexpected 'x' at position 3 (expected \",\" or "
               "\"-\")";
        QTest::newRow("letter first") << "x"
                                      << "page range \"x\": unexpected \"x\" at position 1 (expected a page "
                                         "number or \"all\")";
        QTest::newRow("word") << "pages 1-2"
                              << "page range \"pages 1-2\": unexpected \"pages\" at position 1 "
                                 "(expected a page number or \"all\")";
        QTest::newRow("zero") << "0-3"
                              << "page range \"0-3\": page 0 at position 1: pages are numbered from 1";
        QTest::newRow("zero at the end")
            << "2-00"
            << "page range \"2-00\": page 0 at position 3: pages are numbered from 1";
        QTest::newRow("backwards") << "1,5-3"
                                   << "page range \"1,5-3\": \"5-3\" at position 3 runs backwards";
        QTest::newRow("double comma")
            << "1,,2"
            << "page range \"1,,2\": unexpected ',' at position 3 (expected a page number)";
        QTest::newRow("trailing comma") << "1,"
                                        << "page range \"1,\": expected a page number at the end";
        QTest::newRow("leading comma")
            << ",1"
            << "page range \",1\": unexpected ',' at position 1 (expected a page number)";
        QTest::newRow("dash alone") << "-"
                                    << "page range \"-\": expected a page number at the end";
        QTest::newRow("two dashes")
            << "1--3"
            << "page range \"1--3\": unexpected '-' at position 3 (expected \",\" or \"-\")";
        QTest::newRow("semicolon")
            << "1;2"
            << "page range \"1;2\": unexpected ';' at position 2 (expected \",\" or \"-\")";
        QTest::newRow("space inside a number")
            << "1 2"
            << "page range \"1 2\": unexpected '2' at position 3 (expected \",\" "
               "or \"-\")";
        QTest::newRow("negative")
            << "-3-5"
            << "page range \"-3-5\": unexpected '-' at position 3 (expected \",\" or \"-\")";
        QTest::newRow("all and more")
            << "all,2"
            << "page range \"all,2\": unexpected ',' at position 4 (expected nothing after "
               "\"all\")";
        QTest::newRow("too large")
            << "1-1000000001"
            << "page range \"1-1000000001\": the page number at position 3 is larger than "
               "1000000000";
        QTest::newRow("overflowing")
            << "99999999999999999999"
            << "page range \"99999999999999999999\": the page number at position 1 is larger "
               "than 1000000000";
        QTest::newRow("control byte")
            << QString::fromLatin1("1\x01")
            << "page range \"1\x01\": unexpected byte 0x01 at position 2 (expected \",\" or "
               "\"-\")";
        QTest::newRow("decimal") << "1.5"
                                 << "page range \"1.5\": unexpected '.' at position 2 (expected \",\" or "
                                    "\"-\")";
    }

    void rejects() {
        QFETCH(QString, text);
        QFETCH(QString, message);
        QCOMPARE(errorOf(text.toStdString()), message);
    }

    void rejectsLongText() {
        QCOMPARE(errorOf(std::string(5000, '1')),
                 QStringLiteral("page range of 5000 characters is longer than the limit of 4096"));
        // Within the limit as typed, but not written out: "-9" prints as "1-9", so what it prints would not
        // parse again.
        std::string growing;
        for (int i = 0; i < 1300; ++i) {
            growing += i == 0 ? "-9" : ",-9";
        }
        QCOMPARE(errorOf(growing),
                 QStringLiteral("page range of 3899 characters is 5199 characters written out, "
                                "longer than the limit of 4096"));
        const std::string fits =
            growing.substr(0, 3 * 1000 - 1);  // 1,000 spans: 3,999 characters written out
        QCOMPARE(PageRange::parse(PageRange::parse(fits).toString()).spans().size(), size_t{1000});
    }

    void notesPartsBeyondTheDocument() {
        const PageRange::Selection selection = PageRange::parse("1-3,5,8-,9,4-7").select(6, "scan.pdf");
        QCOMPARE(selection.pages, pages({1, 2, 3, 4, 5, 6}));
        QCOMPARE(selection.notes.size(), size_t{3});
        QCOMPARE(selection.notes[0], std::string("pages \"8-\" are beyond the 6 pages of scan.pdf"));
        QCOMPARE(selection.notes[1], std::string("page \"9\" is beyond the 6 pages of scan.pdf"));
        QCOMPARE(selection.notes[2],
                 std::string("pages \"4-7\" reach beyond the 6 pages of scan.pdf; pages 4-6 taken"));
    }

    void selectingNothingIsAnError() {
        try {
            PageRange::parse("8-, 12").select(6, "scan.pdf");
            QFAIL("no error");
        } catch (const folio::Error& e) {
            QCOMPARE(
                QString::fromStdString(e.what()),
                QStringLiteral("scan.pdf: page range \"8-,12\" selects no page (the document has 6 pages)"));
        }
        try {
            PageRange::parse("2").select(1, "photo.jpg");
            QFAIL("no error");
        } catch (const folio::Error& e) {
            QCOMPARE(QString::fromStdString(e.what()),
                     QStringLiteral("photo.jpg: page range \"2\" selects no page (the document has 1 page)"));
        }
    }

    void defaultIsAll() {
        const PageRange range;
        QVERIFY(range.isAll());
        QCOMPARE(range.select(4, "a.pdf").pages, pages({1, 2, 3, 4}));
        QVERIFY(range.select(4, "a.pdf").notes.empty());
    }

    void hugeSpanCostsOnlyTheDocumentsPages() {
        const PageRange range = PageRange::parse("1-1000000000");
        QCOMPARE(range.select(3, "a.pdf").pages, pages({1, 2, 3}));
        QCOMPARE(range.select(3, "a.pdf").notes.size(), size_t{1});
    }
};

QTEST_GUILESS_MAIN(PageRangeTest)
#include "test-page-range.moc"
