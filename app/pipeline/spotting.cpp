#include "app/pipeline/spotting.h"

#include <QRegularExpression>

namespace folio {

SpottingResult parseSpotting(const QString& answer, int width, int height) {
    static const QRegularExpression kText(QStringLiteral("<\\|TEXT_START\\|>(.*?)<\\|TEXT_END\\|>"),
                                          QRegularExpression::DotMatchesEverythingOption);
    static const QRegularExpression kLocations(QStringLiteral("<\\|LOC_BEGIN\\|>(.*?)<\\|LOC_END\\|>"),
                                               QRegularExpression::DotMatchesEverythingOption);
    static const QRegularExpression kLocation(QStringLiteral("<\\|LOC_(\\d+)\\|>"));

    QStringList texts;
    for (auto it = kText.globalMatch(answer); it.hasNext();) {
        texts.push_back(it.next().captured(1));
    }
    QStringList groups;
    for (auto it = kLocations.globalMatch(answer); it.hasNext();) {
        groups.push_back(it.next().captured(1));
    }
    SpottingResult result;
    QStringList kept;
    const qsizetype n = std::min(texts.size(), groups.size());
    for (qsizetype i = 0; i < n; ++i) {
        std::vector<double> values;
        for (auto it = kLocation.globalMatch(groups[i]); it.hasNext() && values.size() < 8;) {
            bool ok = false;
            const double v = it.next().captured(1).toDouble(&ok);
            if (ok) {
                values.push_back(v);
            }
        }
        if (values.size() < 8) {
            continue;
        }
        SpottedLine line;
        line.text = texts[i].trimmed();
        for (size_t p = 0; p < 8; p += 2) {
            line.quad << QPointF(values[p] / 1000.0 * width, values[p + 1] / 1000.0 * height);
        }
        kept.push_back(line.text);
        result.lines.push_back(std::move(line));
    }
    result.text = kept.join(QStringLiteral("\n\n"));
    return result;
}

}  // namespace folio
