// The server's document parser on the document pipeline: a request's file written to a private temporary
// folder, run through DocumentPipeline with the request's options over the server's, and each page made into
// PaddleX's layoutParsingResults[] item from what folio-cli ocr writes for the same page (the page's
// Markdown, its JSON object without input_path as prunedResult, its figures as base64 JPEG keyed by their
// Markdown links). The service's other requests go on beside it: the pipeline's blocks run at batch priority.
#pragma once

#include "app/documents/document-source.h"
#include "app/pipeline/document-pipeline.h"
#include "app/server/document-parser.h"
#include "engine/service/engine-service.h"

namespace folio {

struct PipelineParserParams {
    int maxPages = 100;               // pages a request's file may have (--max-pages)
    DocumentOptions document;         // how PDF pages are rendered
    PipelineOptions pipeline;         // the server's options, which a request's fields override
    bool visualizeByDefault = false;  // outputImages and inputImage where a request does not say
    int maxOutputImageSide = 2000;    // visualised images scaled down to fit this square, as PaddleX does
};

class PipelineDocumentParser final : public server::DocumentParser {
public:
    // The service must be Ready, hold a layout model and outlive the parser.
    PipelineDocumentParser(EngineService& service, PipelineParserParams params);

    server::ParsedDocument parse(const server::LayoutParsingRequest& request, std::span<const uint8_t> file,
                                 const std::function<void(server::ParsedPage page)>& on_page,
                                 const std::function<bool()>& cancelled) override;

    // The pipeline's options for a request: the server's, with each field the request gives over them.
    PipelineOptions optionsFor(const server::LayoutParsingRequest& request) const;

private:
    EngineService& service_;
    PipelineParserParams params_;
};

// The Markdown labels a request leaves in: every label Markdown has a form for less markdownIgnoreLabels, or
// PaddleOCR's default set where the request gives none.
QSet<QString> markdownLabelsFor(const server::LayoutParsingRequest& request);

}  // namespace folio
