// PP-DocLayoutV3's block outlines: a detection's binary mask fitted to a polygon as transformers 5.17's
// PPDocLayoutV3ImageProcessor does it (_extract_polygon_points_by_masks, _mask2polygon,
// extract_custom_vertices), with OpenCV's findContours, contourArea, arcLength, approxPolyDP and an
// INTER_NEAREST resize.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace folio {

using PolygonPoints = std::vector<std::array<float, 2>>;

// Integer points of an OpenCV contour, x then y.
using ContourPoints = std::vector<std::array<int32_t, 2>>;

// extract_custom_vertices: of the polygon's vertices, those whose turn from the previous edge to the next has
// a negative cross product (the convex corners of an outline in OpenCV's contour order), each kept as it is
// or, where the corner's angle is within 1 degree of 45, moved along its bisector by the mean length of its
// two edges. The arithmetic on the integer vectors wraps at 32 bits, as numpy's int32 does.
std::vector<std::array<double, 2>> extract_custom_vertices(std::span<const std::array<int32_t, 2>> polygon,
                                                           double sharp_angle_degrees = 45.0);

// _mask2polygon on a 0/1 mask [height, width] (row-major): the largest external contour (the first of equal
// areas), simplified by approxPolyDP with epsilon 0.004 times its closed length, then
// extract_custom_vertices. nullopt where the mask has no contour.
std::optional<std::vector<std::array<double, 2>>> mask_outline(std::span<const uint8_t> mask, int height,
                                                               int width, double epsilon_ratio = 0.004);

// One detection's polygon as _extract_polygon_points_by_masks makes it. `box` is x1, y1, x2, y2 in page
// pixels; `mask` the detection's thresholded mask [mask_height, mask_width] (0/1) at the model's quarter
// resolution; `scale_x`, `scale_y` the reference's scale_ratio over 4 ((input width / page width) / 4 and the
// same for heights), in float32 as the reference computes them from a tensor of target sizes.
//
// The box is cut to int32 toward zero; a box without width or height, or whose mask crop is empty or all
// zero, or whose outline has fewer than four points, gives its rectangle (x1,y1 x2,y1 x2,y2 x1,y2). Otherwise
// the outline, moved to the box's corner. An empty result stands for the reference's None (no contour after
// the resize). Beyond the reference, so that hostile outputs cannot crash or exhaust memory: a box with a
// coordinate that is not finite or beyond 2^29 gives an empty result, and a box of more than `max_pixels`
// pixels gives its rectangle.
PolygonPoints mask_polygon(const std::array<float, 4>& box, std::span<const uint8_t> mask, int mask_height,
                           int mask_width, float scale_x, float scale_y, int64_t max_pixels);

}  // namespace folio
