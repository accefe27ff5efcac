#include "app/pipeline/block-request.h"

#include "app/documents/page-image.h"
#include "app/pipeline/block-crop.h"

namespace folio {

QImage cropForTask(const QImage& crop, const QString& task) {
    if (task == QLatin1String(kFormulaTask)) {
        const QImage trimmed = cropMargin(crop);
        if (trimmed.width() > 2 && trimmed.height() > 2) {
            return trimmed;
        }
    }
    return crop;
}

RequestSpec blockRequest(const QImage& crop, const QString& label, const QString& task,
                         const RecognitionOptions& recognition, const SamplingParams& sampling) {
    GenerationOptions generation;
    generation.max_tokens = recognition.maxNewTokens;
    generation.sampling = sampling;
    generation.fit_max_tokens = true;
    // Spotting's answer is its location tokens, which are special tokens.
    generation.skip_special_tokens = label != QLatin1String("spotting");
    RequestSpec spec(ImageTask{{toEngineImage(crop)}, task.toStdString()}, generation);
    const PixelBounds bounds = pixelBoundsForLabel(label, recognition);
    spec.image_pixels = ImagePixelBounds{bounds.minPixels, bounds.maxPixels};
    return spec;
}

}  // namespace folio
