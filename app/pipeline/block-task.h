// What recognition a layout block gets, as PaddleOCR-VL's pipeline decides it: the task prompt for its label,
// whether it is kept as an image instead, and the pixel bounds its crop is resized within.
#pragma once

#include <QHash>
#include <QList>
#include <QString>
#include <cstdint>

namespace folio {

struct PixelBounds {
    int64_t minPixels = 0;
    int64_t maxPixels = 0;
};

struct RecognitionOptions {
    bool chartRecognition = false;        // charts: "Chart Recognition:", else kept as images
    bool sealRecognition = false;         // seals: "Seal Recognition:", else kept as images
    bool ocrForImageBlocks = false;       // image, header_image and footer_image blocks read with "OCR:" too
    bool stackTextBlocks = true;          // adjacent text blocks stacked into one crop (merge_layout_blocks)
    PixelBounds pixels{112896, 1003520};  // the pipeline's bounds for every crop
    QHash<QString, PixelBounds> labelPixels;  // bounds for one label instead
    int maxNewTokens = 4096;
};

// The task prompts PaddleOCR-VL takes.
inline constexpr char kOcrTask[] = "OCR:";
inline constexpr char kTableTask[] = "Table Recognition:";
inline constexpr char kFormulaTask[] = "Formula Recognition:";
inline constexpr char kChartTask[] = "Chart Recognition:";
inline constexpr char kSealTask[] = "Seal Recognition:";
inline constexpr char kSpottingTask[] = "Spotting:";

// A recognition task a block can be (re-)run with.
struct BlockTaskChoice {
    QString name;    // "Text", "Table", ...
    QString prompt;  // "OCR:", "Table Recognition:", ...
    QString label;   // the label a block recognised this way gets: "text", "table", ...
};
const QList<BlockTaskChoice>& blockTaskChoices();
// The choice of a prompt or a name; nullptr where none.
const BlockTaskChoice* findBlockTask(const QString& promptOrName);

// The task prompt of a block with this label, or an empty string when it is kept as an image.
QString taskForLabel(const QString& label, const RecognitionOptions& options);

// Whether a block of this label is saved as an image file (PaddleOCR's visual labels: image, header_image,
// footer_image and seal, and chart unless charts are recognised), whether or not it is also recognised.
bool savedAsImage(const QString& label, const RecognitionOptions& options);

// The pixel bounds for a block's crop.
PixelBounds pixelBoundsForLabel(const QString& label, const RecognitionOptions& options);

// Labels whose blocks are never stacked with others (kept as images, and tables).
bool stackable(const QString& label, const RecognitionOptions& options);

// "Spotting:" on a whole page: PaddleOCR-VL-1.5's bounds for it.
inline constexpr PixelBounds kSpottingPixels{112896, 1605632};

}  // namespace folio
