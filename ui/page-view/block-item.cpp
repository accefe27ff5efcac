#include "ui/page-view/block-item.h"

#include <QCoreApplication>
#include <QFont>
#include <QFontMetricsF>
#include <QPainter>
#include <QStyleOptionGraphicsItem>

#include "ui/page-view/label-colors.h"

namespace folio {

BlockItem::BlockItem(const BlockResult& block, const QRectF& page, QGraphicsItem* parent)
    : QGraphicsItem(parent), page_(page) {
    setFlags(ItemIsSelectable);
    setAcceptHoverEvents(true);
    update(block);
}

void BlockItem::update(const BlockResult& block) {
    QPainterPath outline;
    if (block.polygon.size() >= 3) {
        outline.addPolygon(block.polygon);
        outline.closeSubpath();
    } else {
        outline.addRect(QRectF(block.box.x1, block.box.y1, block.box.width(), block.box.height()));
    }
    if (!page_.isEmpty() && !page_.contains(outline.boundingRect())) {
        QPainterPath page;
        page.addRect(page_);
        outline = outline.intersected(page);
    }
    // Streamed text changes only the tooltip: no repaint then.
    const bool changed = outline != outline_ || label_ != block.label || order_ != block.order;
    if (changed) {
        prepareGeometryChange();
        outline_ = outline;
        label_ = block.label;
        order_ = block.order;
    }
    blockId_ = block.id;
    const auto text = [](const char* source) {
        return QCoreApplication::translate("folio::BlockItem", source);
    };
    QString tip = text(QT_TRANSLATE_NOOP("folio::BlockItem", "<b>%1</b> &nbsp;score %2"))
                      .arg(labelTitle(block.label))
                      .arg(block.score, 0, 'f', 2);
    if (block.order > 0) {
        tip += text(QT_TRANSLATE_NOOP("folio::BlockItem", "<br>reading order %1")).arg(block.order);
    }
    if (!block.task.isEmpty()) {
        tip += text(QT_TRANSLATE_NOOP("folio::BlockItem", "<br>task %1")).arg(block.task.toHtmlEscaped());
    }
    if (!block.error.isEmpty()) {
        tip += QStringLiteral("<br><span style='color:#b91c1c'>%1</span>").arg(block.error.toHtmlEscaped());
    }
    setToolTip(tip);
    if (changed) {
        QGraphicsItem::update();
    }
}

void BlockItem::setStreaming(bool streaming) {
    if (streaming_ != streaming) {
        streaming_ = streaming;
        QGraphicsItem::update();
    }
}

QRectF BlockItem::badgeRect() const {
    const QRectF box = outline_.boundingRect();
    const qreal size = std::clamp(std::min(box.width(), box.height()) * 0.6, 18.0, 34.0);
    const qreal width = size * (order_ >= 10 ? 1.5 : 1.15);
    return QRectF(box.left() - width - 3, box.top(), width, size);  // in the margin, clear of the text
}

QRectF BlockItem::boundingRect() const {
    const double margin = kFoundHalo + 1;
    return outline_.boundingRect().adjusted(-margin, -margin, margin, margin).united(badgeRect());
}

QPainterPath BlockItem::shape() const {
    QPainterPath path = outline_;
    path.addRect(badgeRect());
    return path;
}

void BlockItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* /*option*/, QWidget* /*widget*/) {
    const QColor color = labelColor(label_);
    const bool selected = isSelected();
    QColor fill = color;
    fill.setAlpha(selected ? 70 : (hovered_ ? 45 : (streaming_ ? 34 : 18)));
    QPen pen(color, selected ? 3.0 : 1.6);
    pen.setCosmetic(true);
    if (streaming_ && !selected) {
        pen.setStyle(Qt::DashLine);
    }
    painter->setRenderHint(QPainter::Antialiasing);
    if (found_) {
        // In page pixels, so that it stays within the bounding rectangle at any zoom.
        QPen halo(QColor(0xff, 0xc4, 0x00), 2 * kFoundHalo);
        painter->setPen(halo);
        painter->setBrush(Qt::NoBrush);
        painter->drawPath(outline_);
    }
    painter->setPen(pen);
    painter->setBrush(fill);
    painter->drawPath(outline_);
    if (order_ > 0) {
        const QRectF badge = badgeRect();
        painter->setPen(Qt::NoPen);
        painter->setBrush(color);
        painter->drawRoundedRect(badge, 3, 3);
        QFont font = painter->font();
        font.setPixelSize(static_cast<int>(badge.height() * 0.68));
        font.setBold(true);
        painter->setFont(font);
        painter->setPen(Qt::white);
        painter->drawText(badge, Qt::AlignCenter, QString::number(order_));
    }
}

void BlockItem::setFound(bool found) {
    if (found != found_) {
        found_ = found;
        QGraphicsItem::update();
    }
}

void BlockItem::hoverEnterEvent(QGraphicsSceneHoverEvent* event) {
    hovered_ = true;
    QGraphicsItem::update();
    QGraphicsItem::hoverEnterEvent(event);
}

void BlockItem::hoverLeaveEvent(QGraphicsSceneHoverEvent* event) {
    hovered_ = false;
    QGraphicsItem::update();
    QGraphicsItem::hoverLeaveEvent(event);
}

}  // namespace folio
