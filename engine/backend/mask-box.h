// The box Backend::mask_boxes gives a map, shared by the CPU backend and the CUDA kernel (C++17, no
// dependencies, so that device code can include it).
#pragma once

#include <cstdint>

namespace folio {

// The (cx, cy, w, h) of Backend::mask_boxes from the extent of a map's positive positions, columns x0..x1 and
// rows y0..y1 of an h x w map (x1 < 0: none), written to box[4].  Host and device code share it.
#ifdef __CUDACC__
__host__ __device__
#endif
    inline void
    mask_box_from_extent(int64_t x0, int64_t y0, int64_t x1, int64_t y1, int64_t h, int64_t w, float* box) {
    if (x1 < 0) {
        box[0] = box[1] = box[2] = box[3] = 0.0f;
        return;
    }
    const float nx0 = static_cast<float>(x0) / static_cast<float>(w);
    const float ny0 = static_cast<float>(y0) / static_cast<float>(h);
    const float nx1 = static_cast<float>(x1 + 1) / static_cast<float>(w);
    const float ny1 = static_cast<float>(y1 + 1) / static_cast<float>(h);
    box[0] = (nx0 + nx1) / 2;
    box[1] = (ny0 + ny1) / 2;
    box[2] = nx1 - nx0;
    box[3] = ny1 - ny0;
}

}  // namespace folio
