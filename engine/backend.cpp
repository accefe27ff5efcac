#include "backend.h"

#include "error.h"

namespace folio {

void Backend::begin_recording() {
    fail(name(), ": this backend cannot record work");
}

std::unique_ptr<RecordedWork> Backend::end_recording() {
    fail(name(), ": this backend cannot record work");
}

}  // namespace folio
