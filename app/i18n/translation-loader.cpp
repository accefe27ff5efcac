#include "app/i18n/translation-loader.h"

#include <QCoreApplication>
#include <QLibraryInfo>

namespace folio {

namespace {

// Where the build embeds the compiled translations (translations/CMakeLists.txt).
constexpr auto kResourceDir = ":/i18n";

}  // namespace

TranslationLoader::TranslationLoader(QObject* parent) : QObject(parent) {}

TranslationLoader::~TranslationLoader() {
    remove();
}

QStringList TranslationLoader::availableLanguages() {
    return {QStringLiteral("en"), QStringLiteral("zh_CN")};
}

QString TranslationLoader::nativeName(const QString& language) {
    if (language == QLatin1String("zh_CN")) {
        return QStringLiteral("简体中文");
    }
    return QStringLiteral("English");
}

void TranslationLoader::remove() {
    if (folioInstalled_) {
        QCoreApplication::removeTranslator(&folio_);
        folioInstalled_ = false;
    }
    if (qtInstalled_) {
        QCoreApplication::removeTranslator(&qt_);
        qtInstalled_ = false;
    }
}

QString TranslationLoader::setLanguage(const QString& language) {
    return setLocale(language.isEmpty() ? QLocale::system() : QLocale(language));
}

QString TranslationLoader::setLocale(const QLocale& locale) {
    remove();
    // English is the source language: its translator holds only the plural forms of the strings with %n, and
    // Qt needs none. Any Chinese locale written in simplified script (zh_CN, zh_SG, zh_Hans) takes
    // Simplified Chinese.
    language_ = QStringLiteral("en");
    if (locale.language() == QLocale::Chinese && locale.script() != QLocale::TraditionalChineseScript) {
        language_ = QStringLiteral("zh_CN");
    }
    if (folio_.load(QStringLiteral("folio_") + language_, QString::fromLatin1(kResourceDir))) {
        folioInstalled_ = QCoreApplication::installTranslator(&folio_);
    }
    if (language_ != QLatin1String("en") &&
        qt_.load(QStringLiteral("qtbase_") + language_, QLibraryInfo::path(QLibraryInfo::TranslationsPath))) {
        qtInstalled_ = QCoreApplication::installTranslator(&qt_);
    }
    return language_;
}

}  // namespace folio
