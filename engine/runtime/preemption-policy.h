// Which running sequence gives its blocks back when the pool runs out.
#pragma once

#include <span>

#include "engine/runtime/sequence.h"

namespace folio {

// Of the running sequences whose class is `at_least` or lower (Batch is lower than Interactive), one of the
// lowest class, and of those the one that started most recently: it has the least work to recompute and
// waited least. Null when none qualifies.
Sequence* choose_preemption_victim(std::span<Sequence* const> running,
                                   Priority at_least = Priority::Interactive);

}  // namespace folio
