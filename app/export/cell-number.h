// Table cells whose text is plainly a number, so that the XLSX writer stores them as numbers that show as
// written. Anything that could lose meaning as a number stays text: percentages, currencies, a leading '+',
// codes with leading zeros ("007"), spaced or locale-specific digit groups, more digits than a double keeps.
#pragma once

#include <QString>
#include <optional>

namespace folio {

struct CellNumber {
    double value = 0;
    int integerDigits = 0;  // digits before the decimal point as written
    int decimals = 0;       // digits after it
    bool grouped = false;   // thousands separated by commas ("1,234")

    // The spreadsheet number format that shows the value as written; empty for the default (General).
    QString format() const;
};

// The number the text writes: an optional minus sign, digits (plain, or in comma groups of three) without a
// leading zero unless the integer part is 0, and optionally a decimal point and decimals; at most 15
// significant digits. Surrounding spaces are ignored. Anything else gives nothing.
std::optional<CellNumber> parseCellNumber(const QString& text);

}  // namespace folio
