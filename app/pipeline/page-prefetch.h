// Pages read ahead of the document pipeline: a few threads open the documents, render their pages and run a
// preparation step on each (the layout model's image processor), in parallel, and hand everything out in
// document and page order, so that the reading thread never waits on one page's rendering while the device
// has work to do.
#pragma once

#include <QString>
#include <QStringList>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "app/pipeline/page-input.h"

namespace folio {

// One document opened, or one of its pages read, in the order of the inputs.
struct PrefetchedItem {
    enum class Kind { Document, Page };
    Kind kind = Kind::Document;
    int document = 0;  // index into the inputs
    QString path;
    QString error;  // the document could not be opened, or the page could not be read or prepared
    // A document: its pages in the file and those that follow it as page items.
    int pageCount = 0;
    int selectedCount = 0;
    // A page: the i-th selected page of its document, as rendered and prepared.
    int page = 0;
    int pageIndex = -1;  // as DocumentInput::pageIndex gives it
    PageInput input;
    std::vector<uint8_t> prepared;  // the layout model's input (LayoutPagePreparation)
    double prepareMs = 0;           // the preparation step's time
};

struct PrefetchParams {
    int n_threads = 2;  // reading threads, each with its own instance of the document it reads
    int window = 4;     // items read ahead of the one next() gives, at most
};

class PagePrefetcher {
public:
    // A page's preparation, on the reading threads; may throw (the page then carries the error).
    using Prepare = std::function<std::vector<uint8_t>(const PageInput& input)>;

    // Starts reading. Every call of `opener` happens under one lock, so that it need not be thread-safe.
    PagePrefetcher(QStringList inputs, DocumentOpener opener, Prepare prepare, PrefetchParams params);
    ~PagePrefetcher();  // stop(), then waits for the threads
    PagePrefetcher(const PagePrefetcher&) = delete;
    PagePrefetcher& operator=(const PagePrefetcher&) = delete;

    // The next item in order, once it is ready; nullopt after the last, or once stopped.
    std::optional<PrefetchedItem> next();
    // From any thread: no new page is started and next() gives nullopt.
    void stop();

    // The reading threads a pipeline runs with when told 0: half the cores, one to four.
    static int default_threads();

private:
    void read_pages();
    // Under the lock: the next page to read as (sequence, document, page), opening documents on the way (each
    // as a document item); nullopt when there are no more pages or on stop.
    struct Claim {
        int64_t seq = 0;
        int document = 0;
        int page = 0;
    };
    std::optional<Claim> claim(std::unique_lock<std::mutex>& lock);

    QStringList inputs_;
    DocumentOpener opener_;
    Prepare prepare_;
    PrefetchParams params_;

    std::mutex mutex_;
    std::condition_variable changed_;
    int doc_ = 0;              // the document being claimed from
    bool doc_opened_ = false;  // its document item is out
    int doc_selected_ = 0;
    int page_ = 0;          // its next page to claim
    int64_t next_seq_ = 0;  // sequence of the next item claimed
    int64_t consumed_ = 0;  // sequence of the item next() gives next
    int64_t end_seq_ = -1;  // the sequence after the last item, once known
    bool stopped_ = false;
    std::map<int64_t, PrefetchedItem> ready_;
    std::map<int, std::unique_ptr<DocumentInput>> spare_;  // opened to count pages, for the first reader
    std::vector<std::thread> threads_;
};

}  // namespace folio
