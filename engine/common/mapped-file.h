// A file's bytes mapped read-only into memory, and a whole file read as text (config.json, tokenizer.json,
// tokenizer.model, ...), each failure naming the file.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace folio {

// A read-only memory mapping of a whole file. A zero-byte file maps to data() == nullptr, size() == 0.
class MappedFile {
public:
    explicit MappedFile(const std::filesystem::path& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const std::byte* data() const { return data_; }
    size_t size() const { return size_; }

private:
    const std::byte* data_ = nullptr;
    size_t size_ = 0;
};

// The whole file's bytes. Throws folio::Error naming the file where it cannot be read.
std::string read_file_text(const std::filesystem::path& path);
// Whether path is a regular file whose bytes hold text (false where there is no such file).
bool file_mentions(const std::filesystem::path& path, std::string_view text);

}  // namespace folio
