// Runaway repetition in a block's recognised text, cut as PaddleOCR-VL's pipeline cuts it
// (truncate_repetitive_content): a long single line ending in one phrase repeated, a line that is one unit
// repeated throughout, or one line making most of many lines. Lengths count Unicode code points, as Python's
// len() does.
#pragma once

#include <QString>

namespace folio {

// Texts shorter than this are left alone: 5000 code points for table blocks, 50 for every other label.
int repetitionMinLength(const QString& label);

// The text with its runaway repetition cut, or the text unchanged:
// 1. a single line (after stripping) longer than 100 that ends in a unit of 8 or more code points repeated 5
// or
//    more times, the repeats making more than half the line: the line before the repeats;
// 2. a single line longer than 10 that is one unit repeated 10 or more times: the unit;
// 3. 10 or more non-blank lines of which one line (stripped) makes 80% or more: that line.
// Texts shorter than minLength code points are returned as they are.
QString trimRepetition(const QString& text, int minLength);

}  // namespace folio
