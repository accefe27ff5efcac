#include "engine/runtime/preemption-policy.h"

namespace folio {

Sequence* choose_preemption_victim(std::span<Sequence* const> running, Priority at_least) {
    Sequence* victim = nullptr;
    for (Sequence* seq : running) {
        if (seq->priority < at_least) {
            continue;
        }
        if (!victim || seq->priority > victim->priority ||
            (seq->priority == victim->priority && seq->start_order > victim->start_order)) {
            victim = seq;
        }
    }
    return victim;
}

}  // namespace folio
