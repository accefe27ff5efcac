// How much of a sequence's unprocessed tokens one step takes.
#pragma once

#include <cstdint>
#include <span>

#include "engine/runtime/sequence.h"

namespace folio {

// Tokens of [n_computed, n_tokens) to process in a step with `budget` tokens left. Everything when it fits.
// Otherwise, without chunked prefill, nothing; with it, a chunk of the budget that, when it reaches into an
// image, grows to take the whole image (as FastDeploy chunks multimodal prompts): an image is never split,
// and the step may take more than its budget by up to an image less one token.
int64_t prefill_chunk(int64_t n_computed, int64_t n_tokens, std::span<const ImageSpan> images, int64_t budget,
                      bool enable_chunked_prefill);

}  // namespace folio
