// transformers 5.17's post_process_object_detection for PP-DocLayoutV2 and PP-DocLayoutV3, one page at a
// time: sigmoid class scores, the top n_queries of all (query, class) scores, each one's box in page pixels,
// its query's rank in the reading order (_get_order_seqs), the threshold, the kept detections sorted by that
// rank, and for V3 each one's polygon from its mask (mask-polygon.h).
//
// Where torch leaves an order open, this code fixes one: top-k puts equal scores in flat-index order (query,
// then class) and NaN above every number, as torch.topk does in practice on the CPU; the reading-order ranks
// sort equal votes by query index, NaN last; the final sort by rank is stable, so detections of one query
// (one query can win with several classes) stay in score order. The order votes are float32 sums taken row
// after row, as torch's reduction over that dimension does, so they match it to float rounding.
#pragma once

#include <span>
#include <vector>

#include "engine/layout/layout-output.h"

namespace folio {

// The image processor's size, the model's input: 800x800 for both models.
struct LayoutInputSize {
    int width = 800;
    int height = 800;
};

// torch.sigmoid in float32: 1 / (1 + exp(-x)).
float layout_sigmoid(float x);

// Indices of the k largest of `values`, largest first: NaN above every number, equal values in index order.
// Throws folio::Error for k outside 0..values.size().
std::vector<int> layout_top_k(std::span<const float> values, int k);

// _get_order_seqs for one page: order_logits [n, n] to each query's rank in the reading order. Query j's vote
// is sum over i < j of sigmoid(l[i][j]) plus sum over i > j of 1 - sigmoid(l[j][i]), the number of queries
// believed to come before it; ranks follow the votes upward. Throws folio::Error where the sizes disagree.
std::vector<int> layout_order_sequence(std::span<const float> order_logits, int n);

// Every detection whose score is at least `threshold`, in reading order (LayoutDetection::order is the rank),
// boxes in pixels of a page_width x page_height page; with masks (V3) each one's polygon, from its mask's
// sigmoid above `threshold` as the reference does. Throws folio::Error for sizes that disagree with
// n_queries, n_classes and the mask size, and for a page or input size under one pixel; NaN or infinite
// values, empty or reversed boxes and boxes outside the page are taken as they come (NaN scores never pass).
std::vector<LayoutDetection> post_process_layout(const LayoutRawOutput& raw, int page_width, int page_height,
                                                 float threshold, LayoutInputSize input = {});

// post_process_layout without the polygons, which take most of its time: outline_layout_detections adds
// them later to the detections still wanted.
std::vector<LayoutDetection> post_process_layout_boxes(const LayoutRawOutput& raw, int page_width,
                                                       int page_height, float threshold,
                                                       LayoutInputSize input = {});

// Each detection's polygon from its query's mask as post_process_layout makes it (from the query's box in
// page pixels, whatever the detection's box has become since). Detections without a query and raw outputs
// without masks are left as they are.
void outline_layout_detections(const LayoutRawOutput& raw, std::vector<LayoutDetection>& detections,
                               int page_width, int page_height, float threshold, LayoutInputSize input = {});

}  // namespace folio
