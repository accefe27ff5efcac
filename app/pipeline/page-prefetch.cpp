#include "app/pipeline/page-prefetch.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <utility>

#include "engine/common/error.h"

namespace folio {

PagePrefetcher::PagePrefetcher(QStringList inputs, DocumentOpener opener, Prepare prepare,
                               PrefetchParams params)
    : inputs_(std::move(inputs)), opener_(std::move(opener)), prepare_(std::move(prepare)), params_(params) {
    if (params_.n_threads < 1 || params_.window < 1) {
        fail("page reading needs at least one thread and a window of one page, got ", params_.n_threads,
             " threads and ", params_.window);
    }
    threads_.reserve(static_cast<size_t>(params_.n_threads));
    for (int i = 0; i < params_.n_threads; ++i) {
        threads_.emplace_back([this] { read_pages(); });
    }
}

PagePrefetcher::~PagePrefetcher() {
    stop();
    for (std::thread& thread : threads_) {
        thread.join();
    }
}

int PagePrefetcher::default_threads() {
    return std::clamp(static_cast<int>(std::thread::hardware_concurrency() / 2), 1, 4);
}

void PagePrefetcher::stop() {
    {
        const std::lock_guard lock(mutex_);
        stopped_ = true;
    }
    changed_.notify_all();
}

std::optional<PrefetchedItem> PagePrefetcher::next() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] {
        return stopped_ || ready_.contains(consumed_) || (end_seq_ >= 0 && consumed_ >= end_seq_);
    });
    const auto it = ready_.find(consumed_);
    if (stopped_ || it == ready_.end()) {
        return std::nullopt;
    }
    std::optional<PrefetchedItem> item(std::move(it->second));
    ready_.erase(it);
    ++consumed_;
    lock.unlock();
    changed_.notify_all();
    return item;
}

std::optional<PagePrefetcher::Claim> PagePrefetcher::claim(std::unique_lock<std::mutex>& lock) {
    for (;;) {
        changed_.wait(lock,
                      [&] { return stopped_ || end_seq_ >= 0 || next_seq_ < consumed_ + params_.window; });
        if (stopped_ || end_seq_ >= 0) {
            return std::nullopt;
        }
        if (doc_ == inputs_.size()) {
            end_seq_ = next_seq_;
            changed_.notify_all();
            return std::nullopt;
        }
        if (!doc_opened_) {
            PrefetchedItem item;
            item.kind = PrefetchedItem::Kind::Document;
            item.document = doc_;
            item.path = inputs_[doc_];
            try {
                std::unique_ptr<DocumentInput> document = opener_(item.path);
                item.pageCount = document->pageCount();
                item.selectedCount = document->selectedCount();
                spare_[doc_] = std::move(document);
            } catch (const std::exception& e) {
                item.error = QString::fromUtf8(e.what());
            }
            doc_selected_ = item.error.isEmpty() ? item.selectedCount : 0;
            doc_opened_ = true;
            page_ = 0;
            ready_[next_seq_++] = std::move(item);
            changed_.notify_all();
            continue;
        }
        if (page_ >= doc_selected_) {
            spare_.erase(doc_);  // no page of it is left for a reader to take it
            ++doc_;
            doc_opened_ = false;
            continue;
        }
        return Claim{next_seq_++, doc_, page_++};
    }
}

void PagePrefetcher::read_pages() {
    std::unique_ptr<DocumentInput> document;  // this thread's instance of the document it reads
    int document_index = -1;
    QString open_error;
    for (;;) {
        std::unique_lock lock(mutex_);
        const std::optional<Claim> claimed = claim(lock);
        if (!claimed) {
            return;
        }
        PrefetchedItem item;
        item.kind = PrefetchedItem::Kind::Page;
        item.document = claimed->document;
        item.page = claimed->page;
        item.path = inputs_[claimed->document];
        if (document_index != claimed->document) {
            document.reset();
            open_error.clear();
            document_index = claimed->document;
            if (const auto it = spare_.find(claimed->document); it != spare_.end()) {
                document = std::move(it->second);
                spare_.erase(it);
            } else {
                try {
                    document = opener_(item.path);
                } catch (const std::exception& e) {
                    open_error = QString::fromUtf8(e.what());
                }
            }
        }
        lock.unlock();

        if (document) {
            try {
                item.pageIndex = document->pageIndex(claimed->page);
                item.input = document->page(claimed->page);
                if (prepare_) {
                    const auto start = std::chrono::steady_clock::now();
                    item.prepared = prepare_(item.input);
                    item.prepareMs =
                        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                            .count();
                }
            } catch (const std::exception& e) {
                item.error = QString::fromUtf8(e.what());
            }
        } else {
            item.error = open_error;
        }
        lock.lock();
        ready_[claimed->seq] = std::move(item);
        lock.unlock();
        changed_.notify_all();
    }
}

}  // namespace folio
