#include "app/export/cell-number.h"

#include <QRegularExpression>

namespace folio {

namespace {

// Digits a double holds exactly enough to show them back.
constexpr int kMaxSignificantDigits = 15;
// Integers longer than this show in scientific notation under the General format.
constexpr int kMaxGeneralIntegerDigits = 11;

}  // namespace

QString CellNumber::format() const {
    const QString fraction =
        decimals > 0 ? QStringLiteral(".") + QString(decimals, QLatin1Char('0')) : QString();
    if (grouped) {
        return QStringLiteral("#,##0") + fraction;
    }
    if (integerDigits == 0) {
        return QStringLiteral("#") + fraction;  // ".5" shows without a leading zero
    }
    if (decimals > 0) {
        return QStringLiteral("0") + fraction;
    }
    return integerDigits > kMaxGeneralIntegerDigits ? QStringLiteral("0") : QString();
}

std::optional<CellNumber> parseCellNumber(const QString& text) {
    static const QRegularExpression number(
        QStringLiteral("^([-\\x{2212}])?(0|[1-9][0-9]*|[1-9][0-9]{0,2}(?:,[0-9]{3})+)?(?:\\.([0-9]+))?$"));
    const QString trimmed = text.trimmed();
    const QRegularExpressionMatch match = number.match(trimmed);
    if (!match.hasMatch()) {
        return std::nullopt;
    }
    QString integer = match.captured(2);
    const QString fraction = match.captured(3);
    if (integer.isEmpty() && fraction.isEmpty()) {
        return std::nullopt;
    }
    CellNumber result;
    result.grouped = integer.contains(QLatin1Char(','));
    integer.remove(QLatin1Char(','));
    result.integerDigits = static_cast<int>(integer.size());
    result.decimals = static_cast<int>(fraction.size());
    QString digits = integer + fraction;
    while (digits.size() > 1 && digits.startsWith(QLatin1Char('0'))) {
        digits.remove(0, 1);
    }
    if (digits.size() > kMaxSignificantDigits) {
        return std::nullopt;
    }
    bool ok = false;
    const QString plain = (integer.isEmpty() ? QStringLiteral("0") : integer) +
                          (fraction.isEmpty() ? QString() : QStringLiteral(".") + fraction);
    result.value = plain.toDouble(&ok);
    if (!ok) {
        return std::nullopt;
    }
    if (match.capturedLength(1) > 0) {
        if (result.value == 0) {
            return std::nullopt;  // "-0" would show as 0
        }
        result.value = -result.value;
    }
    return result;
}

}  // namespace folio
