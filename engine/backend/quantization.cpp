#include "engine/backend/quantization.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/backend/tensor.h"
#include "engine/common/error.h"
#include "engine/common/thread-pool.h"

namespace folio {

namespace {

constexpr float kInt8Max = 127.0f;
constexpr float kInt4Max = 7.0f;
// Weights of at least this many values are quantized on a pool of threads.
constexpr int64_t kParallelValues = int64_t{1} << 22;

// x rounded to the nearest integer, halfway to even, for |x| < 2^22: adding 1.5 · 2^23 leaves no fraction
// bits, so the float addition rounds, and the subtraction is exact. The same as nearbyint in the default
// rounding mode, without a library call a value.
float round_half_even(float x) {
    constexpr float kShift = 12582912.0f;  // 1.5 · 2^23
    return (x + kShift) - kShift;
}

int8_t quantize_value(float w, float inv_scale, float limit) {
    return static_cast<int8_t>(std::clamp(round_half_even(w * inv_scale), -limit, limit));
}

// The largest magnitude of a run of values (0 for none; a NaN is passed over). Eight running maxima, each its
// own chain of dependent instructions, then the largest of them: the same value as one running maximum,
// several times faster.
float max_magnitude(std::span<const float> v) {
    constexpr size_t kChains = 8;
    float chains[kChains] = {};
    size_t i = 0;
    for (; i + kChains <= v.size(); i += kChains) {
        for (size_t j = 0; j < kChains; ++j) {
            chains[j] = std::max(chains[j], std::fabs(v[i + j]));
        }
    }
    float m = 0.0f;
    for (; i < v.size(); ++i) {
        m = std::max(m, std::fabs(v[i]));
    }
    for (const float c : chains) {
        m = std::max(m, c);
    }
    return m;
}

// Scale of a run of weights: its largest magnitude maps to the largest integer.
float scale_of(std::span<const float> w, float limit) {
    return max_magnitude(w) / limit;
}

int64_t packed_bytes(Quantization type, int64_t n_out, int64_t n_in) {
    switch (type) {
        case Quantization::Wint8:
        case Quantization::Fp8:
            return n_out * n_in;
        case Quantization::Wint4:
            return n_out * n_in / 2;
        case Quantization::Bf16:
            return n_out * n_in * 2;
        case Quantization::None:
            break;
    }
    return 0;
}

int64_t n_scales(Quantization type, int64_t n_out, int64_t n_in, int64_t group_size) {
    return type == Quantization::Bf16 ? 0 : n_out * (n_in / group_size);
}

// The scale that maps a largest magnitude to E4M3's largest value; 1 for zeros.
float fp8_scale(float max_abs) {
    return max_abs > 0.0f ? max_abs / kFp8Max : 1.0f;
}

int8_t low_nibble(int8_t byte) {
    return static_cast<int8_t>(static_cast<int8_t>(byte << 4) >> 4);
}

int8_t high_nibble(int8_t byte) {
    return static_cast<int8_t>(byte >> 4);
}

void check_layout(Quantization type, int64_t n_out, int64_t n_in, int64_t group_size) {
    if (n_out <= 0 || n_in <= 0) {
        fail("quantize: empty matrix [", n_out, ", ", n_in, "]");
    }
    if (type == Quantization::Wint4) {
        if (group_size != 64 && group_size != 128) {
            fail("wint4: group size must be 64 or 128, got ", group_size);
        }
        if (n_in % group_size != 0) {
            fail("wint4: ", n_in, " input columns are not a multiple of the group size ", group_size);
        }
    }
}

}  // namespace

Quantization parse_quantization(std::string_view name) {
    if (name.empty() || name == "none") {
        return Quantization::None;
    }
    if (name == "wint8") {
        return Quantization::Wint8;
    }
    if (name == "wint4") {
        return Quantization::Wint4;
    }
    fail("unknown quantization \"", name, "\" (expected none, wint8 or wint4)");
}

const char* quantization_name(Quantization q) {
    switch (q) {
        case Quantization::None:
            return "none";
        case Quantization::Wint8:
            return "wint8";
        case Quantization::Wint4:
            return "wint4";
        case Quantization::Bf16:
            return "bf16";
        case Quantization::Fp8:
            return "fp8";
    }
    return "unknown";
}

QuantizedLayout quantized_layout(Quantization type, int64_t n_out, int64_t n_in, int64_t group_size) {
    if (type == Quantization::None) {
        fail("quantize: no quantization type given");
    }
    check_layout(type, n_out, n_in, group_size);
    QuantizedLayout layout;
    layout.group_size = type == Quantization::Wint4 ? group_size : n_in;
    layout.n_packed_bytes = packed_bytes(type, n_out, n_in);
    layout.n_scales = n_scales(type, n_out, n_in, layout.group_size);
    return layout;
}

QuantizedWeights quantize(std::span<const float> w, int64_t n_out, int64_t n_in, Quantization type,
                          int64_t group_size) {
    const QuantizedLayout layout = quantized_layout(type, n_out, n_in, group_size);
    if (static_cast<int64_t>(w.size()) != n_out * n_in) {
        fail("quantize: ", w.size(), " values for [", n_out, ", ", n_in, "]");
    }
    QuantizedWeights q;
    q.type = type;
    q.n_out = n_out;
    q.n_in = n_in;
    q.group_size = layout.group_size;
    q.q.resize(static_cast<size_t>(layout.n_packed_bytes));
    q.scales.resize(static_cast<size_t>(layout.n_scales));
    const int64_t n_groups = n_in / q.group_size;
    const float limit = type == Quantization::Wint8 ? kInt8Max : kInt4Max;
    // Rows [begin, end), each on its own: the same bytes however the rows are split.
    const auto quantize_rows = [&](int64_t begin, int64_t end) {
        if (type == Quantization::Bf16) {
            for (int64_t i = begin * n_in; i < end * n_in; ++i) {
                const uint16_t h = to_bf16(w[static_cast<size_t>(i)]);
                std::memcpy(q.q.data() + 2 * i, &h, sizeof(h));
            }
            return;
        }
        if (type == Quantization::Fp8) {
            for (int64_t r = begin; r < end; ++r) {
                const auto row = w.subspan(static_cast<size_t>(r * n_in), static_cast<size_t>(n_in));
                const float scale = fp8_scale(max_magnitude(row));
                q.scales[static_cast<size_t>(r)] = scale;
                for (int64_t c = 0; c < n_in; ++c) {
                    q.q[static_cast<size_t>(r * n_in + c)] = static_cast<int8_t>(to_fp8_e4m3(row[c] / scale));
                }
            }
            return;
        }
        std::vector<int8_t> row(static_cast<size_t>(n_in));
        for (int64_t r = begin; r < end; ++r) {
            for (int64_t g = 0; g < n_groups; ++g) {
                const auto group = w.subspan(static_cast<size_t>(r * n_in + g * q.group_size),
                                             static_cast<size_t>(q.group_size));
                const float scale = scale_of(group, limit);
                const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
                q.scales[r * n_groups + g] = scale;
                for (int64_t c = 0; c < q.group_size; ++c) {
                    row[g * q.group_size + c] = quantize_value(group[c], inv, limit);
                }
            }
            if (type == Quantization::Wint8) {
                std::copy(row.begin(), row.end(), q.q.begin() + r * n_in);
            } else {
                for (int64_t c = 0; c < n_in / 2; ++c) {
                    const auto lo = static_cast<uint8_t>(row[2 * c] & 0x0f);
                    const auto hi = static_cast<uint8_t>(row[2 * c + 1] & 0x0f);
                    q.q[r * (n_in / 2) + c] = static_cast<int8_t>(lo | (hi << 4));
                }
            }
        }
    };
    // A checkpoint's large layers on every core: loading quantizes billions of values.
    if (n_out * n_in >= kParallelValues) {
        ThreadPool pool(0);
        pool.parallel_for(n_out, std::max<int64_t>(1, kParallelValues / 16 / n_in), quantize_rows);
    } else {
        quantize_rows(0, n_out);
    }
    return q;
}

void dequantize_row(Quantization type, const int8_t* q, const float* scales, int64_t n_in, int64_t group_size,
                    int64_t r, float* out) {
    const int64_t n_groups = n_in / group_size;
    const float* s = scales + r * n_groups;
    if (type == Quantization::Bf16) {
        const int8_t* qr = q + r * n_in * 2;
        for (int64_t c = 0; c < n_in; ++c) {
            uint16_t h = 0;
            std::memcpy(&h, qr + 2 * c, sizeof(h));
            out[c] = from_bf16(h);
        }
        return;
    }
    if (type == Quantization::Wint8) {
        const int8_t* qr = q + r * n_in;
        for (int64_t c = 0; c < n_in; ++c) {
            out[c] = static_cast<float>(qr[c]) * s[0];
        }
        return;
    }
    if (type == Quantization::Fp8) {
        const int8_t* qr = q + r * n_in;
        for (int64_t c = 0; c < n_in; ++c) {
            out[c] = from_fp8_e4m3(static_cast<uint8_t>(qr[c])) * s[0];
        }
        return;
    }
    const int8_t* qr = q + r * (n_in / 2);
    for (int64_t c = 0; c < n_in / 2; ++c) {
        const float scale = s[(2 * c) / group_size];
        out[2 * c] = static_cast<float>(low_nibble(qr[c])) * scale;
        out[2 * c + 1] = static_cast<float>(high_nibble(qr[c])) * scale;
    }
}

void validate(const QuantizedWeights& w) {
    if (w.type == Quantization::None) {
        fail("quantized weights without a quantization type");
    }
    check_layout(w.type, w.n_out, w.n_in, w.group_size);
    if (w.type != Quantization::Wint4 && w.group_size != w.n_in) {
        fail(quantization_name(w.type), ": group size ", w.group_size, " differs from the row of ", w.n_in);
    }
    const int64_t n_q = packed_bytes(w.type, w.n_out, w.n_in);
    const int64_t n_s = n_scales(w.type, w.n_out, w.n_in, w.group_size);
    if (static_cast<int64_t>(w.q.size()) != n_q || static_cast<int64_t>(w.scales.size()) != n_s) {
        fail(quantization_name(w.type), " [", w.n_out, ", ", w.n_in, "]: ", w.q.size(), " packed bytes and ",
             w.scales.size(), " scales, expected ", n_q, " and ", n_s);
    }
}

std::vector<float> dequantize(const QuantizedWeights& w) {
    validate(w);
    std::vector<float> out(static_cast<size_t>(w.n_out * w.n_in));
    for (int64_t r = 0; r < w.n_out; ++r) {
        dequantize_row(w.type, w.q.data(), w.scales.data(), w.n_in, w.group_size, r, out.data() + r * w.n_in);
    }
    return out;
}

int64_t quantized_bytes(Quantization type, int64_t n_out, int64_t n_in, int64_t group_size) {
    switch (type) {
        case Quantization::None:
            return n_out * n_in * static_cast<int64_t>(sizeof(float));
        case Quantization::Wint8:
        case Quantization::Fp8:
            return n_out * n_in + n_out * static_cast<int64_t>(sizeof(float));
        case Quantization::Wint4:
            return n_out * n_in / 2 + n_out * (n_in / group_size) * static_cast<int64_t>(sizeof(float));
        case Quantization::Bf16:
            return n_out * n_in * 2;
    }
    return 0;
}

uint8_t to_fp8_e4m3(float v) {
    if (std::isnan(v)) {
        return 0x7f;
    }
    const uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
    const float a = std::min(std::fabs(v), kFp8Max);
    constexpr float kMinNormal = 0.015625f;  // 2^-6
    if (a < kMinNormal) {
        // Subnormals are multiples of 2^-9; rounding up to 8 of them gives the smallest normal's bits.
        return static_cast<uint8_t>(sign | static_cast<uint8_t>(std::nearbyint(std::ldexp(a, 9))));
    }
    int e = 0;
    const float f = std::frexp(a, &e);  // a = f 2^e, f in [0.5, 1)
    int exponent = e - 1 + 7;
    auto mantissa = static_cast<int>(std::nearbyint((2.0f * f - 1.0f) * 8.0f));  // exact: 2f - 1 has 24 bits
    if (mantissa == 8) {
        mantissa = 0;
        ++exponent;
    }
    return static_cast<uint8_t>(sign | (exponent << 3) | mantissa);
}

float from_fp8_e4m3(uint8_t bits) {
    const int exponent = (bits >> 3) & 0x0f, mantissa = bits & 0x07;
    const float sign = (bits & 0x80) != 0 ? -1.0f : 1.0f;
    if (exponent == 0x0f && mantissa == 0x07) {
        return std::numeric_limits<float>::quiet_NaN();
    }
    if (exponent == 0) {
        return sign * std::ldexp(static_cast<float>(mantissa), -9);
    }
    return sign * std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
}

void round_rows_to_fp8(std::span<float> x, int64_t row, std::span<float> scales) {
    if (row <= 0 || x.size() % static_cast<size_t>(row) != 0) {
        fail("round_rows_to_fp8: ", x.size(), " values in rows of ", row);
    }
    const auto n_rows = static_cast<int64_t>(x.size()) / row;
    if (!scales.empty() && static_cast<int64_t>(scales.size()) != n_rows) {
        fail("round_rows_to_fp8: ", scales.size(), " scales for ", n_rows, " rows");
    }
    for (int64_t r = 0; r < n_rows; ++r) {
        const std::span<float> xr = x.subspan(static_cast<size_t>(r * row), static_cast<size_t>(row));
        const float largest = max_magnitude(xr), scale = fp8_scale(largest);
        // A product by 448 / largest, as the device's rows take it.
        const float inv = largest > 0.0f ? kFp8Max / largest : 1.0f;
        for (float& v : xr) {
            v = from_fp8_e4m3(to_fp8_e4m3(v * inv)) * scale;
        }
        if (!scales.empty()) {
            scales[static_cast<size_t>(r)] = scale;
        }
    }
}

}  // namespace folio
