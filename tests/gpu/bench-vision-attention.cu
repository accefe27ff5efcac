// How fast the vision encoder's attention runs (rope_flash_attention_bf16: RoPE and the split into padded
// bfloat16 rows, then the flash kernel) on page20's crops and on eight 896x896 images: 16 heads of 72, bfloat16
// q/k/v in and out. Prints milliseconds a call and TFLOP/s of the attention's products (4 n^2 x 72 a head and
// an image of n patches).
//   bench-vision-attention [calls=50]
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cuda-handles.h"
#include "kernels/attention.h"
#include "kernels/cuda-check.h"
#include "kernels/flash-attention.h"

namespace {

using folio::device_bytes;
using folio::kernels::AttentionSpan;

constexpr int64_t kHeads = 16;
constexpr int64_t kHeadDim = 72;

// page20's five crop shapes (1000x300, 1000x120, 600x400, 1200x80, 800x800) after the processor's resize
// within 112,896..1,003,520 pixels, in patches of 14: 29,808 a page of 20 crops.
const std::vector<int64_t> kPage20Crop = {1584, 576, 1176, 752, 3364};

struct Workload {
    std::string name;
    std::vector<int64_t> images;  // patches of each image
};

uint16_t to_bf16(float x) {
    uint32_t bits = 0;
    std::memcpy(&bits, &x, sizeof(bits));
    return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

void run(const Workload& w, int n_calls) {
    int64_t n = 0;
    double flops = 0.0;
    std::vector<AttentionSpan> spans;
    for (const int64_t patches : w.images) {
        // An image's rows in spans of at most kFlashTileRows, each seeing all of its keys, as the vision
        // encoder gives them.
        for (int64_t row = 0; row < patches; row += folio::kernels::kFlashTileRows) {
            AttentionSpan s;
            s.q_row = n + row;
            s.n_rows = std::min(folio::kernels::kFlashTileRows, patches - row);
            s.kv_start = n;
            s.first_visible = patches;
            s.step = 0;
            s.max_visible = patches;
            spans.push_back(s);
        }
        n += patches;
        flops += 4.0 * static_cast<double>(patches) * static_cast<double>(patches) * kHeadDim * kHeads;
    }
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<uint16_t> qkv(static_cast<size_t>(n * 3 * kHeads * kHeadDim));
    for (uint16_t& x : qkv) {
        x = to_bf16(normal(rng));
    }
    std::vector<float> cos(static_cast<size_t>(n * kHeadDim)), sin(cos.size());
    for (size_t i = 0; i < cos.size(); ++i) {
        const float angle = static_cast<float>(i % 977) * 0.01f;
        cos[i] = std::cos(angle);
        sin[i] = std::sin(angle);
    }
    const auto d_qkv = device_bytes(qkv.size() * sizeof(uint16_t), qkv.data());
    const auto d_cos = device_bytes(cos.size() * sizeof(float), cos.data());
    const auto d_sin = device_bytes(sin.size() * sizeof(float), sin.data());
    const auto d_out = device_bytes(static_cast<size_t>(n * kHeads * kHeadDim) * sizeof(uint16_t));
    const auto d_spans = device_bytes(spans.size() * sizeof(AttentionSpan), spans.data());
    const auto scratch =
        device_bytes(static_cast<size_t>(folio::kernels::rope_flash_scratch_bytes(n, kHeads, kHeadDim)));
    const folio::Stream stream = folio::make_stream();
    const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
    const auto call = [&] {
        folio::kernels::rope_flash_attention_bf16(
            static_cast<const uint16_t*>(d_qkv.get()), static_cast<const float*>(d_cos.get()),
            static_cast<const float*>(d_sin.get()), static_cast<uint16_t*>(d_out.get()),
            static_cast<const AttentionSpan*>(d_spans.get()), static_cast<int64_t>(spans.size()), n, kHeads,
            kHeadDim, scale, scratch.get(), stream.get());
    };
    for (int i = 0; i < 5; ++i) {
        call();
    }
    const folio::Event start = folio::make_event(), stop = folio::make_event();
    CUDA_CHECK(cudaEventRecord(start.get(), stream.get()));
    for (int i = 0; i < n_calls; ++i) {
        call();
    }
    CUDA_CHECK(cudaEventRecord(stop.get(), stream.get()));
    CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    const double per_call = static_cast<double>(ms) / n_calls;
    std::printf("{\"workload\": \"%s\", \"patches\": %lld, \"ms\": %.4f, \"tflops\": %.1f}\n", w.name.c_str(),
                static_cast<long long>(n), per_call, flops / (per_call * 1e-3) / 1e12);
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const int n_calls = argc > 1 ? std::atoi(argv[1]) : 50;
        if (n_calls <= 0) {
            std::fprintf(stderr, "bench-vision-attention: calls must be positive, got %s\n", argv[1]);
            return 2;
        }
        Workload page20{"page20 page (20 crops)", {}};
        for (int r = 0; r < 4; ++r) {
            page20.images.insert(page20.images.end(), kPage20Crop.begin(), kPage20Crop.end());
        }
        run(page20, n_calls);
        run({"8 x 896x896", std::vector<int64_t>(8, 64 * 64)}, n_calls);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench-vision-attention: %s\n", e.what());
        return 1;
    }
}
