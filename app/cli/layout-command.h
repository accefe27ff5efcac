// folio-cli layout: a layout model (PP-DocLayoutV2 or V3) over page images, printing the blocks as JSON and
// optionally drawing them onto the pages.
#pragma once

namespace folio::cli {

extern const char* const kLayoutUsage;

// argv[first..] are the command's arguments. Prints JSON to stdout; throws folio::Error for bad arguments
// or files.
int run_layout(int argc, char** argv, int first);

}  // namespace folio::cli
