// A dialog that shows a page and lets the user drag a rectangle over it (a rubber band); the part of the page
// inside it is what the chat attaches.
#pragma once

#include <QDialog>
#include <QImage>
#include <QRect>

namespace folio {

class RegionCanvas;

class RegionPicker : public QDialog {
    Q_OBJECT

public:
    explicit RegionPicker(const QImage& page, QWidget* parent = nullptr);

    // The selection in page pixels; empty until the user drags one.
    QRect selection() const;
    void setSelection(const QRect& pageRect);
    // The page inside the selection; null without one.
    QImage selectedImage() const;

    // Asks for a region of the page; a null image when the user cancels.
    static QImage pickRegion(const QImage& page, QWidget* parent = nullptr);

private:
    QImage page_;
    RegionCanvas* canvas_;
};

}  // namespace folio
