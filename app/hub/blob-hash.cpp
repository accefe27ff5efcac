#include "app/hub/blob-hash.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "engine/common/error.h"

namespace folio::hub {

namespace {

bool is_lower_hex(std::string_view text) {
    return std::all_of(text.begin(), text.end(),
                       [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

std::optional<BlobHashKind> blob_hash_kind(std::string_view name) {
    if (!is_lower_hex(name)) {
        return std::nullopt;
    }
    if (name.size() == 64) {
        return BlobHashKind::Sha256;
    }
    if (name.size() == 40) {
        return BlobHashKind::GitSha1;
    }
    return std::nullopt;
}

struct BlobHasher::State {
    EVP_MD_CTX* context = nullptr;
};

BlobHasher::BlobHasher(BlobHashKind kind, int64_t size)
    : kind_(kind), size_(size), state_(std::make_unique<State>()) {
    state_->context = EVP_MD_CTX_new();
    if (!state_->context) {
        fail("cannot create a hash context (out of memory)");
    }
    reset();
}

BlobHasher::~BlobHasher() {
    EVP_MD_CTX_free(state_->context);
}

void BlobHasher::reset() {
    const EVP_MD* digest = kind_ == BlobHashKind::Sha256 ? EVP_sha256() : EVP_sha1();
    if (EVP_DigestInit_ex(state_->context, digest, nullptr) != 1) {
        fail("cannot start a ", kind_ == BlobHashKind::Sha256 ? "sha256" : "sha1", " hash");
    }
    if (kind_ == BlobHashKind::GitSha1) {
        const std::string prefix = "blob " + std::to_string(size_);
        update(prefix.c_str(), prefix.size() + 1);  // with its terminating NUL
    }
}

void BlobHasher::update(const void* data, size_t n) {
    if (n > 0 && EVP_DigestUpdate(state_->context, data, n) != 1) {
        fail("hashing failed");
    }
}

std::string BlobHasher::hex_digest() {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int n = 0;
    if (EVP_DigestFinal_ex(state_->context, digest.data(), &n) != 1) {
        fail("hashing failed");
    }
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    for (unsigned int i = 0; i < n; ++i) {
        hex += kHex[digest[i] >> 4];
        hex += kHex[digest[i] & 0xf];
    }
    reset();
    return hex;
}

std::string hash_file(const std::filesystem::path& path, BlobHashKind kind) {
    std::error_code error;
    const auto size = std::filesystem::file_size(path, error);
    std::ifstream in(path, std::ios::binary);
    if (error || !in) {
        fail(path.string(), ": cannot read: ", error ? error.message() : std::strerror(errno));
    }
    BlobHasher hasher(kind, static_cast<int64_t>(size));
    std::vector<char> buffer(1 << 20);
    while (in) {
        in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        hasher.update(buffer.data(), static_cast<size_t>(in.gcount()));
    }
    if (in.bad()) {
        fail(path.string(), ": read error");
    }
    return hasher.hex_digest();
}

}  // namespace folio::hub
