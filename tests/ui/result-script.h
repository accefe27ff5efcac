// The value a script returns in a web page, for the main window's tests: in the result view's page as its own
// scripts see it, or beside them (where the page's may be off).
#pragma once

#include <QElapsedTimer>
#include <QTest>
#include <QVariant>
#include <QWebEnginePage>
#include <QWebEngineScript>
#include <QWebEngineView>

#include "ui/result-view/result-view.h"

namespace folio::test {

// Runs the script in the world and waits, at most 10 s, for its value.
inline QVariant runScript(QWebEnginePage* page, const QString& script, quint32 world) {
    QVariant result;
    bool done = false;
    page->runJavaScript(script, world, [&](const QVariant& value) {
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

inline QVariant evaluate(ResultView* view, const QString& script) {
    return runScript(view->webView()->page(), script, QWebEngineScript::MainWorld);
}

inline QVariant evaluateBeside(QWebEngineView* view, const QString& script) {
    return runScript(view->page(), script, QWebEngineScript::ApplicationWorld);
}

}  // namespace folio::test
