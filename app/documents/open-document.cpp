#include "app/documents/document-source.h"
#include "app/documents/file-type.h"
#include "app/documents/image-document.h"
#include "app/documents/pdf-document.h"

namespace folio {

std::unique_ptr<DocumentSource> openDocument(const QString& path, const DocumentOptions& options) {
    const DetectedType type = detectFileType(path);
    switch (type.type) {
        case FileType::Pdf:
            return std::make_unique<PdfDocument>(path, options);
        case FileType::Image:
            return std::make_unique<ImageDocument>(path);
        case FileType::Unsupported:
            break;
    }
    failUnsupported(path, type);
}

}  // namespace folio
