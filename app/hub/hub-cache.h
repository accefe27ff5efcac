// The Hugging Face cache as huggingface_hub lays it out, so that Folio and other tools share what either
// downloads:
//
//   ROOT/models--ORG--NAME/blobs/HASH                  file contents, named by sha256 (LFS) or git blob id
//   ROOT/models--ORG--NAME/snapshots/COMMIT/PATH       relative links to ../../blobs/HASH
//   ROOT/models--ORG--NAME/refs/REVISION               the commit a branch or tag pointed to
//   ROOT/models--ORG--NAME/trees/COMMIT.json           the repository's file listing at that commit
//   ROOT/.locks/models--ORG--NAME/HASH.lock            held while a blob is being written
//
// Every write is atomic: files and links are made under a temporary name and renamed into place.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace folio::hub {

// "ORG/NAME" as the Hub allows it: letters, digits, '-', '_', '.', no "--" or "..", no leading or
// trailing '-' or '.', at most 96 characters a part.
bool is_repo_id(std::string_view text);
// Throws folio::Error saying what is wrong with the text as a repository name.
void check_repo_id(std::string_view text);
// 40 lowercase hex digits.
bool is_commit_hash(std::string_view text);
// Throws folio::Error when a repository path could leave its folder (absolute, "..", empty parts).
void check_repo_path(std::string_view path);

// One file of a repository's listing at a commit, as the Hub's tree API gives it.
struct TreeEntry {
    std::string path;
    int64_t size = 0;
    std::string blob_id;  // git oid (sha1)
    std::optional<std::string> lfs_sha256;
    int64_t lfs_size = 0;
    std::optional<std::string> xet_hash;

    // The blob's name in the cache: the LFS sha256, else the git blob id (the Hub's ETag either way).
    const std::string& blob_name() const { return lfs_sha256 ? *lfs_sha256 : blob_id; }
};

// A listing as HubCache::write_tree writes it (trees/COMMIT.json), checked as the Hub's answers are;
// nullopt where it is damaged or of another format version (it is then fetched again).
std::optional<std::vector<TreeEntry>> parse_cached_tree(std::string_view text);

struct CachedSnapshot {
    std::string commit;
    std::vector<std::string> refs;  // branches and tags that point at it
    std::filesystem::path dir;
    int64_t bytes = 0;  // of the files it links, each counted once
    int n_files = 0;
    int n_missing = 0;  // links to blobs that are not there
};

struct CachedRepo {
    std::string repo;
    std::filesystem::path dir;
    std::vector<CachedSnapshot> snapshots;  // the newest first
    int64_t bytes_on_disk = 0;              // of its blobs, partial downloads included
    int n_incomplete = 0;                   // partial downloads waiting to be resumed
};

class HubCache {
public:
    explicit HubCache(std::filesystem::path root) : root_(std::move(root)) {}

    const std::filesystem::path& root() const { return root_; }
    // "models--ORG--NAME".
    static std::string folder_name(std::string_view repo);
    std::filesystem::path repo_dir(std::string_view repo) const;
    std::filesystem::path blob_path(std::string_view repo, std::string_view blob) const;
    std::filesystem::path incomplete_path(std::string_view repo, std::string_view blob) const;
    std::filesystem::path lock_path(std::string_view repo, std::string_view blob) const;
    std::filesystem::path snapshot_dir(std::string_view repo, std::string_view commit) const;
    std::filesystem::path snapshot_file(std::string_view repo, std::string_view commit,
                                        std::string_view path) const;

    // The commit a ref names; nullopt when the ref is not recorded or does not hold a commit hash.
    std::optional<std::string> read_ref(std::string_view repo, std::string_view ref) const;
    void write_ref(std::string_view repo, std::string_view ref, std::string_view commit) const;
    // The commit of a revision (a commit hash, or a ref) whose snapshot folder exists; nullopt otherwise.
    // Without "main" recorded, a repository with a single snapshot resolves "main" to it.
    std::optional<std::string> resolve_revision(std::string_view repo, std::string_view revision) const;

    // The listing saved at a commit; nullopt when there is none or it cannot be read.
    std::optional<std::vector<TreeEntry>> read_tree(std::string_view repo, std::string_view commit) const;
    void write_tree(std::string_view repo, std::string_view commit,
                    const std::vector<TreeEntry>& entries) const;

    // Whether the snapshot holds the file, its link resolving to a blob.
    bool has_file(std::string_view repo, std::string_view commit, std::string_view path) const;
    // Links the snapshot's file to the blob, replacing any link there.
    void link_file(std::string_view repo, std::string_view commit, std::string_view path,
                   std::string_view blob) const;

    // Every repository with at least one snapshot, sorted by name.
    std::vector<CachedRepo> list() const;
    std::optional<CachedRepo> find(std::string_view repo) const;
    // Removes a repository with everything it holds; returns the bytes freed.
    int64_t remove_repo(std::string_view repo) const;
    // Removes one snapshot, the refs to it, its listing and the blobs no other snapshot links; the whole
    // repository when it was the last. Returns the bytes freed.
    int64_t remove_snapshot(std::string_view repo, std::string_view commit) const;

private:
    std::filesystem::path root_;
};

// A whole file's bytes; nullopt when it cannot be read.
std::optional<std::string> read_file(const std::filesystem::path& path);

// Writes a file under a temporary name next to it and renames it into place; throws folio::Error naming
// the file.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

}  // namespace folio::hub
