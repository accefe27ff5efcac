// The tensor cores' m16n8k16 product on bfloat16 fragments (sm_80 and up) with ldmatrix's fragment loads,
// shared by the attention kernels and the convolutions, and the m16n8k8 product on TF32 fragments.
// In a warp, lane holds rows g = lane / 4 and g + 8 and columns 2 (lane % 4) + {0, 1} (and + 8) of each
// fragment: A [16, 16] as four registers (rows g, g + 8 of the lower columns, then of the upper), B [16, 8]
// as two (rows 2 (lane % 4) + {0, 1} and + 8 of column g), C [16, 8] as four floats (row g, then row g + 8).
#pragma once

#include <cstdint>

#include <cuda_bf16.h>

namespace folio::kernels {

// Two floats as a bfloat16 pair, the first in the low half (the lower column of a fragment).
__device__ inline uint32_t pack_bf16(float lo, float hi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
}

// c += a · b on the tensor cores: a [16, 16] bf16 (row-major fragment), b [16, 8] bf16 (column fragment),
// c [16, 8] float32.
__device__ inline void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four 8x8 bfloat16 matrices from shared memory, lanes 8m to 8m + 7 giving the addresses of matrix m's rows:
// a lane gets row lane / 4, columns 2 (lane % 4) + {0, 1} of each (with trans, column lane / 4, rows
// 2 (lane % 4) + {0, 1}), as the tensor cores' fragments take them.
__device__ inline void load_matrices(uint32_t (&m)[4], const void* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(m[0]), "=r"(m[1]), "=r"(m[2]), "=r"(m[3])
                 : "r"(static_cast<uint32_t>(__cvta_generic_to_shared(row)))
                 : "memory");
}

__device__ inline void load_matrices_transposed(uint32_t (&m)[4], const void* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(m[0]), "=r"(m[1]), "=r"(m[2]), "=r"(m[3])
                 : "r"(static_cast<uint32_t>(__cvta_generic_to_shared(row)))
                 : "memory");
}

// v rounded to TF32 (10 mantissa bits, to nearest, ties away from zero), in a float's bits.
__device__ inline uint32_t to_tf32(float v) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}

// c += a · b on the tensor cores: a [16, 8] TF32 (rows g, g + 8 at columns lane % 4, then at + 4), b [8, 8]
// TF32 (rows lane % 4 and + 4 of column g), c [16, 8] float32 as for mma_bf16.
__device__ inline void mma_tf32(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

}  // namespace folio::kernels
