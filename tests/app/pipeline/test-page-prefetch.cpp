// PagePrefetcher with fake documents: items in document and page order whatever the threads and window,
// pages read on several threads at once, no more read ahead than the window, errors kept with their document
// or page, the opener never entered twice at once, one document instance used by one thread at a time, and
// stop() ending a wait.
#include <QTest>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "app/pipeline/page-prefetch.h"
#include "engine/common/error.h"

using namespace folio;
using namespace std::chrono_literals;

namespace {

// What the fakes saw, shared by every instance of a run.
struct Seen {
    std::atomic<int> pagesRead{0};
    std::atomic<int> reading{0};  // pages being read right now, over every instance
    std::atomic<int> mostReading{0};
    std::atomic<bool> opening{false};
    std::atomic<int> overlappingOpens{0};
    std::atomic<int> overlappingPageCalls{0};  // two threads in one instance's page() at once
};

// N pages of width 10 + i; `failing` cannot be read.
class FakeDocument final : public DocumentInput {
public:
    FakeDocument(QString path, int n_pages, int failing, std::chrono::milliseconds delay, Seen& seen)
        : path_(std::move(path)), n_pages_(n_pages), failing_(failing), delay_(delay), seen_(seen) {}
    QString path() const override { return path_; }
    int pageCount() const override { return n_pages_ + 1; }  // one page left out by a range
    int selectedCount() const override { return n_pages_; }
    int pageIndex(int i) const override { return i + 1; }
    PageInput page(int i) override {
        if (busy_.exchange(true)) {
            ++seen_.overlappingPageCalls;
        }
        const int now = ++seen_.reading;
        int most = seen_.mostReading.load();
        while (now > most && !seen_.mostReading.compare_exchange_weak(most, now)) {
        }
        std::this_thread::sleep_for(delay_);
        --seen_.reading;
        ++seen_.pagesRead;
        busy_.store(false);
        if (i == failing_) {
            fail(path_.toStdString(), ": page ", i + 1, " is damaged");
        }
        PageInput input;
        input.image = QImage(10 + i, 4, QImage::Format_RGB888);
        input.pageIndex = pageIndex(i);
        return input;
    }

private:
    QString path_;
    int n_pages_;
    int failing_;
    std::chrono::milliseconds delay_;
    Seen& seen_;
    std::atomic<bool> busy_{false};
};

// doc-N: N pages; damaged-N: N pages, the second failing; anything else cannot be opened.
DocumentOpener fakeOpener(Seen& seen, std::chrono::milliseconds delay = 0ms) {
    return [&seen, delay](const QString& path) -> std::unique_ptr<DocumentInput> {
        if (seen.opening.exchange(true)) {
            ++seen.overlappingOpens;
        }
        std::this_thread::sleep_for(1ms);
        seen.opening.store(false);
        const int n = path.section('-', 1).toInt();
        if (path.startsWith(QLatin1String("doc-"))) {
            return std::make_unique<FakeDocument>(path, n, -1, delay, seen);
        }
        if (path.startsWith(QLatin1String("damaged-"))) {
            return std::make_unique<FakeDocument>(path, n, 1, delay, seen);
        }
        fail(path.toStdString(), ": not a PDF");
    };
}

// The page's width as its one prepared value.
std::vector<uint8_t> widthOf(const PageInput& input) {
    return {static_cast<uint8_t>(input.image.width())};
}

}  // namespace

