#include "app/pipeline/block-crop.h"

#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

#include "engine/common/error.h"

namespace folio {

QImage cropBlock(const QImage& page, const BlockBox& box, const QPolygonF& polygon) {
    const int x1 = std::clamp(box.x1, 0, page.width());
    const int y1 = std::clamp(box.y1, 0, page.height());
    const int x2 = std::clamp(box.x2, 0, page.width());
    const int y2 = std::clamp(box.y2, 0, page.height());
    if (x2 <= x1 || y2 <= y1) {
        return {};
    }
    QImage crop = page.copy(x1, y1, x2 - x1, y2 - y1).convertToFormat(QImage::Format_RGB888);
    if (polygon.size() >= 3) {
        // Everything inside the crop but outside the polygon, filled white without antialiasing.
        QPainterPath outside;
        outside.setFillRule(Qt::OddEvenFill);
        outside.addRect(0, 0, crop.width(), crop.height());
        outside.addPolygon(polygon.translated(-x1, -y1));
        outside.closeSubpath();
        QPainter painter(&crop);
        painter.setRenderHint(QPainter::Antialiasing, false);
        painter.fillPath(outside, Qt::white);
    }
    return crop;
}

QImage cropMargin(const QImage& image) {
    const QImage rgb = image.convertToFormat(QImage::Format_RGB888);
    const int w = rgb.width();
    const int h = rgb.height();
    if (w == 0 || h == 0) {
        return image;
    }
    // Grey levels as OpenCV's BGR-to-grey conversion rounds them (14-bit fixed point).
    std::vector<uint8_t> grey(static_cast<size_t>(w) * static_cast<size_t>(h));
    int lo = 255;
    int hi = 0;
    for (int y = 0; y < h; ++y) {
        const uchar* row = rgb.constScanLine(y);
        for (int x = 0; x < w; ++x) {
            const int r = row[3 * x];
            const int g = row[3 * x + 1];
            const int b = row[3 * x + 2];
            const int v = (r * 4899 + g * 9617 + b * 1868 + 8192) >> 14;
            grey[static_cast<size_t>(y) * static_cast<size_t>(w) + static_cast<size_t>(x)] =
                static_cast<uint8_t>(v);
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    }
    if (lo == hi) {
        return image;
    }
    int left = w;
    int top = h;
    int right = -1;
    int bottom = -1;
    for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
            const int v = grey[static_cast<size_t>(y) * static_cast<size_t>(w) + static_cast<size_t>(x)];
            // Stretched to 0..255 and truncated to 8 bits, as numpy's astype(uint8) does.
            const auto stretched = static_cast<int>(static_cast<double>(v - lo) / (hi - lo) * 255.0);
            if (stretched <= 200) {
                left = std::min(left, x);
                right = std::max(right, x);
                top = std::min(top, y);
                bottom = std::max(bottom, y);
            }
        }
    }
    if (right < 0) {
        return image;
    }
    return image.copy(left, top, right - left + 1, bottom - top + 1);
}

QImage stackImages(const std::vector<QImage>& images, const std::vector<StackAlign>& aligns) {
    if (images.empty()) {
        return {};
    }
    if (aligns.size() + 1 != images.size()) {
        fail("stacking ", images.size(), " images needs ", images.size() - 1, " alignments, got ",
             aligns.size());
    }
    QImage stacked = images.front().convertToFormat(QImage::Format_RGB888);
    for (size_t i = 1; i < images.size(); ++i) {
        const QImage& next = images[i];
        const int w = std::max(stacked.width(), next.width());
        const int h = stacked.height() + next.height();
        QImage canvas(w, h, QImage::Format_RGB888);
        canvas.fill(Qt::white);
        int x_top = 0;
        int x_next = 0;
        switch (aligns[i - 1]) {
            case StackAlign::Center:
                x_top = (w - stacked.width()) / 2;
                x_next = (w - next.width()) / 2;
                break;
            case StackAlign::Right:
                x_top = w - stacked.width();
                x_next = w - next.width();
                break;
            case StackAlign::Left:
                break;
        }
        QPainter painter(&canvas);
        painter.drawImage(x_top, 0, stacked);
        painter.drawImage(x_next, stacked.height(), next);
        painter.end();
        stacked = std::move(canvas);
    }
    return stacked;
}

namespace {

bool aligned(int a, int b) {
    return std::abs(a - b) <= 5;
}

bool overlaps(const BlockBox& a, const BlockBox& b) {
    const int w = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
    const int h = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
    return w > 0 && h > 0;
}

struct Group {
    std::vector<int> members;
    std::vector<StackAlign> aligns;
};

}  // namespace

