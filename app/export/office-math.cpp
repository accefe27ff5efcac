#include "app/export/office-math.h"

#include <QXmlStreamReader>
#include <vector>

#include "app/export/latex-math.h"

namespace folio {
namespace {

using latex_math::Node;
using latex_math::Nodes;
using latex_math::RunStyle;

class Writer {
public:
    explicit Writer(QXmlStreamWriter& xml) : xml_(xml), m_(QString::fromLatin1(kOfficeMathNamespace)) {}

    void nodes(const Nodes& list) {
        for (size_t i = 0; i < list.size(); ++i) {
            const Node& n = list[i];
            if (n.kind == Node::Kind::Run) {
                // Adjacent runs of one style as one m:r.
                QString text = n.text;
                while (i + 1 < list.size() && list[i + 1].kind == Node::Kind::Run &&
                       list[i + 1].style == n.style) {
                    text += list[++i].text;
                }
                runElement(text, n.style);
            } else {
                node(n);
            }
        }
    }

    // A child element holding a list (m:e, m:num, m:sub, ...).
    void part(const char* name, const Nodes& list) {
        xml_.writeStartElement(m_, QLatin1String(name));
        nodes(list);
        xml_.writeEndElement();
    }

private:
    void val(const char* name, const QString& value) {
        xml_.writeEmptyElement(m_, QLatin1String(name));
        xml_.writeAttribute(m_, QStringLiteral("val"), value);
    }

    void runElement(const QString& text, const RunStyle& style) {
        xml_.writeStartElement(m_, QStringLiteral("r"));
        if (!style.sty.isEmpty() || !style.scr.isEmpty()) {
            xml_.writeStartElement(m_, QStringLiteral("rPr"));
            if (!style.scr.isEmpty()) {
                val("scr", style.scr);
            }
            if (!style.sty.isEmpty()) {
                val("sty", style.sty);
            }
            xml_.writeEndElement();
        }
        xml_.writeStartElement(m_, QStringLiteral("t"));
        xml_.writeAttribute(QStringLiteral("xml:space"), QStringLiteral("preserve"));
        xml_.writeCharacters(text);
        xml_.writeEndElement();
        xml_.writeEndElement();
    }

    void node(const Node& n) {
        switch (n.kind) {
            case Node::Kind::Run:
                runElement(n.text, n.style);
                break;
            case Node::Kind::Group:
                nodes(n.a);
                break;
            case Node::Kind::Frac:
                xml_.writeStartElement(m_, QStringLiteral("f"));
                if (!n.text2.isEmpty()) {
                    xml_.writeStartElement(m_, QStringLiteral("fPr"));
                    val("type", n.text2);
                    xml_.writeEndElement();
                }
                part("num", n.a);
                part("den", n.b);
                xml_.writeEndElement();
                break;
            case Node::Kind::Scripts: {
                const char* element = n.hasSub && n.hasSup ? "sSubSup" : n.hasSub ? "sSub" : "sSup";
                xml_.writeStartElement(m_, QLatin1String(element));
                part("e", n.a);
                if (n.hasSub) {
                    part("sub", n.b);
                }
                if (n.hasSup) {
                    part("sup", n.c);
                }
                xml_.writeEndElement();
                break;
            }
            case Node::Kind::Rad:
                xml_.writeStartElement(m_, QStringLiteral("rad"));
                if (n.a.empty()) {
                    xml_.writeStartElement(m_, QStringLiteral("radPr"));
                    val("degHide", QStringLiteral("1"));
                    xml_.writeEndElement();
                }
                part("deg", n.a);
                part("e", n.b);
                xml_.writeEndElement();
                break;
            case Node::Kind::Nary:
                xml_.writeStartElement(m_, QStringLiteral("nary"));
                xml_.writeStartElement(m_, QStringLiteral("naryPr"));
                val("chr", n.text);
                val("limLoc", n.text == QStringLiteral("∫") || n.text == QStringLiteral("∮") ||
                                      n.text == QStringLiteral("∬") || n.text == QStringLiteral("∭")
                                  ? QStringLiteral("subSup")
                                  : QStringLiteral("undOvr"));
                if (!n.hasSub) {
                    val("subHide", QStringLiteral("1"));
                }
                if (!n.hasSup) {
                    val("supHide", QStringLiteral("1"));
                }
                xml_.writeEndElement();
                part("sub", n.b);
                part("sup", n.c);
                part("e", n.a);
                xml_.writeEndElement();
                break;
            case Node::Kind::Delim:
                xml_.writeStartElement(m_, QStringLiteral("d"));
                xml_.writeStartElement(m_, QStringLiteral("dPr"));
                val("begChr", n.text);
                val("endChr", n.text2);
                xml_.writeEndElement();
                part("e", n.a);
                xml_.writeEndElement();
                break;
            case Node::Kind::Acc:
                xml_.writeStartElement(m_, QStringLiteral("acc"));
                xml_.writeStartElement(m_, QStringLiteral("accPr"));
                val("chr", n.text);
                xml_.writeEndElement();
                part("e", n.a);
                xml_.writeEndElement();
                break;
            case Node::Kind::Bar:
                xml_.writeStartElement(m_, QStringLiteral("bar"));
                xml_.writeStartElement(m_, QStringLiteral("barPr"));
                val("pos", n.text2);
                xml_.writeEndElement();
                part("e", n.a);
                xml_.writeEndElement();
                break;
            case Node::Kind::Matrix: {
                size_t columns = 1;
                for (const auto& row : n.rows) {
                    columns = std::max(columns, row.size());
                }
                xml_.writeStartElement(m_, QStringLiteral("m"));
                for (const auto& row : n.rows) {
                    xml_.writeStartElement(m_, QStringLiteral("mr"));
                    for (size_t c = 0; c < columns; ++c) {
                        part("e", c < row.size() ? row[c] : Nodes{});
                    }
                    xml_.writeEndElement();
                }
                xml_.writeEndElement();
                break;
            }
        }
    }

