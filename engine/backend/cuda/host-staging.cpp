#include "engine/backend/cuda/host-staging.h"

#include <algorithm>
#include <cstring>
#include <deque>

#include "kernels/cuda-check.h"

namespace folio::kernels {

namespace {

// A thread fills at least this much of a chunk, so that a small upload stays on the calling thread.
constexpr int64_t kMinFillBytes = int64_t{512} << 10;

// Calls visit(part, offset, n) for each piece of the bytes [begin, end) of the parts taken one after another,
// in order: n bytes at offset within part.
template <typename Part, typename Visit>
void visit_parts_range(std::span<const Part> parts, size_t begin, size_t end, Visit visit) {
    size_t part_begin = 0;  // offset of the current part within all of them
    for (const Part& part : parts) {
        if (begin >= end) {
            return;
        }
        const size_t part_end = part_begin + part.size();
        if (begin < part_end) {
            const size_t n = std::min(end, part_end) - begin;
            visit(part, begin - part_begin, n);
            begin += n;
        }
        part_begin = part_end;
    }
}

// Copies the bytes [begin, end) of the parts taken one after another to dst.
void copy_parts_range(std::span<const std::span<const std::byte>> parts, size_t begin, size_t end,
                      std::byte* dst) {
    visit_parts_range(parts, begin, end, [&](std::span<const std::byte> part, size_t offset, size_t n) {
        std::memcpy(dst, part.data() + offset, n);
        dst += n;
    });
}

// Copies src to the bytes [begin, end) of the parts taken one after another.
void copy_to_parts_range(const std::byte* src, std::span<const std::span<std::byte>> parts, size_t begin,
                         size_t end) {
    visit_parts_range(parts, begin, end, [&](std::span<std::byte> part, size_t offset, size_t n) {
        std::memcpy(part.data() + offset, src, n);
        src += n;
    });
}

}  // namespace

HostStaging::HostStaging(int n_threads) : fill_threads_(n_threads) {}

bool HostStaging::next_chunk() {
    if (next_ == chunks_.size() && chunks_.size() < kMaxChunks) {
        void* p = nullptr;
        if (cudaHostAlloc(&p, kChunkBytes, cudaHostAllocDefault) == cudaSuccess) {
            std::unique_ptr<std::byte, HostFree> memory(static_cast<std::byte*>(p));
            cudaEvent_t e = nullptr;
            CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
            chunks_.push_back({std::move(memory), std::unique_ptr<CUevent_st, EventDestroy>(e)});
        } else {
            cudaGetLastError();  // not sticky: later calls must not report it
        }
    }
    if (chunks_.empty()) {
        return false;
    }
    if (next_ >= chunks_.size()) {
        next_ = 0;
    }
    current_ = next_++;
    used_ = 0;
    CUDA_CHECK(cudaEventSynchronize(chunks_[current_].read.get()));
    return true;
}

bool HostStaging::copy(std::span<const std::span<const std::byte>> parts, std::byte* dst,
                       cudaStream_t stream) {
    size_t n_bytes = 0;
    for (const std::span<const std::byte> part : parts) {
        n_bytes += part.size();
    }
    for (size_t done = 0; done < n_bytes;) {
        // What fits in the rest of the current chunk goes there; anything larger starts a chunk of its own.
        if (kChunkBytes - used_ < std::min(n_bytes - done, kChunkBytes) && !next_chunk()) {
            return false;  // only ever before the first chunk: the ring never shrinks
        }
        Chunk& c = chunks_[current_];
        const size_t n = std::min(kChunkBytes - used_, n_bytes - done);
        std::byte* staged = c.memory.get() + used_;
        fill_threads_.parallel_for(static_cast<int64_t>(n), kMinFillBytes, [&](int64_t begin, int64_t end) {
            copy_parts_range(parts, done + static_cast<size_t>(begin), done + static_cast<size_t>(end),
                             staged + begin);
        });
        CUDA_CHECK(cudaMemcpyAsync(dst + done, staged, n, cudaMemcpyHostToDevice, stream));
        CUDA_CHECK(cudaEventRecord(c.read.get(), stream));
        used_ = std::min(kChunkBytes, (used_ + n + kCopyAlign - 1) / kCopyAlign * kCopyAlign);
        done += n;
    }
    return true;
}

bool HostStaging::copy_back(const std::byte* src, std::span<const std::span<std::byte>> parts,
                            cudaStream_t stream) {
    size_t n_bytes = 0;
    for (const std::span<std::byte> part : parts) {
        n_bytes += part.size();
    }
    struct Piece {
        size_t chunk, begin, n;  // a chunk of the ring holds bytes [begin, begin + n) of src
    };
    std::deque<Piece> arriving;  // oldest first, as the ring hands out its chunks
    const auto read_out = [&] {
        const Piece p = arriving.front();
        arriving.pop_front();
        CUDA_CHECK(cudaEventSynchronize(chunks_[p.chunk].read.get()));
        const std::byte* staged = chunks_[p.chunk].memory.get();
        fill_threads_.parallel_for(static_cast<int64_t>(p.n), kMinFillBytes, [&](int64_t begin, int64_t end) {
            copy_to_parts_range(staged + begin, parts, p.begin + static_cast<size_t>(begin),
                                p.begin + static_cast<size_t>(end));
        });
    };
    for (size_t done = 0; done < n_bytes;) {
        used_ = kChunkBytes;  // each piece takes a chunk of its own
        if (!next_chunk()) {
            return false;  // only ever before the first chunk: the ring never shrinks
        }
        // A chunk still holding bytes not yet read out is read out before it takes new ones.
        while (std::any_of(arriving.begin(), arriving.end(),
                           [&](const Piece& p) { return p.chunk == current_; })) {
            read_out();
        }
        const size_t n = std::min(kChunkBytes, n_bytes - done);
        CUDA_CHECK(
            cudaMemcpyAsync(chunks_[current_].memory.get(), src + done, n, cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(cudaEventRecord(chunks_[current_].read.get(), stream));
        arriving.push_back({current_, done, n});
        done += n;
    }
    while (!arriving.empty()) {
        read_out();
    }
    used_ = kChunkBytes;
    return true;
}

}  // namespace folio::kernels
