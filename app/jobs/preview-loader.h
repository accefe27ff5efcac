// Opens documents in the background as they are added, so that their pages show at once: page sizes at the
// pipeline's resolution and small previews for thumbnails, delivered to the model on the GUI thread.
#pragma once

#include <QHash>
#include <QObject>
#include <QSet>
#include <QThreadPool>
#include <atomic>
#include <memory>

#include "app/document-model/document-model.h"
#include "app/documents/document-source.h"

namespace folio {

class PreviewLoader : public QObject {
    Q_OBJECT

public:
    explicit PreviewLoader(DocumentModel& model, QObject* parent = nullptr);
    ~PreviewLoader() override;

    // Resolution of the thumbnails' renderings.
    static constexpr int kPreviewDpi = 40;

    void setDocumentOptions(const DocumentOptions& options) { options_ = options; }
    // Opens the model's document `doc` on a pool thread.
    void load(int doc);
    // Renders a page whose image the model let go of again (PageRenderer) on a pool thread and hands it to
    // the model; a request for a page already under way is not repeated.
    void loadPageImage(int doc, int page);
    // Waits for every load under way (tests).
    void waitForDone() { pool_.waitForDone(); }

Q_SIGNALS:
    void documentOpened(int doc);
    void openFailed(int doc, const QString& message);
    void pageImageFailed(int doc, int page, const QString& message);

private:
    DocumentModel& model_;
    DocumentOptions options_;
    QThreadPool pool_;
    QSet<std::pair<int, int>> imagesUnderWay_;
    QHash<int, std::shared_ptr<std::atomic<bool>>> closed_;  // per document loaded: set once it closes
    std::shared_ptr<std::atomic<bool>> stopping_ = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace folio
