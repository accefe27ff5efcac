#include "app/documents/file-type.h"

#include <QFile>
#include <QFileInfo>
#include <array>
#include <span>

#include "engine/common/error.h"

namespace folio {

namespace {

bool startsWith(QByteArrayView bytes, QByteArrayView magic, qsizetype offset = 0) {
    return bytes.size() >= offset + magic.size() && bytes.sliced(offset, magic.size()) == magic;
}

// File types that are neither PDFs nor supported images, named so that a message can say what was given.
QString describeOther(QByteArrayView head) {
    struct Known {
        QByteArrayView magic;
        qsizetype offset;
        const char* description;
    };
    static const std::array<Known, 12> known = {{
        {"GIF8", 0, "a GIF image"},
        {QByteArrayView("\0\0\0\x0cjP  ", 8), 0, "a JPEG 2000 image"},
        {"ftypheic", 4, "a HEIC image"},
        {"ftypheix", 4, "a HEIC image"},
        {"ftypmif1", 4, "a HEIF image"},
        {"ftypavif", 4, "an AVIF image"},
        {"AT&TFORM", 0, "a DjVu document"},
        {"PK\x03\x04", 0, "a ZIP archive (an office document or EPUB?)"},
        {"%!PS", 0, "a PostScript file"},
        {QByteArrayView("II+\0", 4), 0, "a BigTIFF image"},
        {QByteArrayView("MM\0+", 4), 0, "a BigTIFF image"},
        {"\xd0\xcf\x11\xe0", 0, "an old Microsoft Office document"},
    }};
    for (const Known& k : known) {
        if (startsWith(head, k.magic, k.offset)) {
            return QString::fromLatin1(k.description);
        }
    }
    return QStringLiteral("not a PDF or an image");
}

}  // namespace

DetectedType detectFileType(QByteArrayView head) {
    if (head.isEmpty()) {
        return {FileType::Unsupported, std::nullopt, QStringLiteral("an empty file")};
    }
    const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(head.data()),
                                         static_cast<size_t>(head.size()));
    if (const auto format = sniff_image_format(bytes)) {
        return {FileType::Image, format,
                QStringLiteral("a %1 image").arg(QString::fromLatin1(image_format_name(*format)))};
    }
    if (head.first(std::min<qsizetype>(head.size(), 1024 + 5)).indexOf("%PDF-") >= 0) {
        return {FileType::Pdf, std::nullopt, QStringLiteral("a PDF")};
    }
    return {FileType::Unsupported, std::nullopt, describeOther(head)};
}

DetectedType detectFileType(const QString& path) {
    const QFileInfo info(path);
    if (info.isDir()) {
        fail(path.toStdString(), ": is a folder, not a file");
    }
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        fail(path.toStdString(), ": cannot open the file: ",
             info.exists() ? file.errorString().toStdString() : "it does not exist");
    }
    const QByteArray head = file.read(kFileTypeProbeBytes);
    if (head.isEmpty() && file.error() != QFileDevice::NoError) {
        fail(path.toStdString(), ": cannot read the file: ", file.errorString().toStdString());
    }
    return detectFileType(QByteArrayView(head));
}

bool hasSupportedSuffix(const QString& path) {
    static const QStringList suffixes = {"pdf", "png",  "jpg", "jpeg", "jpe", "jfif",
                                         "tif", "tiff", "bmp", "dib",  "webp"};
    return suffixes.contains(QFileInfo(path).suffix(), Qt::CaseInsensitive);
}

void failUnsupported(const QString& path, const DetectedType& type) {
    if (hasSupportedSuffix(path)) {
        fail(path.toStdString(), ": named .", QFileInfo(path).suffix().toStdString(),
             " but its content is not a PDF or a supported image (", type.description.toStdString(),
             "; a damaged or misnamed file?)");
    }
    fail(path.toStdString(), ": unsupported file (", type.description.toStdString(), "); Folio reads ",
         supportedTypesText().toStdString());
}

QString supportedTypesText() {
    return QStringLiteral("PDF, PNG, JPEG, TIFF, BMP or WebP");
}

}  // namespace folio
