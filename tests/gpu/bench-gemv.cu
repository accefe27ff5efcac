// How fast a single row's WINT4 GEMV reads its weights, against kernels that only load them: the engine's
// GEMV (launch_gemv) on the Llama-8B layers' shapes beside the same loads with no arithmetic (four bytes a
// lane, four in flight, as the old GEMV of a warp a row loaded), 16-byte loads (two in flight), the buffer
// streamed, and shapes of the streamed GEMV (x held in registers, weight rows streamed past it: chunks x
// rows, strided or with each lane's words consecutive), each first checked against the engine's GEMV. Each
// shape's weights are repeated through a 1 GiB pool so that no launch finds them in L2. Prints microseconds
// and TB/s of the bytes each kernel reads (weights, and the scales where it reads them).
//   bench-gemv [launches=400]
#include <algorithm>
#include <cmath>
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

// Adds each warp's kRows sums across its lanes and its group's n_parts warps (a part each) in shared memory;
// lane r of the group's first warp stores row row0 + r.  acc [kRows] per lane  ->  y [n_out]
template <int kRows>
__device__ void store_part_sums(const float acc[kRows], float* y, int64_t row0, int64_t n_out, int n_parts) {
    const int lane = static_cast<int>(threadIdx.x) % 32;
    const int warp = static_cast<int>(threadIdx.x) / 32;
    __shared__ float sums[kWarpsPerBlock][kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        float v = acc[r];
#pragma unroll
        for (int off = 16; off > 0; off /= 2) {
            v += __shfl_xor_sync(0xffffffffu, v, off);
        }
        if (lane == 0) {
            sums[warp][r] = v;
        }
    }
    __syncthreads();
    if (warp % n_parts == 0 && lane < kRows && row0 + lane < n_out) {
        float s = 0.0f;
        for (int p = 0; p < n_parts; ++p) {
            s += sums[warp + p][lane];
        }
        y[row0 + lane] = s;
    }
}

// A warp keeps its part of x in registers and streams kRows weight rows past it: part p of a row's columns
// is [p·256·kChunks, (p+1)·256·kChunks), lane l owning columns l·8 + k·256 of it; the block's 8 warps are
// n_parts parts of 8 / n_parts row groups, each of kRows rows. All of a warp's weight words and scales are
// loaded at once, then multiplied; the parts' sums meet in shared memory.  x [n_in], q [n_out, n_in / 2]
// -> y [n_out]
template <int kChunks, int kRows>
__global__ void __launch_bounds__(kBlock, 2)
    streamed_rows_kernel(const float* x, const int8_t* q, const float* scales, float* y, int64_t n_in,
                         int64_t n_out, int n_parts) {
    using folio::kernels::Packed8;
    using folio::kernels::QuantizedFormat;
    const int lane = static_cast<int>(threadIdx.x) % 32;
    const int warp = static_cast<int>(threadIdx.x) / 32;
    const int part = warp % n_parts;
    const int n_groups = kWarpsPerBlock / n_parts;
    const int64_t row0 = (static_cast<int64_t>(blockIdx.x) * n_groups + warp / n_parts) * kRows;
    const int64_t col0 = static_cast<int64_t>(part) * 256 * kChunks + lane * 8;
    const uint64_t policy = folio::kernels::evict_first_policy();
    Packed8 w[kRows][kChunks];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
        for (int k = 0; k < kChunks; ++k) {
            if (row0 + r < n_out) {
                w[r][k] = folio::kernels::load_packed8<QuantizedFormat::Wint4>(
                    q, scales, row0 + r, col0 + k * 256, n_in, 7, policy);
            }
        }
    }
    folio::kernels::wait_for_prior_grids();
    folio::kernels::start_dependent_grids();
    float xv[kChunks][8];
#pragma unroll
    for (int k = 0; k < kChunks; ++k) {
        const float4 lo = *reinterpret_cast<const float4*>(x + col0 + k * 256);
        const float4 hi = *reinterpret_cast<const float4*>(x + col0 + k * 256 + 4);
        xv[k][0] = lo.x, xv[k][1] = lo.y, xv[k][2] = lo.z, xv[k][3] = lo.w;
        xv[k][4] = hi.x, xv[k][5] = hi.y, xv[k][6] = hi.z, xv[k][7] = hi.w;
    }
    float acc[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        acc[r] = 0.0f;
#pragma unroll
        for (int k = 0; k < kChunks; ++k) {
            float levels[8];
            folio::kernels::unpack8_levels<QuantizedFormat::Wint4>(w[r][k], levels);
            float d = 0.0f;
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                d = fmaf(xv[k][i], levels[i], d);
            }
            acc[r] = fmaf(w[r][k].scale, d, acc[r]);
        }
    }
    store_part_sums<kRows>(acc, y, row0, n_out, n_parts);
}

