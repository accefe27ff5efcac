// A document whose pages' results are in the model already, as a finished run leaves them, for the main
// window's tests that need no engine.
#pragma once

#include <QImage>
#include <QStringList>
#include <vector>

#include "app/document-model/document-model.h"

namespace folio::test {

// A text block of a page at height y.
inline BlockResult textBlock(int id, int y, const QString& content) {
    BlockResult b;
    b.id = id;
    b.label = QStringLiteral("text");
    b.content = content;
    b.box = {60, y, 940, y + 120};
    b.order = id + 1;
    return b;
}

// The document at path, with a white 1000x1400 page for each list of block texts.
inline int addFinishedDocument(DocumentModel& model, const QString& path,
                               const std::vector<QStringList>& pages) {
    const int doc = model.addDocument(path);
    model.setPageSizes(doc, std::vector<QSize>(pages.size(), QSize(1000, 1400)));
    for (int p = 0; p < static_cast<int>(pages.size()); ++p) {
        QImage image(1000, 1400, QImage::Format_RGB888);
        image.fill(Qt::white);
        PageResult result;
        result.pageIndex = p;
        result.width = image.width();
        result.height = image.height();
        result.image = image;
        const QStringList& texts = pages[static_cast<size_t>(p)];
        for (int b = 0; b < texts.size(); ++b) {
            result.blocks.push_back(textBlock(b, 80 + 180 * b, texts[b]));
        }
        model.pageFinished(doc, p, result);
    }
    model.setDocumentState(doc, DocumentState::Done);
    return doc;
}

}  // namespace folio::test
