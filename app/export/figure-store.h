// A document's figures: the images of its blocks saved as JPEG files named as PaddleOCR names them,
// img_in_<label>_box_<x1>_<y1>_<x2>_<y2>.jpg (a name used twice in one document gets _2, _3, ...), in
// imgs/<stem>/ under the output folder, so that documents exported to one folder keep their figures apart.
// Files are written to a staging folder there and moved into place by commit().
#pragma once

#include <QString>
#include <QStringList>
#include <QTemporaryDir>
#include <memory>
#include <set>

#include "app/documents/page-result.h"

namespace folio {

class FigureStore {
public:
    // Throws folio::Error naming the output folder where the staging folder cannot be made.
    void begin(const QString& outputDir, const QString& stem);
    // Saves the block's image and returns its link relative to the output folder; throws folio::Error naming
    // the file that cannot be written.
    QString add(const BlockResult& block);
    // Moves the saved files into imgs/<stem>/, replacing files of the same name; returns their absolute
    // paths. Throws folio::Error naming the file that cannot be moved, having taken back what it had moved.
    QStringList commit();
    // Removes the staged files, and the committed ones after commit().
    void discard();

private:
    QString outputDir_;
    QString stem_;
    std::unique_ptr<QTemporaryDir> staging_;
    std::set<QString> names_;
    QStringList committed_;
};

}  // namespace folio
