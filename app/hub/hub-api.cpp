#include "app/hub/hub-api.h"

#include <nlohmann/json.hpp>
#include <optional>

#include "app/hub/blob-hash.h"
#include "app/hub/hub-client.h"
#include "engine/common/json-reader.h"

namespace folio::hub {

namespace {

using nlohmann::json;

// The answer's JSON; a HubError (BadResponse) where it is not JSON.
json parse_answer(std::string_view body, const std::string& url) {
    std::string problem;
    std::optional<json> value = try_parse_json(body, problem);
    if (!value) {
        throw HubError(HubErrorKind::BadResponse, url + ": the answer is " + problem);
    }
    return std::move(*value);
}

[[noreturn]] void bad_entry(const std::string& url, const json& item, std::string_view what) {
    throw HubError(HubErrorKind::BadResponse, url + ": a file entry the Hub would not send (" +
                                                  std::string(what) + "): " + describe_json(item));
}

const std::string& string_member(const std::string& url, const json& item, const json& object,
                                 const char* key) {
    const auto it = object.find(key);
    if (it == object.end() || !it->is_string()) {
        bad_entry(url, item, std::string("\"") + key + "\" must be a string");
    }
    return it->get_ref<const std::string&>();
}

int64_t size_member(const std::string& url, const json& item, const json& object, const char* key,
                    std::optional<int64_t> fallback) {
    const auto it = object.find(key);
    if (it == object.end() && fallback) {
        return *fallback;
    }
    const std::optional<int64_t> n = it == object.end() ? std::nullopt : json_int64(*it);
    if (!n || *n < 0) {
        bad_entry(url, item, std::string("\"") + key + "\" must be a non-negative integer");
    }
    return *n;
}

}  // namespace

std::string hub_error_message(std::string_view body) {
    // Where the body is not JSON (an HTML error page, say), the status alone is reported.
    std::string problem;
    const std::optional<json> value = try_parse_json(body, problem);
    if (value && value->is_object()) {
        const auto it = value->find("error");
        if (it != value->end() && it->is_string()) {
            return it->get<std::string>();
        }
    }
    return "";
}

std::string parse_revision_commit(std::string_view body, const std::string& url) {
    const json info = parse_answer(body, url);
    const auto sha = info.is_object() ? info.find("sha") : info.end();
    if (!info.is_object() || sha == info.end() || !sha->is_string() ||
        !is_commit_hash(sha->get_ref<const std::string&>())) {
        throw HubError(HubErrorKind::BadResponse, url + ": the answer has no commit hash (\"sha\")");
    }
    return sha->get<std::string>();
}

std::vector<TreeEntry> parse_tree_page(std::string_view body, const std::string& url) {
    const json items = parse_answer(body, url);
    if (!items.is_array()) {
        throw HubError(HubErrorKind::BadResponse, url + ": the answer is not a JSON array of files");
    }
    std::vector<TreeEntry> entries;
    for (const json& item : items) {
        if (!item.is_object()) {
            bad_entry(url, item, "not an object");
        }
        if (string_member(url, item, item, "type") != "file") {
            continue;
        }
        TreeEntry entry;
        entry.path = string_member(url, item, item, "path");
        entry.size = size_member(url, item, item, "size", std::nullopt);
        entry.blob_id = string_member(url, item, item, "oid");
        if (const auto lfs = item.find("lfs"); lfs != item.end() && lfs->is_object()) {
            entry.lfs_sha256 = string_member(url, item, *lfs, "oid");
            entry.lfs_size = size_member(url, item, *lfs, "size", entry.size);
        }
        if (const auto xet = item.find("xetHash"); xet != item.end() && xet->is_string()) {
            entry.xet_hash = xet->get<std::string>();
        }
        try {
            check_repo_path(entry.path);
        } catch (const Error& e) {
            bad_entry(url, item, e.what());
        }
        if (!blob_hash_kind(entry.blob_name())) {
            bad_entry(url, item, "its oid is not a hash");
        }
        entries.push_back(std::move(entry));
    }
    return entries;
}

}  // namespace folio::hub
