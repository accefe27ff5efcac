// One layout block drawn over its page: its box (or V3 polygon) in its label's colour, its reading-order
// number in a badge, a tooltip with the label and score; selectable.
#pragma once

#include <QGraphicsItem>
#include <QPainterPath>

#include "app/documents/page-result.h"

namespace folio {

class BlockItem : public QGraphicsItem {
public:
    // page: the page's rectangle in page pixels; the outline is clipped to it (a box reaching past the page's
    // edge is drawn to the edge). Empty: no clipping.
    explicit BlockItem(const BlockResult& block, const QRectF& page = {}, QGraphicsItem* parent = nullptr);
    QRectF outlineRect() const { return outline_.boundingRect(); }

    static constexpr int kType = UserType + 1;
    // How far the found block's outline reaches past its box, in page pixels.
    static constexpr double kFoundHalo = 5.0;
    int type() const override { return kType; }

    int blockId() const { return blockId_; }
    QString label() const { return label_; }
    // Follows a changed block (label, text state, box).
    void update(const BlockResult& block);
    void setStreaming(bool streaming);
    // The find bar's text occurs in the block: a yellow outline around it.
    void setFound(bool found);
    bool isFound() const { return found_; }

    QRectF boundingRect() const override;
    QPainterPath shape() const override;
    void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

protected:
    void hoverEnterEvent(QGraphicsSceneHoverEvent* event) override;
    void hoverLeaveEvent(QGraphicsSceneHoverEvent* event) override;

private:
    QRectF badgeRect() const;

    int blockId_ = 0;
    QString label_;
    int order_ = 0;
    QPainterPath outline_;
    QRectF page_;
    bool hovered_ = false;
    bool streaming_ = false;
    bool found_ = false;
};

}  // namespace folio
