// How fast a single row's WINT4 GEMV reads its weights, against kernels that only load them: the engine's
// GEMV (launch_gemv) on the Llama-8B layers' shapes beside the same loads with no arithmetic (four bytes a
// lane, four in flight, as the GEMV loads), 16-byte loads (two in flight), and the buffer streamed. Each
// shape's weights are repeated through a 1 GiB pool so that no launch finds them in L2. Prints microseconds
// and TB/s of the bytes each kernel reads (weights, and the scales where it reads them).
//   bench-gemv [launches=400]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cuda-handles.h"
#include "engine/common/error.h"
#include "kernels/chained-launch.cuh"
#include "kernels/cuda-check.h"
#include "kernels/quantized-gemv.h"
#include "kernels/quantized-linear.h"
#include "kernels/weight-unpack.cuh"

namespace {

using folio::device_bytes;
using folio::kernels::launch_chained;

constexpr int kBlock = 256;
constexpr int kWarpsPerBlock = kBlock / 32;
constexpr int64_t kGroupSize = 128;
constexpr size_t kPoolBytes = size_t{1} << 30;

// The GEMV's loads without its arithmetic: a warp a row, lane l loading the four-byte words of columns
// l·8 + k·256 (k = 0..3) and their scales, then the next four.  q [n_out, n_in / 2], scales [n_out, n_in /
// 128]  ->  sink[0] only if the loaded bits happen to fold to a marker, so that the loads are kept
__global__ void loads_of_four_kernel(const int8_t* q, const float* scales, float* sink, int64_t n_in,
                                     int64_t n_out) {
    const int lane = static_cast<int>(threadIdx.x) % 32;
    const int64_t o = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + static_cast<int>(threadIdx.x) / 32;
    const uint64_t policy = folio::kernels::evict_first_policy();
    folio::kernels::wait_for_prior_grids();
    folio::kernels::start_dependent_grids();
    uint32_t bits = 0;
    for (int64_t c0 = int64_t{lane} * 8; o < n_out && c0 < n_in; c0 += 1024) {
        uint32_t w[4];
        float s[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            w[k] = folio::kernels::load_weights_4(q + o * (n_in / 2) + (c0 + k * 256) / 2, policy);
            s[k] = scales[o * (n_in / kGroupSize) + (c0 + k * 256) / kGroupSize];
        }
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            bits ^= w[k] ^ __float_as_uint(s[k]);
        }
    }
    if (bits == 0x12345678u) {
        sink[0] = 1.0f;
    }
}

// A warp a row reading 16 bytes a lane, two loads in flight, no arithmetic.  q [n_out, n_in / 2]
__global__ void loads_of_sixteen_kernel(const int8_t* q, float* sink, int64_t n_in, int64_t n_out) {
    const int lane = static_cast<int>(threadIdx.x) % 32;
    const int64_t o = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + static_cast<int>(threadIdx.x) / 32;
    const uint64_t policy = folio::kernels::evict_first_policy();
    const int64_t row_bytes = n_in / 2;
    folio::kernels::wait_for_prior_grids();
    folio::kernels::start_dependent_grids();
    uint32_t bits = 0;
    for (int64_t b0 = int64_t{lane} * 16; o < n_out && b0 < row_bytes; b0 += 1024) {
        uint4 v[2];
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            if (b0 + k * 512 < row_bytes) {
                v[k] = folio::kernels::load_weights_16(q + o * row_bytes + b0 + k * 512, policy);
                bits ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
            }
        }
    }
    if (bits == 0x12345678u) {
        sink[0] = 1.0f;
    }
}

// The weights streamed 16 bytes a thread over a grid-stride loop.  q [n_bytes]
__global__ void stream_kernel(const int8_t* q, float* sink, int64_t n_bytes) {
    const uint64_t policy = folio::kernels::evict_first_policy();
    folio::kernels::wait_for_prior_grids();
    folio::kernels::start_dependent_grids();
    uint32_t bits = 0;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * kBlock;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x; i < n_bytes / 16; i += stride) {
        const uint4 v = folio::kernels::load_weights_16(q + i * 16, policy);
        bits ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (bits == 0x12345678u) {
        sink[0] = 1.0f;
    }
}

struct Shape {
    const char* name;
    int64_t n_out, n_in;
};

struct Kernel {
    std::string name;
    bool reads_scales;
    std::function<void(const int8_t* q, const float* scales, cudaStream_t stream)> launch;
};

