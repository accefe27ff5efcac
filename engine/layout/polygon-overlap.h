// Areas of polygons and of their intersection, for PaddleOCR-VL-1.5's overlap rule between block outlines
// (PaddleX measures it with shapely).
#pragma once

#include <array>
#include <span>

namespace folio {

// The area a polygon encloses (shoelace formula, either orientation); 0 under three points.
double polygon_area(std::span<const std::array<float, 2>> polygon);

// The area two polygons share. Exact for simple polygons of either orientation: each polygon is the signed
// sum of the triangles its edges make with its first vertex, and the shared area is the signed sum of the
// areas the triangles of one share with those of the other, each a convex clip. For self-intersecting
// outlines this counts each region by the product of its winding numbers, where shapely would first repair
// the outline (buffer(0)); polygons under three points share nothing.
double polygon_intersection_area(std::span<const std::array<float, 2>> a,
                                 std::span<const std::array<float, 2>> b);

}  // namespace folio
