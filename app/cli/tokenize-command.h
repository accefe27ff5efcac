// folio-cli tokenize: a model folder's tokenizer from the command line, for people checking a folder.
#pragma once

namespace folio::cli {

extern const char* const kTokenizeUsage;

// argv[first..] are the command's arguments. Prints to stdout; throws folio::Error for bad arguments or
// files.
int run_tokenize(int argc, char** argv, int first);

}  // namespace folio::cli
