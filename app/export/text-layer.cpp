#include "app/export/text-layer.h"

#include <QFontMetricsF>
#include <QPaintDevice>
#include <QPainter>
#include <QTextLayout>
#include <QTransform>
#include <QtMath>
#include <algorithm>
#include <cmath>

#include "app/export/block-plain-text.h"

namespace folio {

namespace {

// Text is laid out at this size, in the painter's units, and scaled into place.
constexpr qreal kReferenceSize = 100.0;
// Bisection steps of the fitted size: enough for a size within a fraction of a percent.
constexpr int kFitSteps = 18;
// The smallest size tried, as a fraction of the size of one line filling the box.
constexpr qreal kSmallestScale = 1e-3;
// Lines tilted further than this from a right angle are set straight.
constexpr qreal kMaxTilt = 2.0;

qreal length(const QPointF& v) {
    return std::hypot(v.x(), v.y());
}

}  // namespace

TextLayer::TextLayer(QPaintDevice* device) : m_device(device) {
    m_font.setStyleHint(QFont::SansSerif);
    // Ligatures would be written as glyphs that viewers cannot map back to their letters.
    m_font.setStyleStrategy(QFont::PreferNoShaping);
    m_font.setKerning(false);
    m_font.setPointSizeF(kReferenceSize * 72.0 / device->logicalDpiY());
    const QFontMetricsF metrics(m_font, m_device);
    m_ascent = metrics.ascent();
    m_lineHeight = metrics.ascent() + metrics.descent();
}

qreal TextLayer::naturalWidth(const QString& text) const {
    return QFontMetricsF(m_font, m_device).horizontalAdvance(text);
}

std::vector<TextLayer::Wrapped> TextLayer::wrap(const QStringList& paragraphs, qreal width) const {
    std::vector<Wrapped> lines;
    QTextOption option;
    option.setWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
    for (const QString& paragraph : paragraphs) {
        if (paragraph.trimmed().isEmpty()) {
            continue;
        }
        QTextLayout layout(paragraph, m_font, m_device);
        layout.setTextOption(option);
        layout.beginLayout();
        for (QTextLine line = layout.createLine(); line.isValid(); line = layout.createLine()) {
            line.setLineWidth(width);
        }
        layout.endLayout();
        const std::size_t first = lines.size();
        for (int i = 0; i < layout.lineCount(); ++i) {
            const QTextLine line = layout.lineAt(i);
            const QString text = paragraph.mid(line.textStart(), line.textLength()).trimmed();
            if (!text.isEmpty()) {
                lines.push_back({text, naturalWidth(text), false});
            }
        }
        if (lines.size() - first > 1) {
            lines.back().lastOfSeveral = true;
        }
    }
    return lines;
}

std::vector<TextLayer::Line> TextLayer::layout(const QStringList& paragraphs, const QSizeF& box) const {
    if (box.width() <= 0 || box.height() <= 0 || m_lineHeight <= 0) {
        return {};
    }
    const auto fits = [&](const std::vector<Wrapped>& lines, qreal scale) {
        return static_cast<qreal>(lines.size()) * scale * m_lineHeight <= box.height();
    };
    // The largest scale at which the wrapped lines fit the box's height: one line filling it, or found by
    // bisection, since a smaller scale never needs more lines.
    qreal high = box.height() / m_lineHeight;
    std::vector<Wrapped> best = wrap(paragraphs, box.width() / high);
    qreal scale = high;
    if (best.empty()) {
        return {};
    }
    if (!fits(best, high)) {
        qreal low = high * kSmallestScale;
        best = wrap(paragraphs, box.width() / low);
        scale = low;
        if (fits(best, low)) {
            for (int step = 0; step < kFitSteps; ++step) {
                const qreal middle = std::sqrt(low * high);
                std::vector<Wrapped> lines = wrap(paragraphs, box.width() / middle);
                if (fits(lines, middle)) {
                    low = middle;
                    best = std::move(lines);
                } else {
                    high = middle;
                }
            }
            scale = low;
        }
    }
    // Lines share the height; each but a paragraph's last spans the width, as justified text would.
    const qreal pitch = box.height() / static_cast<qreal>(best.size());
    std::vector<Line> lines;
    lines.reserve(best.size());
    for (std::size_t i = 0; i < best.size(); ++i) {
        const Wrapped& line = best[i];
        const qreal width = line.lastOfSeveral ? std::min(line.width * scale, box.width()) : box.width();
        lines.push_back({line.text, QRectF(0, static_cast<qreal>(i) * pitch, width, pitch)});
    }
    return lines;
}

void TextLayer::drawLines(QPainter& painter, const std::vector<Line>& lines) const {
    painter.setFont(m_font);
    for (const Line& line : lines) {
        const qreal natural = naturalWidth(line.text);
        if (natural <= 0 || line.rect.isEmpty()) {
            continue;
        }
        painter.save();
        painter.translate(line.rect.topLeft());
        painter.scale(line.rect.width() / natural, line.rect.height() / m_lineHeight);
        painter.drawText(QPointF(0, m_ascent), line.text);
        painter.restore();
    }
}

void TextLayer::drawParagraphs(QPainter& painter, const QStringList& paragraphs, const QRectF& box,
                               Flow flow) const {
    if (box.isEmpty()) {
        return;
    }
    painter.save();
    QSizeF size = box.size();
    if (flow == Flow::Vertical) {
        painter.translate(box.topRight());
        painter.rotate(90);
        size.transpose();
    } else {
        painter.translate(box.topLeft());
    }
    drawLines(painter, layout(paragraphs, size));
    painter.restore();
}

void TextLayer::drawLine(QPainter& painter, const QString& text, const QPolygonF& quad) const {
    const QString line = text.simplified();
    if (line.isEmpty() || quad.size() < 4) {
        return;
    }
    const QPointF across = quad[1] - quad[0];
    const QPointF down = quad[3] - quad[0];
    const qreal width = length(across);
    const qreal height = length(down);
    const qreal angle = qRadiansToDegrees(std::atan2(across.y(), across.x()));
    const qreal rightAngle = 90.0 * std::round(angle / 90.0);
    painter.save();
    QRectF rect;
    if (std::abs(angle - rightAngle) <= kMaxTilt && width > 0 && height > 0) {
        // The line's own axes: along its top edge and down its left edge.
        painter.setTransform(QTransform(across.x() / width, across.y() / width, down.x() / height,
                                        down.y() / height, quad[0].x(), quad[0].y()),
                             true);
        rect = QRectF(0, 0, width, height);
    } else {
        // Viewers split text set at other angles into pieces: the line goes straight over its bounding box.
        QTransform turn;
        turn.rotate(rightAngle);
        painter.setTransform(turn, true);
        rect = turn.inverted().map(quad).boundingRect();
    }
    drawLines(painter, {{line, rect}});
    painter.restore();
}

void TextLayer::drawTable(QPainter& painter, const TableGrid& table, const QRectF& box) const {
    if (table.nRows <= 0 || table.nColumns <= 0 || box.isEmpty()) {
        return;
    }
    const auto nColumns = static_cast<std::size_t>(table.nColumns);
    std::vector<QStringList> texts;
    texts.reserve(table.cells.size());
    // Each column as wide as its widest single-column cell asks, plus a margin.
    std::vector<qreal> widths(nColumns, 0);
    for (const TableCell& cell : table.cells) {
        texts.push_back(stripMarkup(cell.text).split(QLatin1Char('\n'), Qt::SkipEmptyParts));
        if (cell.columnSpan == 1 && cell.column >= 0 && cell.column < table.nColumns) {
            for (const QString& line : texts.back()) {
                auto& width = widths[static_cast<std::size_t>(cell.column)];
                width = std::max(width, naturalWidth(line));
            }
        }
    }
    std::vector<qreal> edges(nColumns + 1, 0);
    for (std::size_t c = 0; c < nColumns; ++c) {
        edges[c + 1] = edges[c] + widths[c] + m_lineHeight;
    }
    const qreal xScale = box.width() / edges.back();
    const qreal rowHeight = box.height() / table.nRows;
    for (std::size_t i = 0; i < table.cells.size(); ++i) {
        const TableCell& cell = table.cells[i];
        const int first = std::clamp(cell.column, 0, table.nColumns - 1);
        const int last = std::clamp(cell.column + std::max(cell.columnSpan, 1), first + 1, table.nColumns);
        const int top = std::clamp(cell.row, 0, table.nRows - 1);
        const int bottom = std::clamp(cell.row + std::max(cell.rowSpan, 1), top + 1, table.nRows);
        QRectF rect(box.left() + edges[static_cast<std::size_t>(first)] * xScale, box.top() + top * rowHeight,
                    (edges[static_cast<std::size_t>(last)] - edges[static_cast<std::size_t>(first)]) * xScale,
                    (bottom - top) * rowHeight);
        const qreal inset = 0.1 * std::min(rect.width(), rect.height());
        drawParagraphs(painter, texts[i], rect.adjusted(inset, inset, -inset, -inset));
    }
}

}  // namespace folio