void run(int n_launches) {
    // Random bytes throughout: every level and scale is some finite value.
    const folio::DeviceBytes pool = device_bytes(kPoolBytes), scale_pool = device_bytes(kPoolBytes / 32);
    {
        std::mt19937 rng(7);
        std::vector<uint32_t> words(kPoolBytes / 64 / 4);
        for (uint32_t& w : words) {
            w = rng();
        }
        for (size_t at = 0; at < kPoolBytes; at += words.size() * 4) {
            CUDA_CHECK(cudaMemcpy(static_cast<char*>(pool.get()) + at, words.data(), words.size() * 4,
                                  cudaMemcpyHostToDevice));
        }
        std::vector<float> scales(kPoolBytes / 32 / sizeof(float));
        std::uniform_real_distribution<float> uniform(0.001f, 0.1f);
        for (float& s : scales) {
            s = uniform(rng);
        }
        CUDA_CHECK(cudaMemcpy(scale_pool.get(), scales.data(), scales.size() * sizeof(float),
                              cudaMemcpyHostToDevice));
    }
    const folio::DeviceBytes x = device_bytes(16384 * sizeof(float)), y = device_bytes(32768 * sizeof(float));
    CUDA_CHECK(cudaMemset(x.get(), 0, 16384 * sizeof(float)));
    const folio::Stream owned_stream = folio::make_stream();
    const folio::Event owned_start = folio::make_event(), owned_stop = folio::make_event();
    cudaStream_t stream = owned_stream.get();
    cudaEvent_t start = owned_start.get(), stop = owned_stop.get();
    int n_sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&n_sms, cudaDevAttrMultiProcessorCount, 0));
    const Shape shapes[] = {{"q/k/v 6144 x 4096", 6144, 4096},
                            {"o 4096 x 4096", 4096, 4096},
                            {"gate/up 28672 x 4096", 28672, 4096},
                            {"down 4096 x 14336", 4096, 14336}};
    std::printf("%-22s %-14s %10s %8s\n", "shape", "kernel", "us", "TB/s");
    for (const Shape& shape : shapes) {
        const int64_t n_out = shape.n_out, n_in = shape.n_in;
        const size_t weight_bytes = static_cast<size_t>(n_out * n_in / 2);
        const size_t n_scales = static_cast<size_t>(n_out * n_in / kGroupSize);
        const int n_copies = static_cast<int>(std::min<size_t>(kPoolBytes / weight_bytes, 64));
        float* out = static_cast<float*>(y.get());
        const dim3 row_grid(static_cast<unsigned int>((n_out + kWarpsPerBlock - 1) / kWarpsPerBlock));
        const std::vector<Kernel> kernels = {
            {"engine GEMV", true,
             [&](const int8_t* q, const float* scales, cudaStream_t s) {
                 folio::kernels::QuantizedLinearArgs a;
                 a.format = folio::kernels::QuantizedFormat::Wint4;
                 a.x = static_cast<const float*>(x.get());
                 a.q = q;
                 a.scales = scales;
                 a.y = out;
                 a.n = 1;
                 a.n_in = n_in;
                 a.n_out = n_out;
                 a.group_size = kGroupSize;
                 folio::kernels::launch_gemv(a, s);
             }},
            {"loads of 4", true,
             [&](const int8_t* q, const float* scales, cudaStream_t s) {
                 launch_chained(loads_of_four_kernel, row_grid, dim3(kBlock), 0, s, q, scales, out, n_in,
                                n_out);
             }},
            {"loads of 16", false,
             [&](const int8_t* q, const float*, cudaStream_t s) {
                 launch_chained(loads_of_sixteen_kernel, row_grid, dim3(kBlock), 0, s, q, out, n_in, n_out);
             }},
            {"stream", false,
             [&](const int8_t* q, const float*, cudaStream_t s) {
                 launch_chained(stream_kernel, dim3(static_cast<unsigned int>(n_sms * 8)), dim3(kBlock), 0, s,
                                q, out, static_cast<int64_t>(weight_bytes));
             }},
        };
        for (const Kernel& kernel : kernels) {
            const auto launch = [&](int i) {
                const int copy = i % n_copies;
                kernel.launch(static_cast<const int8_t*>(pool.get()) + copy * weight_bytes,
                              static_cast<const float*>(scale_pool.get()) + copy * n_scales, stream);
            };
            for (int i = 0; i < 20; ++i) {
                launch(i);
            }
            CUDA_CHECK(cudaEventRecord(start, stream));
            for (int i = 0; i < n_launches; ++i) {
                launch(i);
            }
            CUDA_CHECK(cudaEventRecord(stop, stream));
            CUDA_CHECK(cudaEventSynchronize(stop));
            CUDA_CHECK(cudaGetLastError());
            float ms = 0.0f;
            CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
            const double us = 1e3 * ms / n_launches;
            const double bytes =
                static_cast<double>(weight_bytes + (kernel.reads_scales ? n_scales * sizeof(float) : 0));
            std::printf("%-22s %-14s %10.2f %8.2f\n", shape.name, kernel.name.c_str(), us, bytes / us / 1e6);
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const int n_launches = argc > 1 ? std::stoi(argv[1]) : 400;
        if (n_launches <= 0) {
            std::fprintf(stderr, "bench-gemv: launches must be positive, got %d\n", n_launches);
            return 1;
        }
        int n_devices = 0;
        if (cudaGetDeviceCount(&n_devices) != cudaSuccess || n_devices == 0) {
            std::fprintf(stderr, "bench-gemv: no CUDA device\n");
            return 1;
        }
        run(n_launches);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench-gemv: %s\n", e.what());
        return 1;
    }
}