class TestPagePrefetch : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void itemsInOrder_data() {
        QTest::addColumn<int>("threads");
        QTest::addColumn<int>("window");
        QTest::newRow("one thread, one item") << 1 << 1;
        QTest::newRow("two threads, window 3") << 2 << 3;
        QTest::newRow("four threads, window 8") << 4 << 8;
    }
    void itemsInOrder() {
        QFETCH(int, threads);
        QFETCH(int, window);
        Seen seen;
        PagePrefetcher prefetcher({"doc-3", "missing", "doc-0", "damaged-3", "doc-2"}, fakeOpener(seen, 2ms),
                                  widthOf, {threads, window});
        QStringList got;
        while (std::optional<PrefetchedItem> item = prefetcher.next()) {
            if (item->kind == PrefetchedItem::Kind::Document) {
                got << QStringLiteral("%1 #%2 %3/%4%5")
                           .arg(item->path)
                           .arg(item->document)
                           .arg(item->selectedCount)
                           .arg(item->pageCount)
                           .arg(item->error.isEmpty() ? QString() : " error: " + item->error);
                continue;
            }
            QCOMPARE(item->pageIndex, item->page + 1);
            if (!item->error.isEmpty()) {
                got << QStringLiteral("  page %1 error: %2").arg(item->page).arg(item->error);
                continue;
            }
            QCOMPARE(item->input.image.width(), 10 + item->page);
            QCOMPARE(item->prepared, std::vector<uint8_t>{static_cast<uint8_t>(10 + item->page)});
            QVERIFY(item->prepareMs >= 0.0);
            got << QStringLiteral("  page %1").arg(item->page);
        }
        const QStringList expected = {
            "doc-3 #0 3/4",
            "  page 0",
            "  page 1",
            "  page 2",
            "missing #1 0/0 error: missing: not a PDF",
            "doc-0 #2 0/1",
            "damaged-3 #3 3/4",
            "  page 0",
            "  page 1 error: damaged-3: page 2 is damaged",
            "  page 2",
            "doc-2 #4 2/3",
            "  page 0",
            "  page 1",
        };
        QCOMPARE(got, expected);
        QVERIFY(!prefetcher.next());  // and it stays at the end
        QCOMPARE(seen.overlappingOpens.load(), 0);
        QCOMPARE(seen.overlappingPageCalls.load(), 0);
    }

    void pagesReadOnSeveralThreads() {
        Seen seen;
        PagePrefetcher prefetcher({"doc-8"}, fakeOpener(seen, 40ms), {}, {4, 8});
        int pages = 0;
        while (std::optional<PrefetchedItem> item = prefetcher.next()) {
            pages += item->kind == PrefetchedItem::Kind::Page ? 1 : 0;
        }
        QCOMPARE(pages, 8);
        QVERIFY2(seen.mostReading.load() >= 2, "no two pages were read at once");
        QCOMPARE(seen.overlappingPageCalls.load(), 0);
    }

    void readsNoFurtherThanTheWindow() {
        Seen seen;
        PagePrefetcher prefetcher({"doc-10"}, fakeOpener(seen), {}, {3, 4});
        // The document's item and three pages fill the window while nothing is taken.
        QTRY_COMPARE(seen.pagesRead.load(), 3);
        std::this_thread::sleep_for(50ms);
        QCOMPARE(seen.pagesRead.load(), 3);
        QVERIFY(prefetcher.next());  // the document
        QTRY_COMPARE(seen.pagesRead.load(), 4);
        std::this_thread::sleep_for(50ms);
        QCOMPARE(seen.pagesRead.load(), 4);
    }

    void preparationErrorsStayWithTheirPage() {
        Seen seen;
        PagePrefetcher prefetcher({"doc-2"}, fakeOpener(seen),
                                  [](const PageInput& input) -> std::vector<uint8_t> {
                                      if (input.image.width() == 11) {
                                          fail("page too narrow: ", input.image.width());
                                      }
                                      return {1};
                                  },
                                  {2, 4});
        QVERIFY(prefetcher.next());
        const std::optional<PrefetchedItem> first = prefetcher.next();
        const std::optional<PrefetchedItem> second = prefetcher.next();
        QVERIFY(first && second);
        QVERIFY(first->error.isEmpty());
        QCOMPARE(second->error, QStringLiteral("page too narrow: 11"));
        QVERIFY(!prefetcher.next());
    }

    void stopEndsAWait() {
        Seen seen;
        PagePrefetcher prefetcher({"doc-3"}, fakeOpener(seen, 300ms), {}, {1, 2});
        QVERIFY(prefetcher.next());  // the document; its first page takes a while
        std::thread stopper([&] {
            std::this_thread::sleep_for(20ms);
            prefetcher.stop();
        });
        const auto start = std::chrono::steady_clock::now();
        QVERIFY(!prefetcher.next());
        stopper.join();
        QVERIFY(std::chrono::steady_clock::now() - start < 250ms);
    }

    void refusesBadParams() {
        Seen seen;
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, PagePrefetcher({"doc-1"}, fakeOpener(seen), {}, {0, 4}));
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, PagePrefetcher({"doc-1"}, fakeOpener(seen), {}, {2, 0}));
    }
};

QTEST_GUILESS_MAIN(TestPagePrefetch)
#include "test-page-prefetch.moc"
