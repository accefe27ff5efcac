// What the tensor-core convolutions share about their tiles: tiles of 32, 64 or 128 output channels by 128
// positions, four warps across the positions, and for bfloat16 inputs a warp's rows (64 of 128-row tiles, 32
// of lower ones) chosen so that each thread's registers fit 128 and two 256-thread blocks (four of 128) stay
// resident a multiprocessor.
#pragma once

#include <cstdint>
#include <type_traits>

namespace folio::kernels::conv_tiles {

constexpr int kWarpsN = 4;

// The lowest tile height that holds c_out channels.
inline int tile_height(int64_t c_out) {
    return c_out <= 32 ? 32 : c_out <= 64 ? 64 : 128;
}

// f(std::integral_constant<int, tile_m>) for each tile height the kernels are built for.
template <typename F>
auto with_tile_height(int tile_m, F&& f) {
    switch (tile_m) {
        case 32:
            return f(std::integral_constant<int, 32>{});
        case 64:
            return f(std::integral_constant<int, 64>{});
        default:
            return f(std::integral_constant<int, 128>{});
    }
}

__host__ __device__ constexpr int bf16_warp_rows(int tile_m) {
    return tile_m == 128 ? 64 : 32;
}

template <int kTileM>
__host__ __device__ constexpr int bf16_threads() {
    return kTileM / bf16_warp_rows(kTileM) * kWarpsN * 32;
}

template <int kTileM>
__host__ __device__ constexpr int bf16_min_blocks() {
    return bf16_threads<kTileM>() == 256 ? 2 : 4;
}

}  // namespace folio::kernels::conv_tiles
