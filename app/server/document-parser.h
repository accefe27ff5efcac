// What the server asks of the document pipeline behind POST /layout-parsing and the chat route that takes a
// file: a whole PDF or image parsed into PaddleX's per-page results. The server knows only this interface;
// app/server/pipeline-document-parser.h implements it on the document pipeline (Qt), so that the server
// itself stays without Qt and is tested with a fake.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "app/server/layout-parsing.h"

namespace folio::server {

// One page as PaddleX's layoutParsingResults[] item has it: prunedResult, markdown {text, images},
// outputImages and inputImage where visualised.
struct ParsedPage {
    nlohmann::ordered_json result;
    std::string markdown;  // the page's Markdown (result's markdown.text), for the chat route
};

struct ParsedDocument {
    nlohmann::ordered_json
        data_info;  // PaddleX's dataInfo: {"type": "pdf", numPages, pages} or an image's size
    // The document as a Word file (outputFormats ["docx"]): its bytes and name.
    std::vector<uint8_t> docx;
    std::string docx_name;
};

class DocumentParser {
public:
    virtual ~DocumentParser() = default;
    // Parses the file's pages through the pipeline as the request's options say, handing each page to
    // on_page in order as it completes; `cancelled` is asked every 100 ms or so and, once true, ends the run
    // within an engine step. Throws ApiError: 422 for a file that is not a PDF or image it reads (or not the
    // fileType given), a password-protected PDF, more pages than the server takes; 499 when cancelled; 500
    // for a page that could not be rendered or laid out.
    virtual ParsedDocument parse(const LayoutParsingRequest& request, std::span<const uint8_t> file,
                                 const std::function<void(ParsedPage page)>& on_page,
                                 const std::function<bool()>& cancelled) = 0;
};

}  // namespace folio::server
