// Whitespace as Python's str.isspace() defines it. PaddleOCR's post-processing strips and splits text with
// Python's str methods, so Folio uses the same set of characters where its output must match.
#pragma once

#include <QString>
#include <string>

namespace folio {

bool isPythonSpace(char32_t c);

// str.strip(): the text without leading and trailing whitespace.
QString stripPythonSpace(const QString& text);
std::u32string stripPythonSpace(const std::u32string& text);

}  // namespace folio
