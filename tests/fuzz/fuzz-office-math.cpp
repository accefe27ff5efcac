// Fuzzes LaTeX to Office Math (app/export/office-math) on formulas as a model may write them: any text gives
// one m:oMath element that reads back as well-formed XML, and inline formulas split without losing text.
#include <QString>
#include <QXmlStreamReader>
#include <QXmlStreamWriter>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "app/export/office-math.h"

namespace {

void check(bool condition) {
    if (!condition) {
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const QString text = QString::fromUtf8(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
    QString out;
    {
        QXmlStreamWriter xml(&out);
        xml.writeStartElement(QStringLiteral("root"));
        xml.writeNamespace(QString::fromLatin1(folio::kOfficeMathNamespace), QStringLiteral("m"));
        folio::writeOfficeMath(xml, text);
        xml.writeEndElement();
        check(!xml.hasError());
    }
    QXmlStreamReader reader(out);
    int n_math = 0;
    while (!reader.atEnd()) {
        reader.readNext();
        if (reader.isStartElement() && reader.name() == QLatin1String("oMath")) {
            ++n_math;
        }
    }
    check(!reader.hasError());
    check(n_math == 1);
    // Inline splitting keeps every character outside the delimiters.
    qsizetype n_chars = 0;
    for (const folio::InlineSegment& segment : folio::splitInlineMath(text)) {
        check(!segment.math || !segment.text.isNull());
        n_chars += segment.text.size();
    }
    check(n_chars <= text.size());
    return 0;
}
