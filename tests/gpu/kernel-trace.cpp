// A process's kernel timeline through CUPTI's activity records, for the GPU machine, which has no Nsight
// Systems. The CUDA driver loads it from CUDA_INJECTION64_PATH and calls InitializeInjection(); at exit it
// has written one line per kernel, CUDA graph nodes included, to the file FOLIO_KERNEL_TRACE names:
// start and end (ns, the device's clock), the grid, the graph and its node (0 outside graphs) and the mangled
// name.
// Concurrent-kernel records leave chained launches overlapping as they run. kernel_timeline.py reads it.
// With FOLIO_API_TRACE naming a second file, it also writes the host's CUDA runtime calls of at least 20 us
// and every copy the device runs there, one line each: start and end (ns, the same clock), "api" or "copy",
// the call's name or the copy's direction, and the bytes copied.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include <cupti.h>

namespace {

constexpr size_t kBufferBytes = size_t{8} << 20;
constexpr size_t kBufferAlign = 8;

constexpr uint64_t kMinApiNs = 20'000;

std::FILE* trace_file = nullptr;
std::FILE* api_file = nullptr;
std::mutex trace_mutex;

const char* copy_direction(uint8_t kind) {
    switch (kind) {
        case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
            return "host_to_device";
        case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
            return "device_to_host";
        case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
            return "device_to_device";
        default:
            return "other";
    }
}

void write_api_record(const CUpti_Activity* record) {
    if (record->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        const char* name = nullptr;
        if (a->end - a->start < kMinApiNs ||
            cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid, &name) != CUPTI_SUCCESS) {
            return;
        }
        std::fprintf(api_file, "%llu,%llu,api,%s,0\n", static_cast<unsigned long long>(a->start),
                     static_cast<unsigned long long>(a->end), name);
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
        const auto* c = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        std::fprintf(api_file, "%llu,%llu,copy,%s,%llu\n", static_cast<unsigned long long>(c->start),
                     static_cast<unsigned long long>(c->end), copy_direction(c->copyKind),
                     static_cast<unsigned long long>(c->bytes));
    }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
    *size = *buffer != nullptr ? kBufferBytes : 0;
    *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_bytes) {
    {
        const std::lock_guard lock(trace_mutex);
        CUpti_Activity* record = nullptr;
        while (trace_file != nullptr &&
               cuptiActivityGetNextRecord(buffer, valid_bytes, &record) == CUPTI_SUCCESS) {
            if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
                if (api_file != nullptr) {
                    write_api_record(record);
                }
                continue;
            }
            const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
            std::fprintf(trace_file, "%llu,%llu,%d,%d,%d,%u,%llu,%s\n",
                         static_cast<unsigned long long>(k->start), static_cast<unsigned long long>(k->end),
                         k->gridX, k->gridY, k->gridZ, k->graphId,
                         static_cast<unsigned long long>(k->graphNodeId), k->name);
        }
        size_t dropped = 0;
        if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped > 0) {
            std::fprintf(stderr, "kernel-trace: %zu records dropped\n", dropped);
        }
    }
    std::free(buffer);
}

void finish_trace() {
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    const std::lock_guard lock(trace_mutex);
    std::fclose(trace_file);
    trace_file = nullptr;
    if (api_file != nullptr) {
        std::fclose(api_file);
        api_file = nullptr;
    }
}

}  // namespace

// Returns 1 once tracing is set up, 0 (the process runs untraced) where it cannot be.
extern "C" int InitializeInjection() {
    const char* path = std::getenv("FOLIO_KERNEL_TRACE");
    if (path == nullptr) {
        std::fprintf(stderr, "kernel-trace: FOLIO_KERNEL_TRACE names no file; not tracing\n");
        return 0;
    }
    trace_file = std::fopen(path, "w");
    if (trace_file == nullptr) {
        std::fprintf(stderr, "kernel-trace: cannot write %s; not tracing\n", path);
        return 0;
    }
    std::fprintf(trace_file, "start_ns,end_ns,grid_x,grid_y,grid_z,graph,graph_node,name\n");
    if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
        std::fprintf(stderr, "kernel-trace: CUPTI refused the activity records; not tracing\n");
        std::fclose(trace_file);
        trace_file = nullptr;
        return 0;
    }
    if (const char* api_path = std::getenv("FOLIO_API_TRACE"); api_path != nullptr) {
        api_file = std::fopen(api_path, "w");
        if (api_file != nullptr && cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS &&
            cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) == CUPTI_SUCCESS) {
            std::fprintf(api_file, "start_ns,end_ns,kind,name,bytes\n");
        } else {
            std::fprintf(stderr, "kernel-trace: cannot trace runtime calls and copies into %s\n", api_path);
            if (api_file != nullptr) {
                std::fclose(api_file);
                api_file = nullptr;
            }
        }
    }
    std::atexit(finish_trace);
    return 1;
}
