#include "preemption-policy.h"

namespace folio {

Sequence* choose_preemption_victim(std::span<Sequence* const> running) {
    Sequence* victim = nullptr;
    for (Sequence* seq : running) {
        if (!victim || seq->start_order > victim->start_order) {
            victim = seq;
        }
    }
    return victim;
}

}  // namespace folio
