// The Hub API's answers read from their JSON: a revision's commit, a page of a repository's file listing and
// the message of an error answer. Everything in them is checked as untrusted: an answer that is not what the
// Hub sends becomes a HubError (BadResponse) naming the URL and what is wrong.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "app/hub/hub-cache.h"

namespace folio::hub {

// The "error" string of an error answer's body ({"error": "..."}), or "" where the body has none.
std::string hub_error_message(std::string_view body);

// The commit hash (40 lowercase hex digits) of GET {endpoint}/api/models/{repo}/revision/{revision}'s answer
// {"sha": ...}. `url` names the request in errors.
std::string parse_revision_commit(std::string_view body, const std::string& url);

// The files of one page of GET {endpoint}/api/models/{repo}/tree/{commit}?recursive=true: a JSON array of
// {"type", "path", "size", "oid", "lfs": {"oid", "size"}, "xetHash"}; entries of another type than "file"
// (folders) are skipped. Every file's path stays inside the repository, sizes are non-negative and its blob
// name is a hash.
std::vector<TreeEntry> parse_tree_page(std::string_view body, const std::string& url);

}  // namespace folio::hub