// streamed_rows_kernel with each lane owning 8·kWords consecutive columns of its part (one 4·kWords-byte load
// and one scale a row), so that a part is 256·kWords columns and a row's part one load a lane.
template <int kWords, int kRows>
__global__ void __launch_bounds__(kBlock, 2)
    lane_rows_kernel(const float* x, const int8_t* q, const float* scales, float* y, int64_t n_in,
                     int64_t n_out, int n_parts) {
    using folio::kernels::Packed8;
    using folio::kernels::QuantizedFormat;
    static_assert(kWords == 2 || kWords == 4);
    const int lane = static_cast<int>(threadIdx.x) % 32;
    const int warp = static_cast<int>(threadIdx.x) / 32;
    const int part = warp % n_parts;
    const int n_groups = kWarpsPerBlock / n_parts;
    const int64_t row0 = (static_cast<int64_t>(blockIdx.x) * n_groups + warp / n_parts) * kRows;
    const int64_t col0 = static_cast<int64_t>(part) * 256 * kWords + lane * 8 * kWords;
    const uint64_t policy = folio::kernels::evict_first_policy();
    uint32_t w[kRows][kWords];
    float sc[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        if (row0 + r < n_out) {
            const int8_t* at = q + (row0 + r) * (n_in / 2) + col0 / 2;
            if constexpr (kWords == 2) {
                const uint2 v = folio::kernels::load_weights_8(at, policy);
                w[r][0] = v.x, w[r][1] = v.y;
            } else {
                const uint4 v = folio::kernels::load_weights_16(at, policy);
                w[r][0] = v.x, w[r][1] = v.y, w[r][2] = v.z, w[r][3] = v.w;
            }
            sc[r] = scales[(row0 + r) * (n_in / kGroupSize) + col0 / kGroupSize];
        } else {
#pragma unroll
            for (int k = 0; k < kWords; ++k) {
                w[r][k] = 0x88888888u;
            }
            sc[r] = 0.0f;
        }
    }
    folio::kernels::wait_for_prior_grids();
    folio::kernels::start_dependent_grids();
    float xv[kWords][8];
#pragma unroll
    for (int k = 0; k < kWords; ++k) {
        const float4 lo = *reinterpret_cast<const float4*>(x + col0 + k * 8);
        const float4 hi = *reinterpret_cast<const float4*>(x + col0 + k * 8 + 4);
        xv[k][0] = lo.x, xv[k][1] = lo.y, xv[k][2] = lo.z, xv[k][3] = lo.w;
        xv[k][4] = hi.x, xv[k][5] = hi.y, xv[k][6] = hi.z, xv[k][7] = hi.w;
    }
    float acc[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        float d = 0.0f;
#pragma unroll
        for (int k = 0; k < kWords; ++k) {
            Packed8 p{};
            p.bits.x = w[r][k];
            float levels[8];
            folio::kernels::unpack8_levels<QuantizedFormat::Wint4>(p, levels);
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                d = fmaf(xv[k][i], levels[i], d);
            }
        }
        acc[r] = sc[r] * d;
    }
    store_part_sums<kRows>(acc, y, row0, n_out, n_parts);
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

// A kernel of the streamed GEMV's shape: x, q, scales, y, n_in, n_out, n_parts.
using StreamedKernel = void (*)(const float*, const int8_t*, const float*, float*, int64_t, int64_t, int);

// Adds kernel, named name, to kernels where parts of part_columns divide n_in into 1, 2, 4 or 8, with rows
// rows a warp. out is read at each launch.
void add_streamed(std::vector<Kernel>& kernels, const std::string& name, StreamedKernel kernel,
                  int64_t part_columns, int rows, const void* x, float*& out, int64_t n_in, int64_t n_out) {
    const int64_t n_parts = n_in / part_columns;
    if (n_in % part_columns != 0 || (n_parts != 1 && n_parts != 2 && n_parts != 4 && n_parts != 8)) {
        return;
    }
    const int64_t rows_a_block = kWarpsPerBlock / n_parts * rows;
    const dim3 grid(static_cast<unsigned int>((n_out + rows_a_block - 1) / rows_a_block));
    float** const out_at = &out;
    kernels.push_back({name, true, [=](const int8_t* q, const float* scales, cudaStream_t s) {
                           launch_chained(kernel, grid, dim3(kBlock), 0, s, static_cast<const float*>(x), q,
                                          scales, *out_at, n_in, n_out, static_cast<int>(n_parts));
                       }});
}

