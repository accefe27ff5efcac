// The message of the folio::Error a call throws, for Qt tests that compare error texts.
#pragma once

#include <QString>

#include "engine/common/error.h"

namespace folio::testing {

// Runs `f` and returns the folio::Error's message, or "<no error>" where nothing is thrown.
template <typename F>
QString errorOf(F&& f) {
    try {
        f();
    } catch (const folio::Error& e) {
        return QString::fromStdString(e.what());
    }
    return QStringLiteral("<no error>");
}

}  // namespace folio::testing
