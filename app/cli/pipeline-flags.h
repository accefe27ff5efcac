// The document pipeline's flags that `ocr` and `bench --document` share: --dpi, --pages-in-flight,
// --render-threads, --layout-batch and the engine options' image pixel bounds.
#pragma once

#include "app/documents/document-source.h"
#include "app/options/cli-options.h"
#include "app/options/engine-options.h"
#include "app/pipeline/document-pipeline.h"

namespace folio::cli {

// --dpi (default kDefaultDpi), checked against kMinDpi..kMaxDpi.
DocumentOptions document_options_from(const Options& opt);

// The flags over options' values, and the crop pixel bounds where the engine options set them.
void apply_pipeline_flags(const Options& opt, const EngineOptions& engine, PipelineOptions& options);

}  // namespace folio::cli
