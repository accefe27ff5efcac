// How much of a sequence's unprocessed tokens one step takes.
#pragma once

#include <cstdint>
#include <span>

#include "sequence.h"

namespace folio {

// Tokens of [n_computed, n_tokens) to process in a step with `budget` tokens left. Everything when it fits.
// Otherwise, without chunked prefill, nothing; with it, a chunk of the budget whose end never falls inside
// an image: it shrinks back to the image's start when tokens come before the image in the chunk, and grows
// to the image's end when the image starts the chunk, so that an image is never split and always progresses.
int64_t prefill_chunk(int64_t n_computed, int64_t n_tokens, std::span<const ImageSpan> images, int64_t budget,
                      bool enable_chunked_prefill);

}  // namespace folio