// streamed_rows_kernel<kChunks, kRows> (strided chunks) and lane_rows_kernel<kWords, kRows> (consecutive
// words a lane).
template <int kChunks, int kRows>
void add_strided(std::vector<Kernel>& kernels, const void* x, float*& out, int64_t n_in, int64_t n_out) {
    add_streamed(kernels, "streamed " + std::to_string(kChunks) + "x" + std::to_string(kRows),
                 streamed_rows_kernel<kChunks, kRows>, int64_t{256} * kChunks, kRows, x, out, n_in, n_out);
}

template <int kWords, int kRows>
void add_lane_rows(std::vector<Kernel>& kernels, const void* x, float*& out, int64_t n_in, int64_t n_out) {
    add_streamed(kernels, "streamed lane " + std::to_string(kWords) + "x" + std::to_string(kRows),
                 lane_rows_kernel<kWords, kRows>, int64_t{256} * kWords, kRows, x, out, n_in, n_out);
}

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
    {
        std::mt19937 rng(11);
        std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
        std::vector<float> xs(16384);
        for (float& v : xs) {
            v = uniform(rng);
        }
        CUDA_CHECK(cudaMemcpy(x.get(), xs.data(), xs.size() * sizeof(float), cudaMemcpyHostToDevice));
    }
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
    std::printf("%-22s %-18s %10s %8s\n", "shape", "kernel", "us", "TB/s");
    for (const Shape& shape : shapes) {
        const int64_t n_out = shape.n_out, n_in = shape.n_in;
        const size_t weight_bytes = static_cast<size_t>(n_out * n_in / 2);
        const size_t n_scales = static_cast<size_t>(n_out * n_in / kGroupSize);
        const int n_copies = static_cast<int>(std::min<size_t>(kPoolBytes / weight_bytes, 64));
        float* out = static_cast<float*>(y.get());
        const dim3 row_grid(static_cast<unsigned int>((n_out + kWarpsPerBlock - 1) / kWarpsPerBlock));
        std::vector<Kernel> kernels = {
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
        add_strided<2, 16>(kernels, x.get(), out, n_in, n_out);
        add_strided<4, 8>(kernels, x.get(), out, n_in, n_out);
        add_strided<8, 4>(kernels, x.get(), out, n_in, n_out);
        add_strided<7, 4>(kernels, x.get(), out, n_in, n_out);
        add_lane_rows<2, 16>(kernels, x.get(), out, n_in, n_out);
        add_lane_rows<4, 12>(kernels, x.get(), out, n_in, n_out);
        add_lane_rows<4, 16>(kernels, x.get(), out, n_in, n_out);
        // Each streamed variant against the engine's GEMV on the first copy, before the timings.
        {
            const folio::DeviceBytes expected = device_bytes(n_out * sizeof(float));
            std::vector<float> want(static_cast<size_t>(n_out)), got(static_cast<size_t>(n_out));
            float* const saved_out = out;
            out = static_cast<float*>(expected.get());
            kernels[0].launch(static_cast<const int8_t*>(pool.get()),
                              static_cast<const float*>(scale_pool.get()), stream);
            CUDA_CHECK(cudaStreamSynchronize(stream));
            CUDA_CHECK(cudaMemcpy(want.data(), out, want.size() * sizeof(float), cudaMemcpyDeviceToHost));
            out = saved_out;
            for (const Kernel& kernel : kernels) {
                if (kernel.name.rfind("streamed", 0) != 0) {
                    continue;
                }
                CUDA_CHECK(cudaMemset(out, 0, n_out * sizeof(float)));
                kernel.launch(static_cast<const int8_t*>(pool.get()),
                              static_cast<const float*>(scale_pool.get()), stream);
                CUDA_CHECK(cudaStreamSynchronize(stream));
                CUDA_CHECK(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
                double worst = 0.0, scale = 0.0;
                for (size_t i = 0; i < want.size(); ++i) {
                    worst = std::max(worst, static_cast<double>(std::abs(want[i] - got[i])));
                    scale = std::max(scale, static_cast<double>(std::abs(want[i])));
                }
                std::printf("%-22s %-18s max |diff| %.3g of max |y| %.3g\n", shape.name, kernel.name.c_str(),
                            worst, scale);
            }
        }
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
            std::printf("%-22s %-18s %10.2f %8.2f\n", shape.name, kernel.name.c_str(), us, bytes / us / 1e6);
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
