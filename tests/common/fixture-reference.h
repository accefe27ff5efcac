// Access to the golden fixtures made by tests/fixtures/make_paddleocr_vl_fixtures.py.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/files/safetensors.h"

namespace folio::testing {

// FOLIO_FIXTURES_DIR in the environment overrides the build-time path, for runs on another machine.
inline std::filesystem::path fixtures_dir() {
    const char* dir = std::getenv("FOLIO_FIXTURES_DIR");
    return dir != nullptr && *dir != '\0' ? std::filesystem::path(dir)
                                          : std::filesystem::path(FOLIO_FIXTURES_DIR);
}
inline std::filesystem::path tiny_model_dir() {
    return fixtures_dir() / "paddleocr-vl-tiny";
}

class Reference {
public:
    Reference() : Reference(fixtures_dir() / "reference.safetensors") {}
    explicit Reference(const std::filesystem::path& file) : file_(SafetensorsFile::open(file)) {}
    std::vector<float> f32(const std::string& name) const { return to_f32(file_->get(name)); }
    std::vector<int64_t> i64(const std::string& name) const { return to_i64(file_->get(name)); }
    const std::vector<int64_t>& shape(const std::string& name) const { return file_->get(name).shape; }
    bool has(const std::string& name) const { return file_->find(name) != nullptr; }

private:
    std::unique_ptr<SafetensorsFile> file_;
};

// max |actual - expected| / max |expected|: the relative error the fixtures are held to.
inline double relative_error(const std::vector<float>& actual, const std::vector<float>& expected) {
    EXPECT_EQ(actual.size(), expected.size());
    double max_diff = 0.0, max_ref = 0.0;
    for (size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
        max_diff = std::max(max_diff, std::fabs(static_cast<double>(actual[i]) - expected[i]));
        max_ref = std::max(max_ref, std::fabs(static_cast<double>(expected[i])));
    }
    return max_ref > 0.0 ? max_diff / max_ref : max_diff;
}

}  // namespace folio::testing
