#include "ui/page-view/page-view.h"

#include <QContextMenuEvent>
#include <QGraphicsPixmapItem>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QMouseEvent>
#include <QScrollBar>
#include <QStyle>
#include <QWheelEvent>
#include <cmath>
#include <memory>

#include "ui/page-view/block-item.h"

namespace folio {

PageView::PageView(const DocumentModel& model, QWidget* parent) : QGraphicsView(parent), model_(model) {
    setScene(new QGraphicsScene(this));
    setRenderHints(QPainter::Antialiasing | QPainter::SmoothPixmapTransform);
    setBackgroundBrush(QColor(0x3a, 0x3f, 0x47));
    setDragMode(QGraphicsView::ScrollHandDrag);
    setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
    setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
    setFrameShape(QFrame::NoFrame);
    connect(&model_, &DocumentModel::pageChanged, this, &PageView::onPageChanged);
    connect(&model_, &DocumentModel::blockChanged, this, &PageView::onBlockChanged);
}

void PageView::showPage(int doc, int page) {
    if (doc == doc_ && page == page_) {
        return;
    }
    doc_ = doc;
    page_ = page;
    fitted_ = true;
    rebuild();
    fitWidth();
    verticalScrollBar()->setValue(verticalScrollBar()->minimum());  // a new page starts at its top
}

void PageView::updatePixmap() {
    if (!model_.hasPage(doc_, page_)) {
        return;
    }
    const PageEntry& page = model_.page(doc_, page_);
    const QSize size = page.size.isValid() ? page.size : QSize(850, 1100);
    const QImage& image = page.result.image.isNull() ? page.preview : page.result.image;
    fullImage_ = !page.result.image.isNull();
    paper_->setRect(0, 0, size.width(), size.height());
    // The same image again (blocks changed, not the page) keeps the pixmap and its scaled cache.
    if (image.cacheKey() == imageKey_ && !image.isNull()) {
        return;
    }
    imageKey_ = image.cacheKey();
    if (image.isNull()) {
        pixmap_->setPixmap(QPixmap());
        return;
    }
    pixmap_->setPixmap(QPixmap::fromImage(image));
    pixmap_->setTransform(QTransform::fromScale(static_cast<double>(size.width()) / image.width(),
                                                static_cast<double>(size.height()) / image.height()));
}

void PageView::setFoundBlocks(const QSet<int>& blockIds) {
    found_ = blockIds;
    for (BlockItem* item : std::as_const(items_)) {
        item->setFound(found_.contains(item->blockId()));
    }
}

void PageView::rebuild() {
    const int selected = selectedBlock();
    QGraphicsScene* s = scene();
    // The block items go; the paper and the page image stay (their scaled cache with them).
    for (BlockItem* item : std::as_const(items_)) {
        const std::unique_ptr<BlockItem> gone(item);  // out of the scene, deleted here
        s->removeItem(item);
    }
    items_.clear();
    if (drawing_ != nullptr) {
        const std::unique_ptr<QGraphicsRectItem> gone(drawing_);
        s->removeItem(drawing_);
        drawing_ = nullptr;
    }
    if (paper_ == nullptr) {
        paper_ = s->addRect(QRectF(), Qt::NoPen, Qt::white);
        pixmap_ = s->addPixmap(QPixmap());
        pixmap_->setTransformationMode(Qt::SmoothTransformation);
        pixmap_->setCacheMode(QGraphicsItem::DeviceCoordinateCache);  // scaled once per zoom, not per repaint
    }
    if (!model_.hasPage(doc_, page_)) {
        paper_->setRect(QRectF());
        pixmap_->setPixmap(QPixmap());
        imageKey_ = 0;
        s->setSceneRect(QRectF());
        return;
    }
    updatePixmap();
    const PageEntry& page = model_.page(doc_, page_);
    for (const BlockResult& block : page.result.blocks) {
        auto* item = new BlockItem(block, paper_->rect());
        item->setZValue(1 + block.id * 1e-4);
        item->setStreaming((page.state == PageState::LaidOut && !block.task.isEmpty()) || block.recognising);
        item->setFound(found_.contains(block.id));
        s->addItem(item);
        items_.insert(block.id, item);
    }
    const QRectF paper = paper_->rect();
    s->setSceneRect(paper.adjusted(-56, -24, 24, 24));
    if (selected >= 0 && items_.contains(selected)) {
        items_.value(selected)->setSelected(true);
    }
}

void PageView::onPageChanged(int doc, int page) {
    if (doc != doc_ || page != page_) {
        return;
    }
    const PageEntry& entry = model_.page(doc, page);
    // A preview arriving after the page image changes nothing; blocks added or removed rebuild the items.
    if (fullImage_ && entry.result.image.isNull() && !entry.preview.isNull() &&
        static_cast<int>(entry.result.blocks.size()) == blockItemCount()) {
        return;
    }
    rebuild();
    if (fitted_) {
        fitWidth();
    }
}

void PageView::onBlockChanged(int doc, int page, int blockId) {
    if (doc != doc_ || page != page_) {
        return;
    }
    const BlockResult* block = model_.block(doc, page, blockId);
    BlockItem* item = items_.value(blockId, nullptr);
    if (block == nullptr || item == nullptr) {
        return;
    }
    item->update(*block);
    const PageEntry& entry = model_.page(doc, page);
    item->setStreaming(entry.state == PageState::LaidOut || block->recognising);
}

void PageView::selectBlock(int blockId) {
    scene()->blockSignals(true);
    scene()->clearSelection();
    scene()->blockSignals(false);
    BlockItem* item = items_.value(blockId, nullptr);
    if (item != nullptr) {
        item->setSelected(true);
        ensureVisible(item, 40, 40);
    }
}

int PageView::selectedBlock() const {
    for (auto it = items_.constBegin(); it != items_.constEnd(); ++it) {
        if (it.value()->isSelected()) {
            return it.key();
        }
    }
    return -1;
}

QPoint PageView::blockViewportPoint(int blockId) const {
    const BlockItem* item = items_.value(blockId, nullptr);
    if (item == nullptr) {
        return {};
    }
    const QRectF box = item->shape().boundingRect();
    return mapFromScene(box.center() + QPointF(box.width() * 0.2, box.height() * 0.2));
}

void PageView::setZoom(double z) {
    z = std::clamp(z, 0.05, 8.0);
    const double factor = z / zoom();
    if (std::abs(factor - 1.0) < 1e-6) {
        return;
    }
    scale(factor, factor);
    Q_EMIT zoomChanged(zoom());
}

void PageView::fitWidth() {
    const QRectF sceneBox = sceneRect();
    if (paper_ == nullptr || sceneBox.width() <= 0) {
        return;
    }
    // The width as if the vertical scroll bar were shown, whether it is or not: a zoom that followed the
    // bar would hide it, widen the view, zoom in, show it again and so on, one queued layout after another.
    const int bar = style()->pixelMetric(QStyle::PM_ScrollBarExtent, nullptr, verticalScrollBar());
    const double available = maximumViewportSize().width() - bar - 2;
    setZoom(available / sceneBox.width());
    fitted_ = true;
}

void PageView::setDrawMode(bool on) {
    drawMode_ = on;
    setDragMode(on ? QGraphicsView::NoDrag : QGraphicsView::ScrollHandDrag);
    viewport()->setCursor(on ? Qt::CrossCursor : Qt::OpenHandCursor);
}

BlockItem* PageView::itemAt(const QPoint& viewportPos) const {
    for (QGraphicsItem* item : items(viewportPos)) {
        if (item->type() == BlockItem::kType) {
            return static_cast<BlockItem*>(item);
        }
    }
    return nullptr;
}

void PageView::mousePressEvent(QMouseEvent* event) {
    if (drawMode_ && event->button() == Qt::LeftButton && paper_ != nullptr) {
        drawStart_ = mapToScene(event->position().toPoint());
        QPen pen(QColor(0xf5, 0x9e, 0x0b), 2, Qt::DashLine);
        pen.setCosmetic(true);
        drawing_ = scene()->addRect(QRectF(drawStart_, drawStart_), pen, QColor(0xf5, 0x9e, 0x0b, 40));
        drawing_->setZValue(10);
        event->accept();
        return;
    }
    if (event->button() == Qt::LeftButton) {
        BlockItem* item = itemAt(event->position().toPoint());
        selectBlock(item != nullptr ? item->blockId() : -1);
        Q_EMIT blockClicked(item != nullptr ? item->blockId() : -1);
        if (item != nullptr) {
            event->accept();
            return;
        }
    }
    QGraphicsView::mousePressEvent(event);
}

void PageView::mouseMoveEvent(QMouseEvent* event) {
    if (drawing_ != nullptr) {
        drawing_->setRect(QRectF(drawStart_, mapToScene(event->position().toPoint())).normalized());
        event->accept();
        return;
    }
    QGraphicsView::mouseMoveEvent(event);
}

void PageView::mouseReleaseEvent(QMouseEvent* event) {
    if (drawing_ != nullptr) {
        const QRectF drawn = drawing_->rect().intersected(paper_->rect());
        // The rectangle stays on the page while the task is chosen (the receiver's menu), then goes.
        const std::unique_ptr<QGraphicsRectItem> done(drawing_);
        drawing_ = nullptr;
        done->setRect(drawn);
        if (drawn.width() >= 4 && drawn.height() >= 4) {
            Q_EMIT regionDrawn(drawn.toAlignedRect());
        }
        scene()->removeItem(done.get());
        event->accept();
        return;
    }
    QGraphicsView::mouseReleaseEvent(event);
}

void PageView::wheelEvent(QWheelEvent* event) {
    if (event->modifiers() & Qt::ControlModifier) {
        const double steps = event->angleDelta().y() / 120.0;
        fitted_ = false;
        setZoom(zoom() * std::pow(1.15, steps));
        event->accept();
        return;
    }
    QGraphicsView::wheelEvent(event);
}

void PageView::resizeEvent(QResizeEvent* event) {
    QGraphicsView::resizeEvent(event);
    if (fitted_) {
        fitWidth();
    }
}

void PageView::contextMenuEvent(QContextMenuEvent* event) {
    BlockItem* item = itemAt(event->pos());
    if (item == nullptr) {
        QGraphicsView::contextMenuEvent(event);
        return;
    }
    selectBlock(item->blockId());
    Q_EMIT blockClicked(item->blockId());
    Q_EMIT blockMenuRequested(item->blockId(), event->globalPos());
}

}  // namespace folio
