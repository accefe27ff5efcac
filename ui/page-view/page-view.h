// A zoomable view of one page of the document model with its layout overlays: a box per block coloured by
// label with its reading-order number, selection, and a mode to draw a new box by hand.
#pragma once

#include <QGraphicsView>
#include <QHash>
#include <QPointer>
#include <QSet>

#include "app/document-model/document-model.h"

class QGraphicsPixmapItem;
class QGraphicsRectItem;

namespace folio {

class BlockItem;

class PageView : public QGraphicsView {
    Q_OBJECT

public:
    explicit PageView(const DocumentModel& model, QWidget* parent = nullptr);

    void showPage(int doc, int page);
    int currentDocument() const { return doc_; }
    int currentPage() const { return page_; }

    // Selects a block (-1: none) and scrolls it into view, without emitting blockClicked.
    void selectBlock(int blockId);
    int selectedBlock() const;
    int blockItemCount() const { return static_cast<int>(items_.size()); }
    BlockItem* blockItem(int blockId) const { return items_.value(blockId, nullptr); }
    // The blocks of the page in view where the find bar's text occurs, outlined; kept for the page as it is
    // built again.
    void setFoundBlocks(const QSet<int>& blockIds);
    // Where a block's badge-free centre is in viewport coordinates (for tests clicking it).
    QPoint blockViewportPoint(int blockId) const;

    double zoom() const { return transform().m11(); }
    void setZoom(double zoom);
    void zoomIn() {
        fitted_ = false;
        setZoom(zoom() * 1.25);
    }
    void zoomOut() {
        fitted_ = false;
        setZoom(zoom() / 1.25);
    }
    // Fits the page's width (the default for a new page).
    void fitWidth();

    // While on, a drag draws a box; regionDrawn gives it in page pixels.
    void setDrawMode(bool on);
    bool drawMode() const { return drawMode_; }

Q_SIGNALS:
    // The user clicked a block (-1: empty space).
    void blockClicked(int blockId);
    void regionDrawn(const QRect& pageRect);
    void zoomChanged(double zoom);
    // Context menu requested over a block, at a global position.
    void blockMenuRequested(int blockId, const QPoint& globalPos);

protected:
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void contextMenuEvent(QContextMenuEvent* event) override;

private:
    void rebuild();
    void updatePixmap();
    void onPageChanged(int doc, int page);
    void onBlockChanged(int doc, int page, int blockId);
    BlockItem* itemAt(const QPoint& viewportPos) const;

    const DocumentModel& model_;
    int doc_ = -1;
    int page_ = -1;
    QGraphicsPixmapItem* pixmap_ = nullptr;
    QGraphicsRectItem* paper_ = nullptr;
    QHash<int, BlockItem*> items_;
    QSet<int> found_;
    bool fitted_ = false;     // the zoom follows the width until the user zooms
    bool fullImage_ = false;  // the pixmap is the page image, not the preview
    qint64 imageKey_ = 0;     // the cache key of the image the pixmap shows
    bool drawMode_ = false;
    QGraphicsRectItem* drawing_ = nullptr;
    QPointF drawStart_;
};

}  // namespace folio
