#include "app/pipeline/block-task.h"

namespace folio {

namespace {

bool isPictureLabel(const QString& label) {
    return label == QLatin1String("image") || label == QLatin1String("header_image") ||
           label == QLatin1String("footer_image");
}

}  // namespace

const QList<BlockTaskChoice>& blockTaskChoices() {
    static const QList<BlockTaskChoice> kChoices = {
        {QStringLiteral("Text"), QLatin1String(kOcrTask), QStringLiteral("text")},
        {QStringLiteral("Table"), QLatin1String(kTableTask), QStringLiteral("table")},
        {QStringLiteral("Formula"), QLatin1String(kFormulaTask), QStringLiteral("display_formula")},
        {QStringLiteral("Chart"), QLatin1String(kChartTask), QStringLiteral("chart")},
        {QStringLiteral("Seal"), QLatin1String(kSealTask), QStringLiteral("seal")},
    };
    return kChoices;
}

const BlockTaskChoice* findBlockTask(const QString& promptOrName) {
    for (const BlockTaskChoice& choice : blockTaskChoices()) {
        if (choice.prompt == promptOrName || choice.name.compare(promptOrName, Qt::CaseInsensitive) == 0) {
            return &choice;
        }
    }
    return nullptr;
}

QString taskForLabel(const QString& label, const RecognitionOptions& options) {
    if (isPictureLabel(label)) {
        return options.ocrForImageBlocks ? QLatin1String(kOcrTask) : QString();
    }
    if (label == QLatin1String("chart")) {
        return options.chartRecognition ? QLatin1String(kChartTask) : QString();
    }
    if (label == QLatin1String("seal")) {
        return options.sealRecognition ? QLatin1String(kSealTask) : QString();
    }
    if (label == QLatin1String("table")) {
        return QLatin1String(kTableTask);
    }
    if (label.contains(QLatin1String("formula")) && label != QLatin1String("formula_number")) {
        return QLatin1String(kFormulaTask);
    }
    if (label == QLatin1String("spotting")) {
        return QLatin1String(kSpottingTask);
    }
    return QLatin1String(kOcrTask);
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
