#include "app/pipeline/python-whitespace.h"

namespace folio {

bool isPythonSpace(char32_t c) {
    // Unicode's bidirectional classes WS, B and S and the category Zs, which is what CPython tests.
    if ((c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20)) {
        return true;
    }
    if (c < 0x85) {
        return false;
    }
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::u32string stripPythonSpace(const std::u32string& text) {
    size_t begin = 0;
    size_t end = text.size();
    while (begin < end && isPythonSpace(text[begin])) {
        ++begin;
    }
    while (end > begin && isPythonSpace(text[end - 1])) {
        --end;
    }
    return text.substr(begin, end - begin);
}

QString stripPythonSpace(const QString& text) {
    // Every whitespace character is in the BMP, so UTF-16 units can be tested one by one.
    qsizetype begin = 0;
    qsizetype end = text.size();
    while (begin < end && isPythonSpace(text[begin].unicode())) {
        ++begin;
    }
    while (end > begin && isPythonSpace(text[end - 1].unicode())) {
        --end;
    }
    return text.mid(begin, end - begin);
}

}  // namespace folio
