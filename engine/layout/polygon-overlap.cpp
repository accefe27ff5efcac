#include "engine/layout/polygon-overlap.h"

#include <cmath>
#include <vector>

namespace folio {
namespace {

using Point = std::array<double, 2>;

double cross(const Point& o, const Point& a, const Point& b) {
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
}

double signed_area(const std::vector<Point>& p) {
    double twice = 0.0;
    for (std::size_t i = 0; i < p.size(); ++i) {
        const Point& a = p[i];
        const Point& b = p[(i + 1) % p.size()];
        twice += a[0] * b[1] - b[0] * a[1];
    }
    return twice / 2.0;
}

// Sutherland-Hodgman: the part of a convex polygon inside a counter-clockwise (positive area) triangle.
std::vector<Point> clip_to_triangle(std::vector<Point> subject, const std::array<Point, 3>& clip) {
    for (std::size_t e = 0; e < 3 && !subject.empty(); ++e) {
        const Point& c0 = clip[e];
        const Point& c1 = clip[(e + 1) % 3];
        std::vector<Point> input;
        input.swap(subject);
        for (std::size_t k = 0; k < input.size(); ++k) {
            const Point& prev = input[(k + input.size() - 1) % input.size()];
            const Point& cur = input[k];
            const double side_prev = cross(c0, c1, prev);
            const double side_cur = cross(c0, c1, cur);
            const bool in_prev = side_prev >= 0.0;
            const bool in_cur = side_cur >= 0.0;
            if (in_prev != in_cur) {
                const double t = side_prev / (side_prev - side_cur);
                subject.push_back({prev[0] + t * (cur[0] - prev[0]), prev[1] + t * (cur[1] - prev[1])});
            }
            if (in_cur) {
                subject.push_back(cur);
            }
        }
    }
    return subject;
}

struct FanTriangle {
    std::array<Point, 3> corners;  // counter-clockwise
    double sign = 0.0;             // +1 or -1: the orientation it had in the fan
};

std::vector<FanTriangle> fan(std::span<const std::array<float, 2>> polygon) {
    std::vector<FanTriangle> out;
    if (polygon.size() < 3) {
        return out;
    }
    const Point o = {polygon[0][0], polygon[0][1]};
    for (std::size_t i = 1; i + 1 < polygon.size(); ++i) {
        Point a = {polygon[i][0], polygon[i][1]};
        Point b = {polygon[i + 1][0], polygon[i + 1][1]};
        const double c = cross(o, a, b);
        if (c == 0.0 || !std::isfinite(c)) {
            continue;
        }
        FanTriangle t;
        t.sign = c > 0.0 ? 1.0 : -1.0;
        if (c < 0.0) {
            std::swap(a, b);
        }
        t.corners = {o, a, b};
        out.push_back(t);
    }
    return out;
}

std::vector<Point> to_points(std::span<const std::array<float, 2>> polygon) {
    std::vector<Point> p;
    p.reserve(polygon.size());
    for (const auto& q : polygon) {
        p.push_back({q[0], q[1]});
    }
    return p;
}

}  // namespace

double polygon_area(std::span<const std::array<float, 2>> polygon) {
    if (polygon.size() < 3) {
        return 0.0;
    }
    return std::fabs(signed_area(to_points(polygon)));
}

double polygon_intersection_area(std::span<const std::array<float, 2>> a,
                                 std::span<const std::array<float, 2>> b) {
    if (a.size() < 3 || b.size() < 3) {
        return 0.0;
    }
    const double area_a = signed_area(to_points(a));
    const double area_b = signed_area(to_points(b));
    if (area_a == 0.0 || area_b == 0.0 || !std::isfinite(area_a) || !std::isfinite(area_b)) {
        return 0.0;
    }
    const std::vector<FanTriangle> fa = fan(a);
    const std::vector<FanTriangle> fb = fan(b);
    double shared = 0.0;
    for (const FanTriangle& ta : fa) {
        for (const FanTriangle& tb : fb) {
            const std::vector<Point> piece =
                clip_to_triangle({ta.corners[0], ta.corners[1], ta.corners[2]}, tb.corners);
            if (piece.size() >= 3) {
                shared += ta.sign * tb.sign * std::fabs(signed_area(piece));
            }
        }
    }
    // Both fans count an inside point with the polygon's winding number: +1 for counter-clockwise, -1 else.
    shared *= (area_a > 0.0 ? 1.0 : -1.0) * (area_b > 0.0 ? 1.0 : -1.0);
    return shared > 0.0 ? shared : 0.0;
}

}  // namespace folio
