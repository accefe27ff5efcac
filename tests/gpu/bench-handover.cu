// What a hand-over between dependent steps costs on the GPU, measured three ways: a CUDA graph of chained
// kernels (programmatic dependent launch, as the decode step runs) that do nothing but wait; one persistent
// kernel whose blocks meet at a barrier in global memory between phases (a counter released by each block
// and acquired by all); and clusters whose blocks meet at the cluster barrier and read one another's shared
// memory. Prints microseconds per kernel or phase for several grid sizes.
//   bench-handover [kernels_per_graph=256] [phases=4096]
#include <algorithm>
#include <array>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include "cuda-handles.h"
#include "engine/common/error.h"
#include "kernels/chained-launch.cuh"
#include "kernels/cuda-check.h"

namespace {

namespace cg = cooperative_groups;
using folio::Event;
using folio::make_event;
using folio::Stream;
using folio::kernels::launch_chained;

constexpr int kBlock = 256;
constexpr int kRepeats = 20;  // graph launches, or persistent runs (the best is kept)
constexpr std::array<int, 4> kClusterSizes = {2, 4, 8, 16};  // each timed on a grid of two clusters

// A chained kernel with nothing to do; with touch, thread 0 of each block also writes a word, so that the
// hand-over includes flushing a write.  sink [gridDim.x]
__global__ void wait_only_kernel(float* sink, bool touch) {
    folio::kernels::wait_for_prior_grids();
    folio::kernels::start_dependent_grids();
    if (touch && threadIdx.x == 0) {
        sink[blockIdx.x] += 1.0f;
    }
}

__device__ inline unsigned int load_acquire(const unsigned int* p) {
    unsigned int v = 0;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ inline void add_release(unsigned int* p, unsigned int v) {
    asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// n_phases grid barriers: thread 0 of each block adds one to the counter and waits until every block of the
// phase has. All blocks must be resident at once (the grid is at most what the device holds).
__global__ void grid_barrier_kernel(unsigned int* counter, float* sink, int n_phases, bool touch) {
    for (int p = 0; p < n_phases; ++p) {
        __syncthreads();
        if (threadIdx.x == 0) {
            if (touch) {
                sink[blockIdx.x] += 1.0f;
            }
            add_release(counter, 1u);
            const unsigned int target = static_cast<unsigned int>(p + 1) * gridDim.x;
            while (load_acquire(counter) < target) {
            }
        }
        __syncthreads();
    }
}

// n_phases cluster barriers, each followed by a read of the next block's shared memory (compute capability
// 9.0 and up).  sink [gridDim.x]
__global__ void cluster_barrier_kernel(float* sink, int n_phases) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    __shared__ float words[kBlock];
    cg::cluster_group cluster = cg::this_cluster();
    words[threadIdx.x] = static_cast<float>(threadIdx.x);
    float total = 0.0f;
    for (int p = 0; p < n_phases; ++p) {
        cluster.sync();
        const unsigned int next = (cluster.block_rank() + 1) % cluster.num_blocks();
        total += *cluster.map_shared_rank(words + threadIdx.x, next);
        words[threadIdx.x] = total;
    }
    cluster.sync();
    if (threadIdx.x == 0) {
        sink[blockIdx.x] = total;
    }
#else
    __trap();  // never launched: run() asks the device for clusters first
#endif
}

struct GraphExecDeleter {
    void operator()(cudaGraphExec_t g) const { cudaGraphExecDestroy(g); }
};
using GraphExec = std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, GraphExecDeleter>;

struct DeviceDeleter {
    void operator()(void* p) const { cudaFree(p); }
};

template <typename T>
std::unique_ptr<T, DeviceDeleter> device_zeros(size_t n) {
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, n * sizeof(T)));
    CUDA_CHECK(cudaMemset(p, 0, n * sizeof(T)));
    return std::unique_ptr<T, DeviceDeleter>(static_cast<T*>(p));
}

// Milliseconds from before to after whatever run() queues on stream, the least of kRepeats.
template <typename F>
float best_ms(cudaStream_t stream, F&& run) {
    const Event start = make_event(), stop = make_event();
    run();  // warm-up
    CUDA_CHECK(cudaStreamSynchronize(stream));
    float best = 0.0f;
    for (int r = 0; r < kRepeats; ++r) {
        CUDA_CHECK(cudaEventRecord(start.get(), stream));
        run();
        CUDA_CHECK(cudaEventRecord(stop.get(), stream));
        CUDA_CHECK(cudaEventSynchronize(stop.get()));
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
        best = r == 0 ? ms : std::min(best, ms);
    }
    return best;
}

