// Fuzzes the safetensors parser: any input either parses into views that lie inside it, or throws
// folio::Error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "engine/common/error.h"
#include "engine/files/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto* begin = reinterpret_cast<const std::byte*>(data);
    try {
        const folio::SafetensorsHeader header = folio::parse_safetensors(begin, size, "fuzz.safetensors");
        for (const folio::TensorView& tensor : header.tensors) {
            if (tensor.data < begin || tensor.n_bytes > size || tensor.data + tensor.n_bytes > begin + size) {
                std::abort();
            }
            const auto n_elements = static_cast<size_t>(tensor.n_elements());
            if (tensor.n_bytes != n_elements * folio::dtype_size(tensor.dtype)) {
                std::abort();
            }
            if (folio::to_f32(tensor).size() != n_elements) {
                std::abort();
            }
            if (tensor.dtype != folio::DType::F32 && tensor.dtype != folio::DType::F16 &&
                tensor.dtype != folio::DType::BF16 && folio::to_i64(tensor).size() != n_elements) {
                std::abort();
            }
        }
    } catch (const folio::Error&) {
    }
    return 0;
}
