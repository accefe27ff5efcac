// Weight-only quantization of linear layers at load time. WINT8 keeps one int8 per weight with a scale per
// output channel; WINT4 keeps two int4 per byte with a scale per group of group_size input columns.
// Both are symmetric: w ≈ q * scale. BF16 is the same path for weights kept in bfloat16 (rounded to nearest
// even, no scales): the storage of dense layers on the GPU. FP8 keeps one E4M3 float per weight (OCP FP8:
// 4 exponent bits, 3 mantissa bits, largest value 448) with a scale per output channel, and its products
// round their activations to E4M3 too, a scale per row, for the tensor cores' FP8 rate.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

struct ModelConfig;

enum class Quantization { None, Wint8, Wint4, Bf16, Fp8 };

// "none"/"" -> None, "wint8", "wint4"; anything else throws folio::Error naming the value. (BF16 is chosen
// as a weight dtype, not named as a quantization; FP8 is the vision encoder's choice alone.)
Quantization parse_quantization(std::string_view name);
const char* quantization_name(Quantization q);

struct QuantizedWeights {
    Quantization type = Quantization::None;
    int64_t n_out = 0;
    int64_t n_in = 0;
    int64_t group_size = 0;  // WINT4: input columns per scale; WINT8 and BF16: n_in
    // WINT8: [n_out, n_in] int8.  WINT4: [n_out, n_in / 2] bytes, column 2j in the low nibble and 2j + 1 in
    // the high nibble, each a two's-complement int4 in [-8, 7].  BF16: [n_out, n_in] bfloat16, as 2 bytes
    // each, little-endian.  FP8: [n_out, n_in] E4M3 bytes.
    std::vector<int8_t> q;
    // WINT8 and FP8: [n_out].  WINT4: [n_out, n_in / group_size].  BF16: none.
    std::vector<float> scales;
};

// How packed weights of a type and size are laid out, as quantize makes them: the input columns a scale
// covers, the bytes of packed values and the number of scales.
struct QuantizedLayout {
    int64_t group_size = 0;
    int64_t n_packed_bytes = 0;
    int64_t n_scales = 0;
};
// Throws folio::Error where quantize would refuse the type, group size or sizes.
QuantizedLayout quantized_layout(Quantization type, int64_t n_out, int64_t n_in, int64_t group_size);

// w [n_out, n_in] -> quantized. WINT4 needs n_in divisible by group_size (64 or 128) and an even n_in.
QuantizedWeights quantize(std::span<const float> w, int64_t n_out, int64_t n_in, Quantization type,
                          int64_t group_size);
// Throws folio::Error when the type, group size or the sizes of q and scales do not fit n_out x n_in.
void validate(const QuantizedWeights& w);
// The float matrix the quantized weights stand for.  -> [n_out, n_in]
std::vector<float> dequantize(const QuantizedWeights& w);
// Row r of that matrix from packed integers and scales laid out as in QuantizedWeights.  out [n_in]
void dequantize_row(Quantization type, const int8_t* q, const float* scales, int64_t n_in, int64_t group_size,
                    int64_t r, float* out);
// Bytes of the packed integers and scales.
int64_t quantized_bytes(Quantization type, int64_t n_out, int64_t n_in, int64_t group_size);

// The largest finite E4M3 value.
inline constexpr float kFp8Max = 448.0f;
// v as E4M3 bits, rounded to nearest even, magnitudes beyond 448 clamped to 448 (the saturating conversion
// of the tensor cores' inputs); NaN stays NaN.
uint8_t to_fp8_e4m3(float v);
float from_fp8_e4m3(uint8_t bits);
// Rows of activations as an FP8 product reads them: each row's scale is its largest magnitude m over 448 (1
// for a row of zeros), and each value v becomes scale · e4m3(v · 448 / m).  x [n_rows, row] in place;
// scales [n_rows] out where not empty.
void round_rows_to_fp8(std::span<float> x, int64_t row, std::span<float> scales = {});

}  // namespace folio
