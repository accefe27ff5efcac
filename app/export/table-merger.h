// Joins tables continued across pages while a document's pages stream in (the rules in table-continuation.h).
// A page whose last table may continue is held until the next page shows whether it does; while a table keeps
// continuing, the pages it spans are held with it, since the rows of later pages join the first part. Merged
// rows go to the first part, whose content becomes the merged HTML (written back as PaddleOCR writes a merged
// table: quotes no longer escaped); the parts after it keep no content and no grid. Every part gets one
// group_id: PaddleOCR's merge_tables_across_pages walks the pages from the last, so the parts share the group
// of the second-to-last part's first block index in the document (global), unless the parts had a group
// already. Hold only pages without images: what is held is their text.
#pragma once

#include <deque>
#include <vector>

#include "app/documents/page-result.h"

namespace folio {

class TableMerger {
public:
    // The next page of the document.
    void push(PageResult page);
    // The end of the document: every held page is ready.
    void finish();
    // The pages that no later page can change, in order; each is returned once.
    std::vector<PageResult> takeReady();

private:
    struct Part {
        size_t page = 0;  // index in held_
        size_t block = 0;
        int globalId = 0;
    };

    void closeChain();
    void release(size_t count);

    std::deque<PageResult> held_;
    std::vector<PageResult> ready_;
    std::vector<Part> chain_;  // the open table's parts, first to last; empty when no table may continue
    TableGrid lastGrid_;  // the chain's last part as recognised, which the next page's table must continue
    BlockBox lastBox_;
    int blocksSeen_ = 0;
};

}  // namespace folio
