#include "engine/image/image.h"

#include "engine/common/error.h"

namespace folio {

void check_image_size(int64_t width, int64_t height, std::string_view what) {
    if (width <= 0 || height <= 0) {
        fail(what, ": image size ", width, "x", height, " is empty");
    }
    if (width > kMaxImagePixels / height) {
        fail(what, ": image size ", width, "x", height, " exceeds the limit of ", kMaxImagePixels, " pixels");
    }
}

Image make_image(int width, int height) {
    check_image_size(width, height, "make_image");
    Image image;
    image.width = width;
    image.height = height;
    image.rgb.assign(static_cast<size_t>(image.n_pixels()) * 3, 0);
    return image;
}

void check_image(const Image& image, std::string_view what) {
    check_image_size(image.width, image.height, what);
    const auto expected = static_cast<size_t>(image.n_pixels()) * 3;
    if (image.rgb.size() != expected) {
        fail(what, ": image of ", image.width, "x", image.height, " has ", image.rgb.size(),
             " bytes of pixels, expected ", expected);
    }
}

}  // namespace folio
