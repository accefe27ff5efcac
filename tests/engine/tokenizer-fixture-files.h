// The tokenizer fixtures' folders and file reading, shared by the tokenizer tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace folio::tokenizer_test {

namespace fs = std::filesystem;

inline const fs::path kFixtures = FOLIO_FIXTURES_DIR;
inline const fs::path kModelDir = kFixtures / "paddleocr-vl-tiny";
inline const fs::path kTokenizerFixtures = kFixtures.parent_path() / "tokenizers";

inline std::string read_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    EXPECT_TRUE(in) << path;
    std::string bytes(static_cast<size_t>(std::max<std::streamoff>(in.tellg(), 0)), '\0');
    in.seekg(0);
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return bytes;
}

inline void write_bytes(const fs::path& path, std::string_view bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(out) << path;
}

}  // namespace folio::tokenizer_test
