// The searchable PDF's text layer: recognised text laid over the part of the page image that shows it, so
// that a viewer's search finds it there and a selection covers it roughly. Lines are wrapped at the largest
// size at which they fit their box, spread over its height and stretched to its width; what pen the painter
// holds decides whether they show.
#pragma once

#include <QFont>
#include <QPolygonF>
#include <QRectF>
#include <QString>
#include <QStringList>
#include <vector>

#include "app/documents/page-result.h"

class QPainter;
class QPaintDevice;

namespace folio {

class TextLayer {
public:
    // Horizontal: lines top to bottom. Vertical: columns of top-to-bottom text, right to left.
    enum class Flow { Horizontal, Vertical };

    // One laid-out line in its box's coordinates (the box's top left at 0,0; for vertical flow, the box
    // turned a quarter clockwise so that its height is the line direction).
    struct Line {
        QString text;
        QRectF rect;
    };

    // Measures text in the fonts the device would use.
    explicit TextLayer(QPaintDevice* device);

    // The lines of paragraphs (each wrapped on its own) fitted into a box of this size.
    std::vector<Line> layout(const QStringList& paragraphs, const QSizeF& box) const;

    void drawParagraphs(QPainter& painter, const QStringList& paragraphs, const QRectF& box,
                        Flow flow = Flow::Horizontal) const;
    // One line over a quadrilateral given from its top left clockwise: along its edges when they lie within a
    // couple of degrees of a right angle, else straight over its bounding box, since viewers break up text
    // set at other angles.
    void drawLine(QPainter& painter, const QString& text, const QPolygonF& quad) const;
    // A table's cells over the table's box: columns as wide as their text asks, rows of equal height.
    void drawTable(QPainter& painter, const TableGrid& table, const QRectF& box) const;

private:
    struct Wrapped {
        QString text;
        qreal width = 0;             // at the reference size
        bool lastOfSeveral = false;  // the last line of a paragraph that wrapped
    };

    std::vector<Wrapped> wrap(const QStringList& paragraphs, qreal width) const;
    qreal naturalWidth(const QString& text) const;
    void drawLines(QPainter& painter, const std::vector<Line>& lines) const;

    QPaintDevice* m_device;
    QFont m_font;  // at the reference size
    qreal m_ascent = 0;
    qreal m_lineHeight = 0;
};

}  // namespace folio
