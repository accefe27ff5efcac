// The value a script returns in a result view's page, for the main window's tests.
#pragma once

#include <QElapsedTimer>
#include <QTest>
#include <QVariant>
#include <QWebEnginePage>
#include <QWebEngineView>

#include "ui/result-view/result-view.h"

namespace folio::test {

inline QVariant evaluate(ResultView* view, const QString& script) {
    QVariant result;
    bool done = false;
    view->webView()->page()->runJavaScript(script, [&](const QVariant& value) {
        result = value;
        done = true;
    });
    QElapsedTimer timer;
    timer.start();
    while (!done && timer.elapsed() < 10000) {
        QTest::qWait(10);
    }
    return result;
}

}  // namespace folio::test
