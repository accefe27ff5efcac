// Which running sequence gives its blocks back when the pool runs out.
#pragma once

#include <span>

#include "sequence.h"

namespace folio {

// The sequence that started running most recently; it has the least work to recompute and waited least.
// Null when none runs.
Sequence* choose_preemption_victim(std::span<Sequence* const> running);

}  // namespace folio
