// Fuzzes the readers of the Hub's answers and of the cache's file listings: a revision's commit, a page of a
// repository's files, an error answer's message and a cached listing. Any input either reads into values
// that hold the documented invariants or is refused: a HubError (BadResponse) naming the request for the
// answers, nullopt for a cached listing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/hub/blob-hash.h"
#include "app/hub/hub-api.h"
#include "app/hub/hub-cache.h"
#include "app/hub/hub-client.h"

namespace {

using folio::hub::TreeEntry;

void check(bool condition) {
    if (!condition) {
        std::abort();
    }
}

void check_entries(const std::vector<TreeEntry>& entries) {
    for (const TreeEntry& entry : entries) {
        check(!entry.path.empty() && !entry.path.starts_with("/"));
        check(entry.path != ".." && !entry.path.starts_with("../") &&
              entry.path.find("/../") == std::string::npos);
        check(entry.size >= 0 && entry.lfs_size >= 0);
        check(folio::hub::blob_hash_kind(entry.blob_name()).has_value());
    }
}

void check_refusal(const folio::hub::HubError& e, const std::string& url) {
    check(e.kind() == folio::hub::HubErrorKind::BadResponse);
    check(std::string_view(e.what()).starts_with(url + ": "));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    const std::string url = "https://huggingface.co/api/models/o/n/tree/0123";
    try {
        check(folio::hub::is_commit_hash(folio::hub::parse_revision_commit(body, url)));
    } catch (const folio::hub::HubError& e) {
        check_refusal(e, url);
    }
    try {
        check_entries(folio::hub::parse_tree_page(body, url));
    } catch (const folio::hub::HubError& e) {
        check_refusal(e, url);
    }
    const std::string message = folio::hub::hub_error_message(body);
    check(message.size() <= size);
    if (const std::optional<std::vector<TreeEntry>> listing = folio::hub::parse_cached_tree(body)) {
        check_entries(*listing);
    }
    return 0;
}
