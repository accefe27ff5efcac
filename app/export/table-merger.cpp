#include "app/export/table-merger.h"

#include <optional>

#include "app/export/table-continuation.h"
#include "app/pipeline/table-html.h"

namespace folio {
namespace {

const QLatin1String kTable("table");

int firstTable(const PageResult& page) {
    for (size_t i = 0; i < page.blocks.size(); ++i) {
        if (page.blocks[i].label == kTable) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

int lastTable(const PageResult& page) {
    for (size_t i = page.blocks.size(); i > 0; --i) {
        if (page.blocks[i - 1].label == kTable) {
            return static_cast<int>(i - 1);
        }
    }
    return -1;
}

bool onlyBefore(const PageResult& page, int index) {
    for (int i = 0; i < index; ++i) {
        if (!mayPrecedeContinuation(page.blocks[static_cast<size_t>(i)].label)) {
            return false;
        }
    }
    return true;
}

bool onlyAfter(const PageResult& page, int index) {
    for (size_t i = static_cast<size_t>(index) + 1; i < page.blocks.size(); ++i) {
        if (!mayFollowContinuedTable(page.blocks[i].label)) {
            return false;
        }
    }
    return true;
}

}  // namespace

void TableMerger::push(PageResult page) {
    const int base = blocksSeen_;
    blocksSeen_ += static_cast<int>(page.blocks.size());

    // Does the open table continue on this page's first table?
    const int first = firstTable(page);
    std::optional<TableGrid> firstGrid;  // that table as recognised, when it joined the open one
    if (!chain_.empty() && first >= 0 && onlyBefore(page, first)) {
        BlockResult& next = page.blocks[static_cast<size_t>(first)];
        int headerRows = 0;
        if (next.table && continuesTable(lastBox_, lastGrid_, next.box, *next.table, headerRows)) {
            BlockResult& head = held_[chain_.front().page].blocks[chain_.front().block];
            appendTableRows(*head.table, *next.table, headerRows);
            head.content = tableHtml(*head.table, HtmlQuotes::Kept);
            firstGrid = std::move(next.table);
            next.table.reset();
            next.content.clear();
            chain_.push_back({held_.size(), static_cast<size_t>(first), base + first});
        }
    }
    if (!chain_.empty() && !firstGrid) {
        closeChain();
    }
    held_.push_back(std::move(page));
    const PageResult& current = held_.back();

    // May this page's last table continue on the next page?
    const int last = lastTable(current);
    const TableGrid* lastGrid = nullptr;
    if (last >= 0 && onlyAfter(current, last)) {
        if (firstGrid && last == first) {
            lastGrid = &*firstGrid;
        } else if (current.blocks[static_cast<size_t>(last)].table) {
            lastGrid = &*current.blocks[static_cast<size_t>(last)].table;
        }
    }
    if (firstGrid && last == first && lastGrid != nullptr) {
        lastGrid_ = *lastGrid;  // the open table goes on
        lastBox_ = current.blocks[static_cast<size_t>(last)].box;
        return;
    }
    if (firstGrid) {
        closeChain();
    }
    if (lastGrid == nullptr) {
        release(held_.size());
        return;
    }
    release(held_.size() - 1);
    chain_.push_back({0, static_cast<size_t>(last), base + last});
    lastGrid_ = *lastGrid;
    lastBox_ = held_.front().blocks[static_cast<size_t>(last)].box;
}

void TableMerger::finish() {
    closeChain();
    release(held_.size());
}

std::vector<PageResult> TableMerger::takeReady() {
    std::vector<PageResult> pages;
    pages.swap(ready_);
    return pages;
}

void TableMerger::closeChain() {
    // From the last part back: a part with a group passes it to the one before; otherwise both take the
    // earlier part's index in the document.
    for (size_t k = chain_.size(); k > 1; --k) {
        const Part& part = chain_[k - 1];
        const Part& before = chain_[k - 2];
        BlockResult& partBlock = held_[part.page].blocks[part.block];
        BlockResult& beforeBlock = held_[before.page].blocks[before.block];
        if (partBlock.groupId >= 0) {
            beforeBlock.groupId = partBlock.groupId;
        } else {
            beforeBlock.groupId = before.globalId;
            partBlock.groupId = before.globalId;
        }
    }
    chain_.clear();
}

void TableMerger::release(size_t count) {
    for (size_t i = 0; i < count && !held_.empty(); ++i) {
        ready_.push_back(std::move(held_.front()));
        held_.pop_front();
    }
}

}  // namespace folio
