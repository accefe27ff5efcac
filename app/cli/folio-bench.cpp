// folio-bench: `folio-cli bench` on its own, without image decoding and its libraries, for headless GPU
// machines. Same options, same JSON.
#include <iostream>
#include <string>

#include "app/cli/bench.h"
#include "app/options/cli-options.h"
#include "app/options/engine-options.h"

int main(int argc, char** argv) {
    try {
        const folio::cli::Options options(argc, argv, 1);
        if (options.has("--help")) {
            std::cout << "usage:\n" << folio::cli::kBenchUsage << "\n" << folio::cli::engine_usage();
            return 0;
        }
        return folio::cli::run_bench(options);
    } catch (const std::exception& e) {
        std::cerr << "folio-bench: error: " << e.what() << "\n";
        return 1;
    }
}
