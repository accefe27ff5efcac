// folio-cli ocr: documents (PDFs, images, folders) to Markdown, JSON, HTML, searchable PDF and XLSX with the
// document pipeline.
#pragma once

#include "app/options/cli-options.h"

namespace folio::cli {

extern const char* const kOcrUsage;

// Exit codes of folio-cli ocr.
inline constexpr int kOcrOk = 0;           // every page of every document written
inline constexpr int kOcrSetupFailed = 1;  // nothing ran: options, models, output folder
inline constexpr int kOcrSomeFailed = 3;   // some documents, pages or blocks failed; the rest is written
inline constexpr int kOcrCancelled = 130;  // interrupted (Ctrl-C); pages done so far are written

int run_ocr(int argc, char** argv, int first);

extern const char* const kSummaryUsage;
// folio-cli summary REPORT.json...: the shards' reports of one run merged as JSON on stdout, a line on
// stderr; exit 0 when every shard is present and no document failed, 3 otherwise.
int run_summary(int argc, char** argv, int first);

}  // namespace folio::cli