StackPlan planStacks(const std::vector<QString>& labels, const std::vector<BlockBox>& boxes,
                     const std::vector<bool>& stackableBlocks, const std::vector<QSize>& cropSizes) {
    const size_t n = labels.size();
    if (boxes.size() != n || stackableBlocks.size() != n || cropSizes.size() != n) {
        fail("planStacks: ", n, " labels but ", boxes.size(), " boxes, ", stackableBlocks.size(),
             " flags and ", cropSizes.size(), " sizes");
    }
    const auto touchesUnstackable = [&](int a, int b) {
        const BlockBox& p = boxes[static_cast<size_t>(a)];
        const BlockBox& q = boxes[static_cast<size_t>(b)];
        const BlockBox joint{std::min(p.x1, q.x1), std::min(p.y1, q.y1), std::max(p.x2, q.x2),
                             std::max(p.y2, q.y2)};
        for (size_t i = 0; i < n; ++i) {
            if (static_cast<int>(i) != a && static_cast<int>(i) != b && !stackableBlocks[i] &&
                overlaps(joint, boxes[i])) {
                return true;
            }
        }
        return false;
    };

    std::vector<int> candidates;
    for (size_t i = 0; i < n; ++i) {
        if (stackableBlocks[i]) {
            candidates.push_back(static_cast<int>(i));
        }
    }
    std::vector<Group> groups;
    Group current;
    for (size_t k = 0; k < candidates.size(); ++k) {
        const int index = candidates[k];
        if (current.members.empty()) {
            current.members = {index};
            continue;
        }
        const int prev = candidates[k - 1];
        const BlockBox& b = boxes[static_cast<size_t>(index)];
        const BlockBox& p = boxes[static_cast<size_t>(prev)];
        const bool bothText = labels[static_cast<size_t>(index)] == QLatin1String("text") &&
                              labels[static_cast<size_t>(prev)] == QLatin1String("text");
        const bool columnsOverlap = std::min(b.x2, p.x2) - std::max(b.x1, p.x1) > 0;
        const bool sideBySide = !columnsOverlap && bothText && b.x1 > p.x2 && b.y1 < p.y2 &&
                                (b.x1 - p.x2) < std::max(p.width(), b.width()) * 0.3;
        const bool underneath = columnsOverlap && bothText && b.y2 >= p.y1 &&
                                std::abs(b.y1 - p.y2) < std::max(p.height(), b.height()) * 0.5 &&
                                (aligned(b.x1, p.x1) != aligned(b.x2, p.x2)) &&
                                touchesUnstackable(index, prev);
        if (sideBySide || underneath) {
            StackAlign align = StackAlign::Center;
            if (underneath && aligned(b.x1, p.x1)) {
                align = StackAlign::Left;
            } else if (underneath && aligned(b.x2, p.x2)) {
                align = StackAlign::Right;
            }
            current.members.push_back(index);
            current.aligns.push_back(align);
        } else {
            groups.push_back(std::move(current));
            current = Group{{index}, {}};
        }
    }
    if (!current.members.empty()) {
        groups.push_back(std::move(current));
    }

    StackPlan plan;
    std::set<int> used;
    size_t next_group = 0;  // groups start in increasing block order
    for (int index = 0; index < static_cast<int>(n);) {
        if (next_group < groups.size() && groups[next_group].members.front() == index) {
            const Group& group = groups[next_group++];
            int64_t w = 0;
            int64_t h = 0;
            for (const int m : group.members) {
                w = std::max<int64_t>(w, cropSizes[static_cast<size_t>(m)].width());
                h += cropSizes[static_cast<size_t>(m)].height();
            }
            const double ratio =
                w == 0 ? std::numeric_limits<double>::infinity() : static_cast<double>(h) / w;
            const bool stacked = ratio < 3 && group.members.size() > 1;
            for (size_t j = 0; j < group.members.size(); ++j) {
                StackPlan::Entry entry;
                entry.block = group.members[j];
                if (stacked) {
                    entry.group = group.members.front();
                    if (j == 0) {
                        entry.members = group.members;
                        entry.aligns = group.aligns;
                    }
                }
                plan.entries.push_back(std::move(entry));
                used.insert(group.members[j]);
            }
            const int end = group.members.back();
            for (int inner = index + 1; inner < end; ++inner) {
                if (!stackableBlocks[static_cast<size_t>(inner)]) {
                    plan.entries.push_back({inner, -1, {}, {}});
                    used.insert(inner);
                }
            }
            index = end + 1;
            continue;
        }
        if (!stackableBlocks[static_cast<size_t>(index)] && !used.contains(index)) {
            plan.entries.push_back({index, -1, {}, {}});
            used.insert(index);
        }
        ++index;
    }
    return plan;
}

}  // namespace folio
