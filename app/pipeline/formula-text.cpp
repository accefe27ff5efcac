#include "app/pipeline/formula-text.h"

#include <array>
#include <utility>

namespace folio {

QString convertFormulaDelimiters(const QString& text, const QString& label) {
    const bool inlinePair = text.contains(QLatin1String("\\(")) && text.contains(QLatin1String("\\)"));
    const bool displayPair = text.contains(QLatin1String("\\[")) && text.contains(QLatin1String("\\]"));
    if (!inlinePair && !displayPair) {
        return text;
    }
    // Doubled display delimiters collapse to one before the single ones are replaced.
    static constexpr std::array<std::pair<const char*, const char*>, 6> kSteps = {{
        {"\\(", " $ "},
        {"\\)", " $"},
        {"\\[\\[", "\\["},
        {"\\]\\]", "\\]"},
        {"\\[", " $$ "},
        {"\\]", " $$ "},
    }};
    QString out = text;
    out.remove(QLatin1Char('$'));
    for (const auto& [from, to] : kSteps) {
        out.replace(QLatin1String(from), QLatin1String(to));
    }
    if (label == QLatin1String("formula_number")) {
        out.remove(QLatin1Char('$'));
    }
    return out;
}

}  // namespace folio
