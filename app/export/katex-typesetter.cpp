#include "app/export/katex-typesetter.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJSEngine>
#include <QJSValue>
#include <QLoggingCategory>
#include <QRegularExpression>
#include <QSet>
#include <mutex>
#include <utility>

#include "app/export/output-folder.h"
#include "engine/common/error.h"

namespace folio {

namespace {

// Qt's script compiler warns of every variable a minified script uses before its declaration (tens of lines
// for katex.min.js, which is valid JavaScript); those warnings are kept off the terminal, other categories go
// to the filter that was there before.
QLoggingCategory::CategoryFilter previousFilter = nullptr;

void quietScriptCompiler(QLoggingCategory* category) {
    if (previousFilter != nullptr) {
        previousFilter(category);
    }
    if (qstrcmp(category->categoryName(), "qt.qml.compiler") == 0) {
        category->setEnabled(QtWarningMsg, false);
    }
}

void installQuietScriptCompiler() {
    static std::once_flag once;
    std::call_once(once, [] { previousFilter = QLoggingCategory::installFilter(quietScriptCompiler); });
}

// The text of escapeHtml() back: &lt; &gt; &quot; &#x27; and, last, &amp;.
QString unescapeHtml(QString text) {
    text.replace(QLatin1String("&lt;"), QLatin1String("<"));
    text.replace(QLatin1String("&gt;"), QLatin1String(">"));
    text.replace(QLatin1String("&quot;"), QLatin1String("\""));
    text.replace(QLatin1String("&#x27;"), QLatin1String("'"));
    text.replace(QLatin1String("&amp;"), QLatin1String("&"));
    return text;
}

// A formula's LaTeX without the $ or $$ around it, as the math spans hold it.
QString withoutDelimiters(const QString& text) {
    QString tex = text.trimmed();
    for (const QLatin1String delimiter : {QLatin1String("$$"), QLatin1String("$")}) {
        if (tex.size() >= 2 * delimiter.size() && tex.startsWith(delimiter) && tex.endsWith(delimiter)) {
            return tex.mid(delimiter.size(), tex.size() - 2 * delimiter.size()).trimmed();
        }
    }
    return tex;
}

// Copies `from` to `to` through a temporary file beside it, keeping a file of the same size already there.
void copyFile(const QString& from, const QString& to) {
    const QFileInfo source(from);
    const QFileInfo target(to);
    if (target.exists() && target.size() == source.size()) {
        return;
    }
    const QString partial = to + QStringLiteral(".partial");
    QFile::remove(partial);
    QFile in(from);
    if (!in.copy(partial)) {
        fail(to.toStdString(), ": cannot copy KaTeX's file ", from.toStdString(),
             " there: ", in.errorString().toStdString());
    }
    QFile::remove(to);
    if (!QFile::rename(partial, to)) {
        QFile::remove(partial);
        fail(to.toStdString(), ": cannot write the file");
    }
}

}  // namespace

QString katexDirectory() {
    const QString env = qEnvironmentVariable("FOLIO_KATEX_DIR");
    return env.isEmpty() ? QStringLiteral("/usr/share/javascript/katex") : env;
}

struct KatexTypesetter::Script {
    QJSEngine engine;
    QJSValue render;
};

KatexTypesetter::KatexTypesetter(QString directory) : directory_(std::move(directory)) {}

KatexTypesetter::~KatexTypesetter() = default;

bool KatexTypesetter::ready() {
    if (tried_) {
        return problem_.isEmpty();
    }
    tried_ = true;
    const QString script = QDir(directory_).filePath(QStringLiteral("katex.min.js"));
    const QString style = QDir(directory_).filePath(QStringLiteral("katex.min.css"));
    if (!QFileInfo::exists(script) || !QFileInfo::exists(style)) {
        problem_ = QStringLiteral("KaTeX's files are not in %1 (Debian's libjs-katex)").arg(directory_);
        return false;
    }
    if (QCoreApplication::instance() == nullptr) {
        problem_ = QStringLiteral("KaTeX needs a Qt application to run in");
        return false;
    }
    QFile file(script);
    if (!file.open(QIODevice::ReadOnly)) {
        problem_ = QStringLiteral("%1: %2").arg(script, file.errorString());
        return false;
    }
    installQuietScriptCompiler();
    auto loaded = std::make_unique<Script>();
    const QJSValue result = loaded->engine.evaluate(QString::fromUtf8(file.readAll()), script);
    loaded->render = loaded->engine.evaluate(
        QStringLiteral("(function (tex, display) { return katex.renderToString(tex, { displayMode: display, "
                       "throwOnError: false, strict: 'ignore', output: 'htmlAndMathml' }); })"));
    if (result.isError() || !loaded->render.isCallable() ||
        loaded->engine.evaluate(QStringLiteral("typeof katex")).toString() != QLatin1String("object")) {
        problem_ = QStringLiteral("%1 did not run: %2").arg(script, result.toString());
        return false;
    }
    script_ = std::move(loaded);
    return true;
}

QString KatexTypesetter::render(const QString& tex, bool display) {
    if (!ready()) {
        return {};
    }
    const QJSValue html = script_->render.call({QJSValue(tex), QJSValue(display)});
    return html.isString() ? html.toString() : QString();
}

QString KatexTypesetter::typesetMathSpans(const QString& html, int* typeset, int* left) {
    static const QRegularExpression kSpan(
        QStringLiteral("<span class=\"math (inline|display)\">([^<]*)</span>"));
    if (!html.contains(QLatin1String("<span class=\"math "))) {
        return html;
    }
    const bool katex = ready();
    QString out;
    out.reserve(html.size() * 4);
    qsizetype at = 0;
    for (QRegularExpressionMatchIterator it = kSpan.globalMatch(html); it.hasNext();) {
        const QRegularExpressionMatch match = it.next();
        const QString tex = withoutDelimiters(unescapeHtml(match.captured(2)));
        if (tex.isEmpty()) {
            continue;  // nothing to typeset: copied with the text around it
        }
        const QString rendered =
            katex ? render(tex, match.capturedView(1) == QLatin1String("display")) : QString();
        out += QStringView(html).mid(at, match.capturedStart() - at);
        out += rendered.isEmpty() ? match.capturedView(0) : QStringView(rendered);
        at = match.capturedEnd();
        int* counter = rendered.isEmpty() ? left : typeset;
        if (counter != nullptr) {
            ++*counter;
        }
    }
    out += QStringView(html).mid(at);
    return out;
}

void KatexTypesetter::copyAssets(const QString& folder) const {
    const QDir source(directory_);
    const QString styleFile = source.filePath(QStringLiteral("katex.min.css"));
    QFile style(styleFile);
    if (!style.open(QIODevice::ReadOnly)) {
        fail(styleFile.toStdString(),
             ": cannot read KaTeX's stylesheet: ", style.errorString().toStdString());
    }
    const QString css = QString::fromUtf8(style.readAll());
    makeOutputFolder(QDir(folder).filePath(QStringLiteral("fonts")),
                     "folder of KaTeX's stylesheet and fonts");
    copyFile(styleFile, QDir(folder).filePath(QStringLiteral("katex.min.css")));
    // The fonts the stylesheet names (url(fonts/KaTeX_Main-Regular.woff2), ...), every format it offers.
    static const QRegularExpression kFont(QStringLiteral("url\\((fonts/[A-Za-z0-9_.-]+)\\)"));
    QSet<QString> fonts;
    for (QRegularExpressionMatchIterator it = kFont.globalMatch(css); it.hasNext();) {
        fonts.insert(it.next().captured(1));
    }
    for (const QString& font : std::as_const(fonts)) {
        // A format missing from the installation is left out: browsers take the next one the rule offers.
        if (QFileInfo::exists(source.filePath(font))) {
            copyFile(source.filePath(font), QDir(folder).filePath(font));
        }
    }
}

}  // namespace folio
