// A check for gtest tests of readers and validators: a call must throw folio::Error naming what is wrong.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "engine/common/error.h"

namespace folio::test {

// Runs `action`, which must throw folio::Error with `expected` in its message.
inline void expect_error(const std::function<void()>& action, const std::string& expected) {
    try {
        action();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
            << "message: " << e.what() << "\nexpected to contain: " << expected;
        return;
    }
    ADD_FAILURE() << "no folio::Error thrown; expected one containing: " << expected;
}

}  // namespace folio::test
