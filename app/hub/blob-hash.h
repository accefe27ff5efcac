// The hashes that name blobs in the Hugging Face cache: the sha256 of an LFS file's content, and the git
// blob id (sha1 of "blob SIZE\0" and the content) of a file kept in git. Both are what the Hub publishes
// (the LFS oid, the git oid and the ETag), so a file is checked by hashing it and comparing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace folio::hub {

enum class BlobHashKind { Sha256, GitSha1 };

// A blob name's kind: 64 lowercase hex digits are a sha256, 40 a git blob id; anything else nullopt.
std::optional<BlobHashKind> blob_hash_kind(std::string_view name);

// An incremental hash of one blob. A git blob id needs the content's size up front.
class BlobHasher {
public:
    BlobHasher(BlobHashKind kind, int64_t size);
    ~BlobHasher();
    BlobHasher(const BlobHasher&) = delete;
    BlobHasher& operator=(const BlobHasher&) = delete;

    void update(const void* data, size_t n);
    // The digest as lowercase hex; the hasher starts over afterwards.
    std::string hex_digest();
    // Forgets what was hashed.
    void reset();

    BlobHashKind kind() const { return kind_; }

private:
    struct State;
    BlobHashKind kind_;
    int64_t size_;
    std::unique_ptr<State> state_;
};

// Hashes a file's content as the kind asks; throws folio::Error naming the file when it cannot be read.
std::string hash_file(const std::filesystem::path& path, BlobHashKind kind);

}  // namespace folio::hub
