// LaTeX formulas as Office Math (OMML, ECMA-376 Part 1 §22.1), the equations Word edits natively: the tree
// latex-math.h reads written as m:oMath through QXmlStreamWriter; inline formulas found in text.
#pragma once

#include <QString>
#include <QXmlStreamWriter>
#include <vector>

namespace folio {

inline constexpr char kOfficeMathNamespace[] = "http://schemas.openxmlformats.org/officeDocument/2006/math";

// Text as XML 1.0 can hold it: no control characters but tabs, no unpaired surrogates or noncharacters.
QString xmlSafeText(const QString& text);

// Writes `latex` (without $ delimiters) as one m:oMath element, its text made XML-safe; the writer must have
// declared the m namespace.
void writeOfficeMath(QXmlStreamWriter& xml, const QString& latex);

// Text with inline formulas: $...$ (the opening $ followed by a non-space, the closing one after a non-space
// and not before a digit, as Pandoc reads them, so that "$5 and $10" stays text) and \(...\).
struct InlineSegment {
    bool math = false;
    QString text;  // the formula's LaTeX without its delimiters, or plain text
};
std::vector<InlineSegment> splitInlineMath(const QString& text);

// The formula's OMML as its tree in a compact form ("f(num(r:a),den(r:b))"), for tests and messages.
QString officeMathOutline(const QString& latex);

}  // namespace folio
