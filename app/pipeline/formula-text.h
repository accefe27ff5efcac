// LaTeX delimiters in recognised text turned into Markdown's, as PaddleOCR-VL's pipeline does for every block
// (display_formula, inline_formula, and text, titles or table cells that hold inline formulas): \( \) become
// $ $ and \[ \] become $$ $$.
#pragma once

#include <QString>

namespace folio {

// Where the text holds both \( and \), or both \[ and \]: every '$' already in it is removed, then
// \( -> " $ ", \) -> " $", \[\[ -> \[, \]\] -> \], \[ -> " $$ ", \] -> " $$ ", each over the whole text in
// this order; formula_number blocks then lose every '$'. Other texts are returned unchanged.
QString convertFormulaDelimiters(const QString& text, const QString& label);

}  // namespace folio
