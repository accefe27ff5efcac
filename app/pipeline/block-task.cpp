#include "app/pipeline/block-task.h"

namespace folio {

namespace {

bool isPictureLabel(const QString& label) {
    return label == QLatin1String("image") || label == QLatin1String("header_image") ||
           label == QLatin1String("footer_image");
}

}  // namespace

QString taskForLabel(const QString& label, const RecognitionOptions& options) {
    if (isPictureLabel(label)) {
        return options.ocrForImageBlocks ? QStringLiteral("OCR:") : QString();
    }
    if (label == QLatin1String("chart")) {
        return options.chartRecognition ? QStringLiteral("Chart Recognition:") : QString();
    }
    if (label == QLatin1String("seal")) {
        return options.sealRecognition ? QStringLiteral("Seal Recognition:") : QString();
    }
    if (label == QLatin1String("table")) {
        return QStringLiteral("Table Recognition:");
    }
    if (label.contains(QLatin1String("formula")) && label != QLatin1String("formula_number")) {
        return QStringLiteral("Formula Recognition:");
    }
    if (label == QLatin1String("spotting")) {
        return QStringLiteral("Spotting:");
    }
    return QStringLiteral("OCR:");
}

bool savedAsImage(const QString& label, const RecognitionOptions& options) {
    return isPictureLabel(label) || label == QLatin1String("seal") ||
           (label == QLatin1String("chart") && !options.chartRecognition);
}

PixelBounds pixelBoundsForLabel(const QString& label, const RecognitionOptions& options) {
    if (const auto it = options.labelPixels.constFind(label); it != options.labelPixels.constEnd()) {
        return *it;
    }
    if (label == QLatin1String("spotting")) {
        return kSpottingPixels;
    }
    return options.pixels;
}

bool stackable(const QString& label, const RecognitionOptions& options) {
    return !taskForLabel(label, options).isEmpty() && label != QLatin1String("table");
}

}  // namespace folio
