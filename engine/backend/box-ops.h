// The layout decoder's and reading order's per-box arithmetic, shared by the CPU backend and the CUDA kernels
// (C++17, no dependencies, so that device code can include it): deformable attention's sampling locations,
// RT-DETR's inverse sigmoid and box refinement, and the reading order's relative positions.
#pragma once

#include <math.h>

#ifdef __CUDACC__
#define FOLIO_HOST_DEVICE __host__ __device__
#else
#define FOLIO_HOST_DEVICE
#endif

namespace folio {

// A sampling location along one axis: the box's centre plus the offset over n_points of half its size.
FOLIO_HOST_DEVICE inline float box_sample_location(float centre, float size, float offset, float n_points) {
    return centre + offset / n_points * size * 0.5f;
}

// transformers' inverse_sigmoid with eps 1e-5.
FOLIO_HOST_DEVICE inline float box_inverse_sigmoid(float v) {
    const float x = fminf(fmaxf(v, 0.0f), 1.0f);
    return logf(fmaxf(x, 1e-5f) / fmaxf(1.0f - x, 1e-5f));
}

// sigmoid(delta + inverse_sigmoid(v)).
FOLIO_HOST_DEVICE inline float refined_box_value(float v, float delta) {
    return 1.0f / (1.0f + expf(-(delta + box_inverse_sigmoid(v))));
}

// Box s's position relative to box t, both (cx, cy, w, h) with sizes above 0, scaled, into out[4].
FOLIO_HOST_DEVICE inline void pair_relation(const float* s, const float* t, float scale, float* out) {
    out[0] = logf(fabsf(s[0] - t[0]) / s[2] + 1.0f) * scale;
    out[1] = logf(fabsf(s[1] - t[1]) / s[3] + 1.0f) * scale;
    out[2] = (logf(s[2]) - logf(t[2])) * scale;
    out[3] = (logf(s[3]) - logf(t[3])) * scale;
}

}  // namespace folio

#undef FOLIO_HOST_DEVICE
