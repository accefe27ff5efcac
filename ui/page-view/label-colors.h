// The colour each layout label is drawn in, in the page view's boxes and the result view's tags.
#pragma once

#include <QColor>
#include <QString>

namespace folio {

QColor labelColor(const QString& label);
// The label as people read it, in the interface's language: "display_formula" is "Display formula".
QString labelTitle(const QString& label);

}  // namespace folio
