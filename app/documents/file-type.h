// What kind of input a file is, from its first bytes rather than its name: a PDF, an image Folio decodes, or
// something else, with a description of the something else for error messages.
#pragma once

#include <QByteArray>
#include <QByteArrayView>
#include <QString>
#include <optional>

#include "app/images/image-format.h"

namespace folio {

enum class FileType { Unsupported, Pdf, Image };

// Bytes read from the start of a file to tell its type; a PDF's header may follow up to 1024 bytes of
// other data, as PDF readers allow.
inline constexpr qsizetype kFileTypeProbeBytes = 1024 + 8;

struct DetectedType {
    FileType type = FileType::Unsupported;
    std::optional<ImageFormat> imageFormat;  // images
    QString description;  // what the file is: "a PDF", "a PNG image", "an empty file", "a GIF image", ...
};

// The type of a file whose first bytes are `head` (up to kFileTypeProbeBytes).
DetectedType detectFileType(QByteArrayView head);

// Reads the start of the file at `path` and tells its type. Throws folio::Error naming the file where it
// cannot be opened or read, or is a folder.
DetectedType detectFileType(const QString& path);

// Whether the file name's suffix is one of the supported types' (.pdf, .png, .jpg, .tif, ...).
bool hasSupportedSuffix(const QString& path);

// Throws folio::Error naming the file and saying what it is instead of a PDF or a supported image.
[[noreturn]] void failUnsupported(const QString& path, const DetectedType& type);

// "PDF, PNG, JPEG, TIFF, BMP or WebP": the inputs Folio reads, for messages.
QString supportedTypesText();

}  // namespace folio
