#include "engine/layout/mask-polygon.h"

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "engine/common/error.h"

namespace folio {
namespace {

// numpy's int32 arithmetic: two's complement, wrapping.
int32_t wrap_sub(int32_t a, int32_t b) {
    return static_cast<int32_t>(static_cast<uint32_t>(a) - static_cast<uint32_t>(b));
}
int32_t wrap_mul(int32_t a, int32_t b) {
    return static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
}
int32_t wrap_add(int32_t a, int32_t b) {
    return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

// np.linalg.norm of a 2-vector: the values as float64, sqrt of their dot product.
double norm2(double x, double y) {
    return std::sqrt(x * x + y * y);
}

// Python's round() to an int: halves to even, as nearbyint does in the default rounding mode.
int64_t round_half_even(double v) {
    return static_cast<int64_t>(std::nearbyint(v));
}

bool fits_int32_cut(float v) {
    return std::isfinite(v) && std::fabs(v) <= 536870912.0F;
}

PolygonPoints rectangle(int32_t x_min, int32_t y_min, int32_t x_max, int32_t y_max) {
    auto fx = [](int32_t v) { return static_cast<float>(v); };
    return {{fx(x_min), fx(y_min)}, {fx(x_max), fx(y_min)}, {fx(x_max), fx(y_max)}, {fx(x_min), fx(y_max)}};
}

}  // namespace

std::vector<std::array<double, 2>> extract_custom_vertices(std::span<const std::array<int32_t, 2>> polygon,
                                                           double sharp_angle_degrees) {
    const std::size_t n = polygon.size();
    std::vector<std::array<double, 2>> out;
    for (std::size_t i = 0; i < n; ++i) {
        const auto& prev = polygon[(i + n - 1) % n];
        const auto& cur = polygon[i];
        const auto& next = polygon[(i + 1) % n];
        const std::array<int32_t, 2> v1 = {wrap_sub(prev[0], cur[0]), wrap_sub(prev[1], cur[1])};
        const std::array<int32_t, 2> v2 = {wrap_sub(next[0], cur[0]), wrap_sub(next[1], cur[1])};
        const int32_t cross = wrap_sub(wrap_mul(v1[1], v2[0]), wrap_mul(v1[0], v2[1]));
        if (cross >= 0) {
            continue;
        }
        const double n1 = norm2(v1[0], v1[1]);
        const double n2 = norm2(v2[0], v2[1]);
        const int32_t dot = wrap_add(wrap_mul(v1[0], v2[0]), wrap_mul(v1[1], v2[1]));
        const double angle_cos = std::clamp(static_cast<double>(dot) / (n1 * n2), -1.0, 1.0);
        const double angle = std::acos(angle_cos) * (180.0 / std::numbers::pi);
        if (std::fabs(angle - sharp_angle_degrees) < 1.0) {
            double dx = v1[0] / n1 + v2[0] / n2;
            double dy = v1[1] / n1 + v2[1] / n2;
            const double dn = norm2(dx, dy);
            dx /= dn;
            dy /= dn;
            const double step = (n1 + n2) / 2.0;
            out.push_back({cur[0] + dx * step, cur[1] + dy * step});
        } else {
            out.push_back({static_cast<double>(cur[0]), static_cast<double>(cur[1])});
        }
    }
    return out;
}

std::optional<std::vector<std::array<double, 2>>> mask_outline(std::span<const uint8_t> mask, int height,
                                                               int width, double epsilon_ratio) {
    if (height <= 0 || width <= 0) {
        fail("mask outline of a ", width, "x", height, " mask");
    }
    if (mask.size() != static_cast<std::size_t>(height) * static_cast<std::size_t>(width)) {
        fail("mask outline: ", mask.size(), " values for a ", width, "x", height, " mask");
    }
    // findContours leaves its input alone since OpenCV 3.2; the copy keeps the span const all the same.
    cv::Mat image(height, width, CV_8U);
    std::copy(mask.begin(), mask.end(), image.ptr<uint8_t>());
    std::vector<std::vector<cv::Point>> contours;
    cv::findContours(image, contours, cv::RETR_EXTERNAL, cv::CHAIN_APPROX_SIMPLE);
    if (contours.empty()) {
        return std::nullopt;
    }
    std::size_t largest = 0;
    double largest_area = cv::contourArea(contours[0]);
    for (std::size_t i = 1; i < contours.size(); ++i) {
        const double area = cv::contourArea(contours[i]);
        if (area > largest_area) {
            largest_area = area;
            largest = i;
        }
    }
    const std::vector<cv::Point>& contour = contours[largest];
    const double epsilon = epsilon_ratio * cv::arcLength(contour, true);
    std::vector<cv::Point> approx;
    cv::approxPolyDP(contour, approx, epsilon, true);
    ContourPoints points;
    points.reserve(approx.size());
    for (const cv::Point& p : approx) {
        points.push_back({p.x, p.y});
    }
    return extract_custom_vertices(points);
}

PolygonPoints mask_polygon(const std::array<float, 4>& box, std::span<const uint8_t> mask, int mask_height,
                           int mask_width, float scale_x, float scale_y, int64_t max_pixels) {
    if (mask_height <= 0 || mask_width <= 0 ||
        mask.size() != static_cast<std::size_t>(mask_height) * static_cast<std::size_t>(mask_width)) {
        fail("mask polygon: ", mask.size(), " mask values for ", mask_height, "x", mask_width);
    }
    if (!std::all_of(box.begin(), box.end(), fits_int32_cut)) {
        return {};
    }
    const auto x_min = static_cast<int32_t>(box[0]);
    const auto y_min = static_cast<int32_t>(box[1]);
    const auto x_max = static_cast<int32_t>(box[2]);
    const auto y_max = static_cast<int32_t>(box[3]);
    const int32_t box_w = x_max - x_min;
    const int32_t box_h = y_max - y_min;
    if (box_w <= 0 || box_h <= 0) {
        return rectangle(x_min, y_min, x_max, y_max);
    }

    // The crop at the mask's resolution: float32 products, rounded half to even, clipped to the mask.
    auto cut = [](int32_t v, float scale, int limit) {
        const float scaled = static_cast<float>(v) * scale;
        return std::clamp<int64_t>(round_half_even(static_cast<double>(scaled)), 0, limit);
    };
    const auto x_start = static_cast<int>(cut(x_min, scale_x, mask_width));
    const auto x_end = static_cast<int>(cut(x_max, scale_x, mask_width));
    const auto y_start = static_cast<int>(cut(y_min, scale_y, mask_height));
    const auto y_end = static_cast<int>(cut(y_max, scale_y, mask_height));
    if (x_end <= x_start || y_end <= y_start) {
        return rectangle(x_min, y_min, x_max, y_max);
    }
    const int crop_w = x_end - x_start;
    const int crop_h = y_end - y_start;
    cv::Mat crop(crop_h, crop_w, CV_8U);
    bool any = false;
    for (int y = 0; y < crop_h; ++y) {
        const uint8_t* src = mask.data() + static_cast<std::size_t>(y_start + y) * mask_width + x_start;
        uint8_t* dst = crop.ptr<uint8_t>(y);
        for (int x = 0; x < crop_w; ++x) {
            dst[x] = src[x];
            any = any || src[x] != 0;
        }
    }
    if (!any || static_cast<int64_t>(box_w) * box_h > max_pixels) {
        return rectangle(x_min, y_min, x_max, y_max);
    }

    cv::Mat resized;
    cv::resize(crop, resized, cv::Size(box_w, box_h), 0.0, 0.0, cv::INTER_NEAREST);
    const std::optional<std::vector<std::array<double, 2>>> outline = mask_outline(
        std::span<const uint8_t>(resized.ptr<uint8_t>(), static_cast<std::size_t>(box_w) * box_h), box_h,
        box_w);
    if (!outline) {
        return {};
    }
    if (outline->size() < 4) {
        return rectangle(x_min, y_min, x_max, y_max);
    }
    PolygonPoints polygon;
    polygon.reserve(outline->size());
    for (const auto& p : *outline) {
        polygon.push_back({static_cast<float>(p[0] + x_min), static_cast<float>(p[1] + y_min)});
    }
    return polygon;
}

}  // namespace folio
