// The document pipeline end to end for folio-cli bench --document: PDFs rendered, laid out, cut into blocks,
// recognised and assembled as `ocr` runs them, the output discarded; pages a second and where the reading
// thread's time went, as JSON.
#pragma once

#include <nlohmann/json.hpp>

#include "app/options/cli-options.h"

namespace folio::cli {

// The options are bench's: --document FILE (repeated), --layout-model DIR, --model DIR or random weights with
// --tokenizer DIR, --block-tokens, --dpi, --pages-in-flight, --layout-batch, --render-threads and the engine
// options.
nlohmann::json bench_documents(const Options& opt);

}  // namespace folio::cli