    QXmlStreamWriter& xml_;
    QString m_;
};

}  // namespace

QString xmlSafeText(const QString& text) {
    QString clean;
    clean.reserve(text.size());
    for (qsizetype i = 0; i < text.size(); ++i) {
        const QChar c = text[i];
        if (c.isHighSurrogate()) {
            if (i + 1 < text.size() && text[i + 1].isLowSurrogate()) {
                clean.append(c);
                clean.append(text[++i]);
            }
            continue;
        }
        if (c.isLowSurrogate() || c.unicode() == 0xFFFE || c.unicode() == 0xFFFF) {
            continue;
        }
        if (c == QLatin1Char('\t') || c.unicode() >= 0x20) {
            clean.append(c);
        }
    }
    return clean;
}

void writeOfficeMath(QXmlStreamWriter& xml, const QString& latex) {
    const Nodes tree = latex_math::read(xmlSafeText(latex));
    Writer writer(xml);
    writer.part("oMath", tree);
}

std::vector<InlineSegment> splitInlineMath(const QString& text) {
    std::vector<InlineSegment> segments;
    QString plain;
    const auto flush = [&] {
        if (!plain.isEmpty()) {
            segments.push_back({false, plain});
            plain.clear();
        }
    };
    qsizetype i = 0;
    while (i < text.size()) {
        const QChar c = text[i];
        if (c == QLatin1Char('\\') && i + 1 < text.size() && text[i + 1] == QLatin1Char('$')) {
            plain += QStringLiteral("$");  // an escaped dollar
            i += 2;
            continue;
        }
        if (c == QLatin1Char('\\') && i + 1 < text.size() && text[i + 1] == QLatin1Char('(')) {
            const qsizetype close = text.indexOf(QStringLiteral("\\)"), i + 2);
            if (close > i + 2) {
                flush();
                segments.push_back({true, text.mid(i + 2, close - i - 2).trimmed()});
                i = close + 2;
                continue;
            }
        }
        if (c == QLatin1Char('$') && i + 1 < text.size() && text[i + 1] != QLatin1Char('$') &&
            !text[i + 1].isSpace()) {
            qsizetype close = i + 1;
            while ((close = text.indexOf(QLatin1Char('$'), close)) > i) {
                const bool escaped = text[close - 1] == QLatin1Char('\\');
                const bool spaced = text[close - 1].isSpace();
                const bool digitAfter = close + 1 < text.size() && text[close + 1].isDigit();
                if (!escaped && !spaced && !digitAfter) {
                    break;
                }
                ++close;
            }
            if (close > i + 1) {
                flush();
                segments.push_back({true, text.mid(i + 1, close - i - 1)});
                i = close + 1;
                continue;
            }
        }
        plain += c;
        ++i;
    }
    flush();
    return segments;
}

QString officeMathOutline(const QString& latex) {
    QString out;
    {
        QXmlStreamWriter xml(&out);
        xml.writeStartElement(QStringLiteral("root"));
        xml.writeNamespace(QString::fromLatin1(kOfficeMathNamespace), QStringLiteral("m"));
        writeOfficeMath(xml, latex);
        xml.writeEndElement();
    }
    // Each element as name[=val][:text], its children in parentheses.
    struct Entry {
        QString label;
        QStringList children;
    };
    std::vector<Entry> stack(1);
    QXmlStreamReader reader(out);
    while (!reader.atEnd()) {
        reader.readNext();
        if (reader.isStartElement() && reader.name() != QLatin1String("root")) {
            Entry entry;
            entry.label = reader.name().toString();
            const QStringView value =
                reader.attributes().value(QString::fromLatin1(kOfficeMathNamespace), QStringLiteral("val"));
            if (!value.isNull()) {
                entry.label += QLatin1Char('=') + value.toString();
            }
            stack.push_back(std::move(entry));
        } else if (reader.isEndElement() && reader.name() != QLatin1String("root")) {
            Entry entry = std::move(stack.back());
            stack.pop_back();
            stack.back().children.push_back(
                entry.children.isEmpty() ? entry.label
                                         : entry.label + QLatin1Char('(') +
                                               entry.children.join(QLatin1Char(',')) + QLatin1Char(')'));
        } else if (reader.isCharacters() && stack.size() > 1) {
            stack.back().label += QLatin1Char(':') + reader.text().toString();
        }
    }
    return stack.front().children.join(QLatin1Char(','));
}

}  // namespace folio
