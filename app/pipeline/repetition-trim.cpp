#include "app/pipeline/repetition-trim.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "app/pipeline/python-whitespace.h"

namespace folio {
namespace {

constexpr size_t kSuffixMinUnit = 8;
constexpr size_t kSuffixMinRepeats = 5;
constexpr size_t kSuffixMinLength = 100;  // rule 1 looks at lines longer than this
constexpr size_t kWholeMinLength = 10;    // rule 2 looks at lines longer than this
constexpr size_t kWholeMinRepeats = 10;
constexpr size_t kLineMinCount = 10;
constexpr double kLineShare = 0.8;

// Whether s[from, from + length) equals s[from + period, from + period + length), i.e. the span
// s[from, from + length + period) has the given period.
// Compared from the end, where text that does not repeat differs soonest.
bool hasPeriod(const std::u32string& s, size_t from, size_t length, size_t period) {
    for (size_t k = length; k > 0; --k) {
        if (s[from + k - 1] != s[from + k - 1 + period]) {
            return false;
        }
    }
    return true;
}

// Rule 1's search: the longest unit (from a fifth of the line down to kSuffixMinUnit) whose kSuffixMinRepeats
// copies end the line. Returns the start of the whole run of copies and the covered length, or npos.
struct SuffixRun {
    size_t start = std::u32string::npos;
    size_t unit = 0;
    size_t copies = 0;
};

SuffixRun repeatedSuffix(const std::u32string& s) {
    const size_t n = s.size();
    for (size_t unit = n / kSuffixMinRepeats; unit >= kSuffixMinUnit; --unit) {
        const size_t span = unit * kSuffixMinRepeats;
        if (!hasPeriod(s, n - span, span - unit, unit)) {
            continue;
        }
        size_t copies = kSuffixMinRepeats;
        while ((copies + 1) * unit <= n && hasPeriod(s, n - (copies + 1) * unit, unit, unit)) {
            ++copies;
        }
        return {n - copies * unit, unit, copies};
    }
    return {};
}

// Rule 2's search: the shortest unit, at most half the line, whose copies make the whole line; 0 if none.
size_t wholeLineUnit(const std::u32string& s) {
    const size_t n = s.size();
    for (size_t unit = 1; unit <= n / 2; ++unit) {
        if (n % unit == 0 && hasPeriod(s, 0, n - unit, unit)) {
            return unit;
        }
    }
    return 0;
}

}  // namespace

int repetitionMinLength(const QString& label) {
    return label == QLatin1String("table") ? 5000 : 50;
}

QString trimRepetition(const QString& text, int minLength) {
    const std::u32string content = text.toStdU32String();
    if (content.size() < static_cast<size_t>(std::max(minLength, 0))) {
        return text;
    }
    const std::u32string stripped = stripPythonSpace(content);
    if (stripped.empty()) {
        return text;
    }
    const bool oneLine = stripped.find(U'\n') == std::u32string::npos;

    if (oneLine && stripped.size() > kSuffixMinLength) {
        const SuffixRun run = repeatedSuffix(stripped);
        if (run.start != std::u32string::npos &&
            static_cast<double>(run.unit * run.copies) > static_cast<double>(stripped.size()) * 0.5) {
            return QString::fromStdU32String(stripped.substr(0, run.start));
        }
    }

    if (oneLine && stripped.size() > kWholeMinLength) {
        if (const size_t unit = wholeLineUnit(stripped);
            unit > 0 && stripped.size() / unit >= kWholeMinRepeats) {
            return QString::fromStdU32String(stripped.substr(0, unit));
        }
    }

    // Rule 3 over the non-blank lines of the whole text; among equally frequent lines the first seen counts.
    std::unordered_map<std::u32string, size_t> index;
    std::vector<std::u32string> distinct;
    std::vector<size_t> counts;
    size_t total = 0;
    size_t lineStart = 0;
    while (lineStart <= content.size()) {
        size_t lineEnd = content.find(U'\n', lineStart);
        if (lineEnd == std::u32string::npos) {
            lineEnd = content.size();
        }
        std::u32string line = stripPythonSpace(content.substr(lineStart, lineEnd - lineStart));
        if (!line.empty()) {
            ++total;
            const auto [it, added] = index.emplace(line, distinct.size());
            if (added) {
                distinct.push_back(std::move(line));
                counts.push_back(0);
            }
            ++counts[it->second];
        }
        lineStart = lineEnd + 1;
    }
    if (total < kLineMinCount) {
        return text;
    }
    size_t best = 0;
    for (size_t i = 1; i < counts.size(); ++i) {
        if (counts[i] > counts[best]) {
            best = i;
        }
    }
    if (counts[best] >= kLineMinCount &&
        static_cast<double>(counts[best]) / static_cast<double>(total) >= kLineShare) {
        return QString::fromStdU32String(distinct[best]);
    }
    return text;
}

}  // namespace folio
