#include "ui/chat/region-picker.h"

#include <QDialogButtonBox>
#include <QGuiApplication>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QRubberBand>
#include <QScreen>
#include <QVBoxLayout>
#include <QtMath>
#include <functional>

namespace folio {

// The page scaled to fit, with a rubber band the user drags.
class RegionCanvas : public QWidget {
public:
    RegionCanvas(const QImage& page, QSize fit, QWidget* parent)
        : QWidget(parent), band_(new QRubberBand(QRubberBand::Rectangle, this)) {
        shown_ = QPixmap::fromImage(page.scaled(fit, Qt::KeepAspectRatio, Qt::SmoothTransformation));
        scale_ = page.width() > 0 ? static_cast<double>(shown_.width()) / page.width() : 1.0;
        pageRect_ = page.rect();
        setFixedSize(shown_.size());
        setCursor(Qt::CrossCursor);
    }

    QRect selection() const { return selection_; }
    void setSelection(const QRect& pageRect) {
        selection_ = pageRect.intersected(pageRect_);
        const QRect shown(QPoint(qRound(selection_.left() * scale_), qRound(selection_.top() * scale_)),
                          QSize(qRound(selection_.width() * scale_), qRound(selection_.height() * scale_)));
        band_->setGeometry(shown);
        band_->setVisible(!selection_.isEmpty());
        if (onChange) {
            onChange();
        }
    }
    std::function<void()> onChange;

protected:
    void paintEvent(QPaintEvent*) override {
        QPainter painter(this);
        painter.drawPixmap(0, 0, shown_);
    }
    void mousePressEvent(QMouseEvent* event) override {
        origin_ = event->position().toPoint();
        band_->setGeometry(QRect(origin_, QSize()));
        band_->show();
    }
    void mouseMoveEvent(QMouseEvent* event) override {
        band_->setGeometry(QRect(origin_, event->position().toPoint()).normalized().intersected(rect()));
    }
    void mouseReleaseEvent(QMouseEvent*) override {
        const QRect shown = band_->geometry();
        const QRect page(
            QPoint(qFloor(shown.left() / scale_), qFloor(shown.top() / scale_)),
            QPoint(qCeil((shown.right() + 1) / scale_) - 1, qCeil((shown.bottom() + 1) / scale_) - 1));
        // A click without a drag selects nothing.
        setSelection(shown.width() < 3 || shown.height() < 3 ? QRect() : page);
    }

private:
    QPixmap shown_;
    double scale_ = 1.0;
    QRect pageRect_;
    QRect selection_;
    QPoint origin_;
    QRubberBand* band_;
};

RegionPicker::RegionPicker(const QImage& page, QWidget* parent) : QDialog(parent), page_(page) {
    setWindowTitle(tr("Select a region"));
    QSize fit(900, 700);
    if (const QScreen* screen = QGuiApplication::primaryScreen()) {
        fit = fit.boundedTo(screen->availableSize() * 0.8);
    }
    canvas_ = new RegionCanvas(page, fit.boundedTo(page.size()), this);
    auto* hint = new QLabel(tr("Drag a rectangle over the part of the page to ask about."), this);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Attach"));
    buttons->button(QDialogButtonBox::Ok)->setEnabled(false);
    canvas_->onChange = [this, buttons] {
        buttons->button(QDialogButtonBox::Ok)->setEnabled(!canvas_->selection().isEmpty());
    };
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(hint);
    layout->addWidget(canvas_, 0, Qt::AlignCenter);
    layout->addWidget(buttons);
}

QRect RegionPicker::selection() const {
    return canvas_->selection();
}

void RegionPicker::setSelection(const QRect& pageRect) {
    canvas_->setSelection(pageRect);
}

QImage RegionPicker::selectedImage() const {
    const QRect r = selection();
    return r.isEmpty() ? QImage() : page_.copy(r);
}

QImage RegionPicker::pickRegion(const QImage& page, QWidget* parent) {
    if (page.isNull()) {
        return {};
    }
    RegionPicker picker(page, parent);
    return picker.exec() == QDialog::Accepted ? picker.selectedImage() : QImage();
}

}  // namespace folio
