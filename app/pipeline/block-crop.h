// A block's image as recognition sees it, as PaddleOCR-VL's pipeline cuts it from the page: the exact integer
// box slice without padding (a V3 block's outside of its polygon painted white), the formula crop trimmed to
// its ink, and adjacent text blocks stacked into one image (merge_blocks).
#pragma once

#include <QImage>
#include <QPolygonF>
#include <QString>
#include <vector>

#include "app/documents/page-result.h"

namespace folio {

// page[y1:y2, x1:x2] of an RGB888 page, the box clipped to the page; outside a non-empty polygon (page
// coordinates) white. A box with nothing inside the page gives a null image.
QImage cropBlock(const QImage& page, const BlockBox& box, const QPolygonF& polygon = {});

// The smallest part of the image holding all its ink: grey levels stretched to 0..255, pixels at 200 or
// darker count (PaddleX's crop_margin). A uniform image, or one without ink, comes back whole.
QImage cropMargin(const QImage& image);

enum class StackAlign { Left, Right, Center };

// Images one under another on white, each placed by its alignment against the stack above it.
// aligns: one fewer than images.
QImage stackImages(const std::vector<QImage>& images, const std::vector<StackAlign>& aligns);

// What stacking makes of a page's blocks: the blocks in their new order, each group's blocks together. A
// group of several blocks is recognised once, from its first block's stacked image.
struct StackPlan {
    struct Entry {
        int block = 0;             // index into the page's blocks as given
        int group = -1;            // the group's first block (index as given), -1 for a block on its own
        std::vector<int> members;  // the first block of a group: every block of the group, in order
        std::vector<StackAlign> aligns;  // the first block of a group: how each next member is placed
    };
    std::vector<Entry> entries;
};

// merge_blocks over blocks in reading order: text blocks side by side (a gap under 30% of the wider) or
// one under the other (a gap under half the taller, aligned on exactly one side within 5 px, their joint box
// touching a block that is never stacked) join the group of the text block before them; a group whose
// stacked image would be 3 times as tall as wide or more stays apart. Blocks that cannot be stacked keep
// their place, those inside a group's span after the group. `widths`/`heights`: each block's crop size.
StackPlan planStacks(const std::vector<QString>& labels, const std::vector<BlockBox>& boxes,
                     const std::vector<bool>& stackableBlocks, const std::vector<QSize>& cropSizes);

}  // namespace folio