// A graph of n_kernels wait-only kernels of `grid` blocks, captured from stream.
GraphExec chained_graph(cudaStream_t stream, int n_kernels, int grid, float* sink, bool touch) {
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < n_kernels; ++i) {
        launch_chained(wait_only_kernel, dim3(grid), dim3(kBlock), 0, stream, sink, touch);
    }
    cudaGraph_t graph = nullptr;
    CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    cudaGraphExec_t exec = nullptr;
    const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    CUDA_CHECK(status);
    return GraphExec(exec);
}

int positive_argument(int argc, char** argv, int i, int fallback) {
    if (argc <= i) {
        return fallback;
    }
    const std::string text = argv[i];
    const bool digits = !text.empty() && text.size() <= 9 &&
                        std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    const int value = digits ? std::stoi(text) : 0;
    if (value <= 0) {
        folio::fail("argument ", i, " is '", text, "', not a positive count below 10^9");
    }
    return value;
}

void run(int n_kernels, int n_phases) {
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    cudaDeviceProp props{};
    CUDA_CHECK(cudaGetDeviceProperties(&props, device));
    const int n_sms = props.multiProcessorCount;
    std::printf("%s, %d SMs, chained launches %s\n", props.name, n_sms,
                folio::kernels::chained_launch_enabled() ? "on" : "off");

    cudaStream_t raw_stream = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&raw_stream, cudaStreamNonBlocking));
    const Stream stream(raw_stream);
    int resident = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, grid_barrier_kernel, kBlock, 0));
    const int most_blocks = resident * n_sms;
    const std::vector<int> grids = {40, n_sms, 2 * n_sms, 4 * n_sms};
    const auto sink = device_zeros<float>(static_cast<size_t>(
        std::max(*std::max_element(grids.begin(), grids.end()), 2 * kClusterSizes.back())));
    const auto counter = device_zeros<unsigned int>(1);
    for (const bool touch : {false, true}) {
        for (const int grid : grids) {
            const GraphExec graph = chained_graph(stream.get(), n_kernels, grid, sink.get(), touch);
            const float ms =
                best_ms(stream.get(), [&] { CUDA_CHECK(cudaGraphLaunch(graph.get(), stream.get())); });
            std::printf("chained kernels, %4d blocks%s: %.3f us a kernel\n", grid,
                        touch ? ", a write each" : "", 1000.0f * ms / static_cast<float>(n_kernels));
        }
    }
    for (const bool touch : {false, true}) {
        for (const int grid : grids) {
            if (grid > most_blocks) {
                continue;
            }
            const float ms = best_ms(stream.get(), [&] {
                CUDA_CHECK(cudaMemsetAsync(counter.get(), 0, sizeof(unsigned int), stream.get()));
                grid_barrier_kernel<<<grid, kBlock, 0, stream.get()>>>(counter.get(), sink.get(), n_phases,
                                                                       touch);
                CUDA_CHECK(cudaGetLastError());
            });
            std::printf("grid barrier,    %4d blocks%s: %.3f us a phase\n", grid,
                        touch ? ", a write each" : "", 1000.0f * ms / static_cast<float>(n_phases));
        }
    }
    if (props.clusterLaunch == 0) {
        std::printf("cluster barrier: skipped, the device launches no clusters\n");
        return;
    }
    CUDA_CHECK(
        cudaFuncSetAttribute(cluster_barrier_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    for (const int size : kClusterSizes) {
        cudaLaunchConfig_t config{};
        config.gridDim = dim3(static_cast<unsigned int>(2 * size));
        config.blockDim = dim3(kBlock);
        int largest = 0;
        CUDA_CHECK(cudaOccupancyMaxPotentialClusterSize(&largest, cluster_barrier_kernel, &config));
        if (size > largest) {
            std::printf("cluster barrier, %4d blocks a cluster: skipped, the device fits %d\n", size,
                        largest);
            continue;
        }
        cudaLaunchAttribute attribute{};
        attribute.id = cudaLaunchAttributeClusterDimension;
        attribute.val.clusterDim.x = static_cast<unsigned int>(size);
        attribute.val.clusterDim.y = 1;
        attribute.val.clusterDim.z = 1;
        config.attrs = &attribute;
        config.numAttrs = 1;
        config.stream = stream.get();
        const float ms = best_ms(stream.get(), [&] {
            CUDA_CHECK(cudaLaunchKernelEx(&config, cluster_barrier_kernel, sink.get(), n_phases));
        });
        std::printf("cluster barrier, %4d blocks a cluster: %.3f us a phase\n", size,
                    1000.0f * ms / static_cast<float>(n_phases));
    }
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const int n_kernels = positive_argument(argc, argv, 1, 256);
        const int n_phases = positive_argument(argc, argv, 2, 4096);
        int n_devices = 0;
        if (cudaGetDeviceCount(&n_devices) != cudaSuccess || n_devices == 0) {
            std::fprintf(stderr, "bench-handover: no CUDA device\n");
            return 1;
        }
        run(n_kernels, n_phases);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench-handover: %s\n", e.what());
        return 1;
    }
}
