#include "engine/backend/cpu-products.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/backend/quantization.h"

namespace folio::cpu {

namespace {

using f32x4 = float __attribute__((vector_size(16)));

float hsum(f32x4 v) {
    float s = 0.0f;
    for (int i = 0; i < 4; ++i) {
        s += v[i];
    }
    return s;
}

f32x4 load4(const float* p) {
    f32x4 v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}

// Dot products of 4 rows of x with 4 rows of w: the micro-kernel of both products.
void dot_4x4(const float* const* xr, const float* const* wr, int64_t n, float out[4][4]) {
    f32x4 acc[4][4] = {};
    int64_t k = 0;
    for (; k + 4 <= n; k += 4) {
        const f32x4 w0 = load4(wr[0] + k), w1 = load4(wr[1] + k), w2 = load4(wr[2] + k),
                    w3 = load4(wr[3] + k);
        for (int i = 0; i < 4; ++i) {
            const f32x4 xv = load4(xr[i] + k);
            acc[i][0] += xv * w0;
            acc[i][1] += xv * w1;
            acc[i][2] += xv * w2;
            acc[i][3] += xv * w3;
        }
    }
    for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
            float s = hsum(acc[i][j]);
            for (int64_t kk = k; kk < n; ++kk) {
                s += xr[i][kk] * wr[j][kk];
            }
            out[i][j] = s;
        }
    }
}

// Writes the block (rb, cb) of 4x4 dot products into y [n, out], adding the bias where there is one.
void store_4x4(const float acc[4][4], int64_t rb, int64_t cb, int64_t n, int64_t out, const float* bias,
               float* y) {
    for (int i = 0; i < 4 && rb * 4 + i < n; ++i) {
        for (int j = 0; j < 4 && cb * 4 + j < out; ++j) {
            const int64_t col = cb * 4 + j;
            y[(rb * 4 + i) * out + col] = acc[i][j] + (bias ? bias[col] : 0.0f);
        }
    }
}

}  // namespace

void dense_product(ThreadPool& pool, const float* x, const float* w, const float* b, float* y, int64_t n,
                   int64_t in, int64_t out) {
    const int64_t n_row_blocks = (n + 3) / 4, n_col_blocks = (out + 3) / 4;
    pool.parallel_for(n_row_blocks * n_col_blocks, 16, [&](int64_t begin, int64_t end) {
        for (int64_t blk = begin; blk < end; ++blk) {
            const int64_t rb = blk / n_col_blocks, cb = blk % n_col_blocks;
            const float* xr[4];
            const float* wr[4];
            for (int i = 0; i < 4; ++i) {
                xr[i] = x + std::min(rb * 4 + i, n - 1) * in;
                wr[i] = w + std::min(cb * 4 + i, out - 1) * in;
            }
            float acc[4][4];
            dot_4x4(xr, wr, in, acc);
            store_4x4(acc, rb, cb, n, out, b, y);
        }
    });
}

void packed_product(ThreadPool& pool, const float* x, const Weight& w, const float* b, float* y, int64_t n) {
    const int64_t in = w.n_in, out = w.n_out;
    const auto* qd = static_cast<const int8_t*>(w.data->data()) + w.data_offset;
    pool.parallel_for((out + 3) / 4, 4, [&](int64_t begin, int64_t end) {
        std::vector<float> rows(static_cast<size_t>(4 * in));
        for (int64_t cb = begin; cb < end; ++cb) {
            const float* wr[4];
            for (int j = 0; j < 4; ++j) {
                const int64_t r = std::min(cb * 4 + j, out - 1);
                dequantize_row(w.type, qd, w.scales.f32(), in, w.group_size, r, rows.data() + j * in);
                wr[j] = rows.data() + j * in;
            }
            for (int64_t rb = 0; rb < (n + 3) / 4; ++rb) {
                const float* xr[4];
                for (int i = 0; i < 4; ++i) {
                    xr[i] = x + std::min(rb * 4 + i, n - 1) * in;
                }
                float acc[4][4];
                dot_4x4(xr, wr, in, acc);
                store_4x4(acc, rb, cb, n, out, b, y);
            }
        }
    });
}

}  // namespace folio::cpu
