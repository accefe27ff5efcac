// For the main window's tests that need no engine: a document whose pages' results are in the model already,
// as a finished run leaves them, and a window over such documents with an engine that loads nothing.
#pragma once

#include <QAction>
#include <QImage>
#include <QStringList>
#include <QTest>
#include <memory>
#include <vector>

#include "app/document-model/document-model.h"
#include "app/i18n/translation-loader.h"
#include "app/jobs/engine-host.h"
#include "app/jobs/job-controller.h"
#include "ui/main-window/main-window.h"

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

// The main window over its own model and an engine that loads nothing, in English (so that plural forms read
// as the app says them). The window goes first, before the controller and the engine it uses.
struct IdleWindow {
    TranslationLoader translations;
    DocumentModel model;
    EngineHost engine;
    JobController jobs{engine.service(), model};
    std::unique_ptr<MainWindow> window;

    IdleWindow() {
        translations.setLanguage(QStringLiteral("en"));
        window = std::make_unique<MainWindow>(model, jobs, engine);
        window->resize(1500, 900);
    }

    // Shows the window and makes it the active one, so that keys reach it; false where it did not become so.
    bool show() {
        window->show();
        window->activateWindow();
        return QTest::qWaitForWindowActive(window.get());
    }

    QAction* action(const char* name) const { return window->findChild<QAction*>(QString::fromLatin1(name)); }
};

}  // namespace folio::test
