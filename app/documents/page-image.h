// Rendered pages to the engine's images and back: QImage rows are padded to 4 bytes, folio::Image rows are
// tightly packed RGB.
#pragma once

#include <QImage>

#include "engine/image/image.h"

namespace folio {

// The image as folio::Image, in one copy for RGB888 (one block when its rows are already packed); other
// formats are converted to RGB888 first. Throws folio::Error for a null image or one over the engine's size
// limits.
Image toEngineImage(const QImage& image);

// A deep copy as QImage RGB888.
QImage toQImage(const Image& image);

}  // namespace folio
