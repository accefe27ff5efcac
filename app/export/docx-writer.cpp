#include "app/export/docx-writer.h"

#include <zip.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QTemporaryDir>
#include <QXmlStreamWriter>
#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "app/export/block-plain-text.h"
#include "app/export/markdown-block.h"
#include "app/export/office-math.h"
#include "app/export/output-folder.h"
#include "app/export/staged-file.h"
#include "app/pipeline/python-whitespace.h"
#include "engine/common/error.h"

namespace folio {
namespace {

constexpr char kW[] = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";
constexpr char kR[] = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
constexpr char kWp[] = "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing";
constexpr char kA[] = "http://schemas.openxmlformats.org/drawingml/2006/main";
constexpr char kPic[] = "http://schemas.openxmlformats.org/drawingml/2006/picture";
constexpr char kRelationships[] = "http://schemas.openxmlformats.org/package/2006/relationships";
constexpr char kImageRelationship[] =
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships/image";

// A picture's width at most: the text width of an A4 or Letter page with Word's default margins, in EMUs
// (914,400 an inch).
constexpr qint64 kEmuPerInch = 914400;
constexpr qint64 kMaxPictureEmu = kEmuPerInch * 6;
// A table's width in twentieths of a point, shared by its columns.
constexpr int kTableTwips = 9000;
constexpr int kMaxHeadingLevel = 6;
// Grids larger than this are not from a page.
constexpr qint64 kMaxGridCells = 1'000'000;

// Inline formulas stand in a block's text as a mark while its markup is stripped: a private-use character
// (above those block-plain-text hides escaped punctuation in), the formula's index, another.
constexpr QChar kFormulaMark(0xF8F0);
constexpr QChar kFormulaMarkEnd(0xF8F1);

// The text with each inline formula replaced by its mark; the formulas in `formulas`, in order.
QString holdInlineMath(const QString& text, QStringList& formulas) {
    QString held;
    for (const InlineSegment& segment : splitInlineMath(text)) {
        if (segment.math) {
            held += kFormulaMark + QString::number(formulas.size()) + kFormulaMarkEnd;
            formulas.append(segment.text);
        } else {
            QString plain = segment.text;
            plain.remove(kFormulaMark);
            plain.remove(kFormulaMarkEnd);
            held += plain;
        }
    }
    return held;
}

// The lines of a text that hold more than white space.
QStringList lines(const QString& text) {
    QStringList out;
    for (const QString& line : text.split(QLatin1Char('\n'))) {
        if (!stripPythonSpace(line).isEmpty()) {
            out << stripPythonSpace(line);
        }
    }
    return out;
}

// A formula's LaTeX without its $ or $$ delimiters.
QString latexOf(const QString& content) {
    QString latex = stripPythonSpace(content);
    for (const QString& fence : {QStringLiteral("$$"), QStringLiteral("$")}) {
        if (latex.size() >= 2 * fence.size() && latex.startsWith(fence) && latex.endsWith(fence)) {
            return stripPythonSpace(latex.mid(fence.size(), latex.size() - 2 * fence.size()));
        }
    }
    return latex;
}

// Heading styles "Heading1".."Heading6", Title, Caption and Formula (a centred paragraph in a math font),
// and a table style with borders; names as Word's built-in styles have them.
QByteArray stylesXml() {
    QByteArray out;
    QXmlStreamWriter x(&out);
    x.writeStartDocument(QStringLiteral("1.0"), true);
    x.writeNamespace(QString::fromLatin1(kW), QStringLiteral("w"));
    x.writeStartElement(QString::fromLatin1(kW), QStringLiteral("styles"));
    const auto style = [&](const QString& type, const QString& id, const QString& name, auto&& body) {
        x.writeStartElement(QString::fromLatin1(kW), QStringLiteral("style"));
        x.writeAttribute(QString::fromLatin1(kW), QStringLiteral("type"), type);
        if (id == QLatin1String("Normal")) {
            x.writeAttribute(QString::fromLatin1(kW), QStringLiteral("default"), QStringLiteral("1"));
        }
        x.writeAttribute(QString::fromLatin1(kW), QStringLiteral("styleId"), id);
        x.writeEmptyElement(QString::fromLatin1(kW), QStringLiteral("name"));
        x.writeAttribute(QString::fromLatin1(kW), QStringLiteral("val"), name);
        body();
        x.writeEndElement();
    };
    const auto value = [&](const char* element, const QString& val) {
        x.writeEmptyElement(QString::fromLatin1(kW), QString::fromLatin1(element));
        x.writeAttribute(QString::fromLatin1(kW), QStringLiteral("val"), val);
    };
    const auto basedOnNormal = [&] {
        value("basedOn", QStringLiteral("Normal"));
        value("next", QStringLiteral("Normal"));
        x.writeEmptyElement(QString::fromLatin1(kW), QStringLiteral("qFormat"));
    };
    const auto runProperties = [&](bool bold, int halfPoints, const QString& font = QString()) {
        x.writeStartElement(QString::fromLatin1(kW), QStringLiteral("rPr"));
        if (!font.isEmpty()) {
            x.writeEmptyElement(QString::fromLatin1(kW), QStringLiteral("rFonts"));
            x.writeAttribute(QString::fromLatin1(kW), QStringLiteral("ascii"), font);
            x.writeAttribute(QString::fromLatin1(kW), QStringLiteral("hAnsi"), font);
        }
        if (bold) {
            x.writeEmptyElement(QString::fromLatin1(kW), QStringLiteral("b"));
        }
        value("sz", QString::number(halfPoints));
        x.writeEndElement();
    };
    const auto centred = [&](int spaceAfter) {
        x.writeStartElement(QString::fromLatin1(kW), QStringLiteral("pPr"));
        x.writeEmptyElement(QString::fromLatin1(kW), QStringLiteral("spacing"));
        x.writeAttribute(QString::fromLatin1(kW), QStringLiteral("after"), QString::number(spaceAfter));
        value("jc", QStringLiteral("center"));
        x.writeEndElement();
    };
    style(QStringLiteral("paragraph"), QStringLiteral("Normal"), QStringLiteral("Normal"), [&] {
        x.writeEmptyElement(QString::fromLatin1(kW), QStringLiteral("qFormat"));
        x.writeStartElement(QString::fromLatin1(kW), QStringLiteral("pPr"));
        x.writeEmptyElement(QString::fromLatin1(kW), QStringLiteral("spacing"));
        x.writeAttribute(QString::fromLatin1(kW), QStringLiteral("after"), QStringLiteral("120"));
        x.writeEndElement();
        runProperties(false, 22);
    });
    style(QStringLiteral("paragraph"), QStringLiteral("Title"), QStringLiteral("Title"), [&] {
        basedOnNormal();
        centred(240);
        runProperties(true, 40);
    });
    for (int level = 1; level <= kMaxHeadingLevel; ++level) {
        style(QStringLiteral("paragraph"), QStringLiteral("Heading%1").arg(level),
              QStringLiteral("heading %1").arg(level), [&] {
                  basedOnNormal();
                  x.writeStartElement(QString::fromLatin1(kW), QStringLiteral("pPr"));
                  x.writeEmptyElement(QString::fromLatin1(kW), QStringLiteral("keepNext"));
                  x.writeEmptyElement(QString::fromLatin1(kW), QStringLiteral("spacing"));
                  x.writeAttribute(QString::fromLatin1(kW), QStringLiteral("before"), QStringLiteral("240"));
                  x.writeAttribute(QString::fromLatin1(kW), QStringLiteral("after"), QStringLiteral("120"));
                  value("outlineLvl", QString::number(level - 1));
                  x.writeEndElement();
                  runProperties(true, std::max(22, 34 - 3 * (level - 1)));
              });
    }
    style(QStringLiteral("paragraph"), QStringLiteral("Caption"), QStringLiteral("caption"), [&] {
        basedOnNormal();
        centred(200);
        runProperties(false, 20);
    });
    style(QStringLiteral("paragraph"), QStringLiteral("Formula"), QStringLiteral("Formula"), [&] {
        basedOnNormal();
        centred(120);
        runProperties(false, 22, QStringLiteral("Cambria Math"));
    });
    style(QStringLiteral("table"), QStringLiteral("TableGrid"), QStringLiteral("Table Grid"), [&] {
        x.writeStartElement(QString::fromLatin1(kW), QStringLiteral("tblPr"));
        x.writeStartElement(QString::fromLatin1(kW), QStringLiteral("tblBorders"));
        for (const char* side : {"top", "left", "bottom", "right", "insideH", "insideV"}) {
            x.writeEmptyElement(QString::fromLatin1(kW), QString::fromLatin1(side));
            x.writeAttribute(QString::fromLatin1(kW), QStringLiteral("val"), QStringLiteral("single"));
            x.writeAttribute(QString::fromLatin1(kW), QStringLiteral("sz"), QStringLiteral("4"));
            x.writeAttribute(QString::fromLatin1(kW), QStringLiteral("space"), QStringLiteral("0"));
            x.writeAttribute(QString::fromLatin1(kW), QStringLiteral("color"), QStringLiteral("808080"));
        }
        x.writeEndElement();
        x.writeEndElement();
    });
    x.writeEndElement();
    x.writeEndDocument();
    return out;
}

// One relationship a line of a .rels part.
QByteArray relationshipsXml(const std::vector<std::pair<QString, QString>>& targets, const QString& type) {
    QByteArray out;
    QXmlStreamWriter x(&out);
    x.writeStartDocument(QStringLiteral("1.0"), true);
    x.writeDefaultNamespace(QString::fromLatin1(kRelationships));
    x.writeStartElement(QString::fromLatin1(kRelationships), QStringLiteral("Relationships"));
    for (const auto& [id, target] : targets) {
        x.writeEmptyElement(QString::fromLatin1(kRelationships), QStringLiteral("Relationship"));
        x.writeAttribute(QStringLiteral("Id"), id);
        x.writeAttribute(QStringLiteral("Type"), type);
        x.writeAttribute(QStringLiteral("Target"), target);
    }
    x.writeEndElement();
    x.writeEndDocument();
    return out;
}

QByteArray contentTypesXml() {
    return QByteArrayLiteral(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
        "<Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\">"
        "<Default Extension=\"rels\" "
        "ContentType=\"application/vnd.openxmlformats-package.relationships+xml\"/>"
        "<Default Extension=\"xml\" ContentType=\"application/xml\"/>"
        "<Default Extension=\"jpeg\" ContentType=\"image/jpeg\"/>"
        "<Override PartName=\"/word/document.xml\" "
        "ContentType=\"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml\"/>"
        "<Override PartName=\"/word/styles.xml\" "
        "ContentType=\"application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml\"/>"
        "<Override PartName=\"/docProps/core.xml\" "
        "ContentType=\"application/vnd.openxmlformats-package.core-properties+xml\"/>"
        "</Types>");
}

QByteArray packageRelationshipsXml() {
    return QByteArrayLiteral(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
        "<Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">"
        "<Relationship Id=\"rId1\" "
        "Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument\" "
        "Target=\"word/document.xml\"/>"
        "<Relationship Id=\"rId2\" "
        "Type=\"http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties\" "
        "Target=\"docProps/core.xml\"/>"
        "</Relationships>");
}

QByteArray corePropertiesXml(const QString& title) {
    QByteArray out;
    QXmlStreamWriter x(&out);
    x.writeStartDocument(QStringLiteral("1.0"), true);
    const QString cp =
        QStringLiteral("http://schemas.openxmlformats.org/package/2006/metadata/core-properties");
    const QString dc = QStringLiteral("http://purl.org/dc/elements/1.1/");
    x.writeNamespace(cp, QStringLiteral("cp"));
    x.writeNamespace(dc, QStringLiteral("dc"));
    x.writeStartElement(cp, QStringLiteral("coreProperties"));
    x.writeTextElement(dc, QStringLiteral("title"), xmlSafeText(title));
    x.writeTextElement(dc, QStringLiteral("creator"), QStringLiteral("Folio"));
    x.writeEndElement();
    x.writeEndDocument();
    return out;
}

// A libzip archive being written; every failure becomes a folio::Error naming the target.
class ZipPackage {
public:
    ZipPackage(const QString& path, QString target) : target_(std::move(target)) {
        int error = 0;
        archive_ = zip_open(QFile::encodeName(path).constData(), ZIP_CREATE | ZIP_TRUNCATE, &error);
        if (archive_ == nullptr) {
            zip_error_t e;
            zip_error_init_with_code(&e, error);
            const std::string why = zip_error_strerror(&e);
            zip_error_fini(&e);
            fail("cannot write \"", target_.toStdString(), "\": ", why);
        }
    }
    ~ZipPackage() {
        if (archive_ != nullptr) {
            zip_discard(archive_);
        }
    }
    ZipPackage(const ZipPackage&) = delete;
    ZipPackage& operator=(const ZipPackage&) = delete;

    void addBytes(const char* name, QByteArray bytes) {
        buffers_.push_back(std::move(bytes));
        const QByteArray& kept = buffers_.back();
        zip_source_t* source =
            zip_source_buffer(archive_, kept.constData(), static_cast<zip_uint64_t>(kept.size()), 0);
        add(name, source, false);
    }
    void addFile(const QString& name, const QString& path, bool stored) {
        zip_source_t* source = zip_source_file(archive_, QFile::encodeName(path).constData(), 0, -1);
        add(name.toUtf8().constData(), source, stored);
    }
    void close() {
        if (zip_close(archive_) != 0) {
            const std::string why = zip_strerror(archive_);
            fail("cannot write \"", target_.toStdString(), "\": ", why);
        }
        archive_ = nullptr;
    }

private:
    void add(const char* name, zip_source_t* source, bool stored) {
        if (source == nullptr) {
            fail("cannot write \"", target_.toStdString(), "\": ", name, ": ", zip_strerror(archive_));
        }
        const zip_int64_t index = zip_file_add(archive_, name, source, ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE);
        if (index < 0) {
            zip_source_free(source);
            fail("cannot write \"", target_.toStdString(), "\": ", name, ": ", zip_strerror(archive_));
        }
        if (stored) {
            zip_set_file_compression(archive_, static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0);
        }
    }

    QString target_;
    zip_t* archive_ = nullptr;
    std::vector<QByteArray> buffers_;  // the parts added from memory, kept until the archive is closed
};

}  // namespace

struct DocxWriter::State {
    DocumentInfo document;
    QString target;
    std::unique_ptr<QTemporaryDir> staging;  // document.xml as it grows, media/imageN.jpeg
    QFile body;
    QXmlStreamWriter xml;
    int nImages = 0;
    int nPages = 0;

    QString w() const { return QString::fromLatin1(kW); }

    // A paragraph of text; where `formulas` is given, the text's formula marks (holdInlineMath) become Word
    // equations among its runs.
    void paragraph(const QString& text, const QString& style = QString(), bool centred = false,
                   const QStringList* formulas = nullptr) {
        xml.writeStartElement(w(), QStringLiteral("p"));
        if (!style.isEmpty() || centred) {
            xml.writeStartElement(w(), QStringLiteral("pPr"));
            if (!style.isEmpty()) {
                xml.writeEmptyElement(w(), QStringLiteral("pStyle"));
                xml.writeAttribute(w(), QStringLiteral("val"), style);
            }
            if (centred) {
                xml.writeEmptyElement(w(), QStringLiteral("jc"));
                xml.writeAttribute(w(), QStringLiteral("val"), QStringLiteral("center"));
            }
            xml.writeEndElement();
        }
        static const QStringList kNone;
        const QStringList& held = formulas ? *formulas : kNone;
        qsizetype at = 0;
        while (at < text.size()) {
            const qsizetype mark = held.isEmpty() ? -1 : text.indexOf(kFormulaMark, at);
            const qsizetype end = text.indexOf(kFormulaMarkEnd, mark + 1);
            const qsizetype runEnd = mark >= 0 && end > mark ? mark : text.size();
            if (runEnd > at) {
                xml.writeStartElement(w(), QStringLiteral("r"));
                xml.writeStartElement(w(), QStringLiteral("t"));
                xml.writeAttribute(QStringLiteral("xml:space"), QStringLiteral("preserve"));
                xml.writeCharacters(xmlSafeText(text.mid(at, runEnd - at)));
                xml.writeEndElement();
                xml.writeEndElement();
            }
            if (runEnd == text.size()) {
                break;
            }
            bool ok = false;
            const qsizetype index = text.mid(mark + 1, end - mark - 1).toLongLong(&ok);
            if (ok && index >= 0 && index < held.size()) {
                writeOfficeMath(xml, held.at(index));
            }
            at = end + 1;
        }
        xml.writeEndElement();
    }

    // A display formula as a Word equation of its own paragraph.
    void equation(const QString& latex) {
        xml.writeStartElement(w(), QStringLiteral("p"));
        xml.writeStartElement(w(), QStringLiteral("pPr"));
        xml.writeEmptyElement(w(), QStringLiteral("pStyle"));
        xml.writeAttribute(w(), QStringLiteral("val"), QStringLiteral("Formula"));
        xml.writeEndElement();
        xml.writeStartElement(QString::fromLatin1(kOfficeMathNamespace), QStringLiteral("oMathPara"));
        writeOfficeMath(xml, latex);
        xml.writeEndElement();
        xml.writeEndElement();
    }

    void paragraphs(const QString& text, const QString& style = QString(), bool centred = false) {
        for (const QString& line : lines(text)) {
            paragraph(line, style, centred);
        }
    }

    void pageBreak() {
        xml.writeStartElement(w(), QStringLiteral("p"));
        xml.writeStartElement(w(), QStringLiteral("r"));
        xml.writeEmptyElement(w(), QStringLiteral("br"));
        xml.writeAttribute(w(), QStringLiteral("type"), QStringLiteral("page"));
        xml.writeEndElement();
        xml.writeEndElement();
    }

    // The block's image as a centred picture, its width the block's share of the page's.
    void picture(const BlockResult& block, int pageWidth) {
        const int n = ++nImages;
        const QString name = QStringLiteral("image%1.jpeg").arg(n);
        const QString path = staging->filePath(QStringLiteral("media/") + name);
        if (!block.image.convertToFormat(QImage::Format_RGB888).save(path, "JPEG", 92)) {
            fail("cannot write \"", target.toStdString(), "\": the picture of block ", block.id,
                 " could not be saved");
        }
        const double share =
            pageWidth > 0 ? std::clamp(static_cast<double>(block.box.width()) / pageWidth, 0.05, 1.0) : 1.0;
        const auto cx = static_cast<qint64>(static_cast<double>(kMaxPictureEmu) * share);
        const qint64 cy = block.image.width() > 0 ? cx * block.image.height() / block.image.width() : cx;
        const QString id = QString::number(n);
        xml.writeStartElement(w(), QStringLiteral("p"));
        xml.writeStartElement(w(), QStringLiteral("pPr"));
        xml.writeEmptyElement(w(), QStringLiteral("jc"));
        xml.writeAttribute(w(), QStringLiteral("val"), QStringLiteral("center"));
        xml.writeEndElement();
        xml.writeStartElement(w(), QStringLiteral("r"));
        xml.writeStartElement(w(), QStringLiteral("drawing"));
        xml.writeStartElement(QString::fromLatin1(kWp), QStringLiteral("inline"));
        xml.writeEmptyElement(QString::fromLatin1(kWp), QStringLiteral("extent"));
        xml.writeAttribute(QStringLiteral("cx"), QString::number(cx));
        xml.writeAttribute(QStringLiteral("cy"), QString::number(cy));
        xml.writeEmptyElement(QString::fromLatin1(kWp), QStringLiteral("docPr"));
        xml.writeAttribute(QStringLiteral("id"), id);
        xml.writeAttribute(QStringLiteral("name"), QStringLiteral("Picture ") + id);
        xml.writeAttribute(QStringLiteral("descr"), xmlSafeText(block.label));
        xml.writeStartElement(QString::fromLatin1(kA), QStringLiteral("graphic"));
        xml.writeStartElement(QString::fromLatin1(kA), QStringLiteral("graphicData"));
        xml.writeAttribute(QStringLiteral("uri"), QString::fromLatin1(kPic));
        xml.writeStartElement(QString::fromLatin1(kPic), QStringLiteral("pic"));
        xml.writeStartElement(QString::fromLatin1(kPic), QStringLiteral("nvPicPr"));
        xml.writeEmptyElement(QString::fromLatin1(kPic), QStringLiteral("cNvPr"));
        xml.writeAttribute(QStringLiteral("id"), id);
        xml.writeAttribute(QStringLiteral("name"), name);
        xml.writeEmptyElement(QString::fromLatin1(kPic), QStringLiteral("cNvPicPr"));
        xml.writeEndElement();
        xml.writeStartElement(QString::fromLatin1(kPic), QStringLiteral("blipFill"));
        xml.writeEmptyElement(QString::fromLatin1(kA), QStringLiteral("blip"));
        xml.writeAttribute(QString::fromLatin1(kR), QStringLiteral("embed"), QStringLiteral("rIdImage") + id);
        xml.writeStartElement(QString::fromLatin1(kA), QStringLiteral("stretch"));
        xml.writeEmptyElement(QString::fromLatin1(kA), QStringLiteral("fillRect"));
        xml.writeEndElement();
        xml.writeEndElement();
        xml.writeStartElement(QString::fromLatin1(kPic), QStringLiteral("spPr"));
        xml.writeStartElement(QString::fromLatin1(kA), QStringLiteral("xfrm"));
        xml.writeEmptyElement(QString::fromLatin1(kA), QStringLiteral("off"));
        xml.writeAttribute(QStringLiteral("x"), QStringLiteral("0"));
        xml.writeAttribute(QStringLiteral("y"), QStringLiteral("0"));
        xml.writeEmptyElement(QString::fromLatin1(kA), QStringLiteral("ext"));
        xml.writeAttribute(QStringLiteral("cx"), QString::number(cx));
        xml.writeAttribute(QStringLiteral("cy"), QString::number(cy));
        xml.writeEndElement();
        xml.writeStartElement(QString::fromLatin1(kA), QStringLiteral("prstGeom"));
        xml.writeAttribute(QStringLiteral("prst"), QStringLiteral("rect"));
        xml.writeEmptyElement(QString::fromLatin1(kA), QStringLiteral("avLst"));
        xml.writeEndElement();
        xml.writeEndElement();
        for (int i = 0; i < 6; ++i) {
            xml.writeEndElement();  // pic, graphicData, graphic, inline, drawing, r
        }
        xml.writeEndElement();  // p
    }

    // A cell of the table's grid: its text as paragraphs, its column span, and where it starts or continues
    // a vertical merge.
    void cell(const QString& text, int columnSpan, const QString& verticalMerge, int twips) {
        xml.writeStartElement(w(), QStringLiteral("tc"));
        xml.writeStartElement(w(), QStringLiteral("tcPr"));
        xml.writeEmptyElement(w(), QStringLiteral("tcW"));
        xml.writeAttribute(w(), QStringLiteral("w"), QString::number(twips * columnSpan));
        xml.writeAttribute(w(), QStringLiteral("type"), QStringLiteral("dxa"));
        if (columnSpan > 1) {
            xml.writeEmptyElement(w(), QStringLiteral("gridSpan"));
            xml.writeAttribute(w(), QStringLiteral("val"), QString::number(columnSpan));
        }
        if (!verticalMerge.isEmpty()) {
            xml.writeEmptyElement(w(), QStringLiteral("vMerge"));
            if (verticalMerge == QLatin1String("restart")) {
                xml.writeAttribute(w(), QStringLiteral("val"), verticalMerge);
            }
        }
        xml.writeEndElement();
        const QStringList cellLines = lines(text);
        if (cellLines.isEmpty()) {
            xml.writeEmptyElement(w(), QStringLiteral("p"));  // a cell holds at least one paragraph
        }
        for (const QString& line : cellLines) {
            paragraph(line);
        }
        xml.writeEndElement();
    }

    void table(const TableGrid& grid) {
        const int nRows = grid.nRows, nColumns = grid.nColumns;
        if (nRows <= 0 || nColumns <= 0) {
            return;
        }
        if (static_cast<qint64>(nRows) * nColumns > kMaxGridCells) {
            fail("cannot write \"", target.toStdString(), "\": a table of ", nRows, "x", nColumns,
                 " cells, more than ", kMaxGridCells);
        }
        // Each grid position's cell, by its index; -1 where no cell covers it.
        std::vector<int> owner(static_cast<size_t>(nRows) * static_cast<size_t>(nColumns), -1);
        const auto at = [&](int r, int c) {
            return static_cast<size_t>(r) * static_cast<size_t>(nColumns) + c;
        };
        for (size_t i = 0; i < grid.cells.size(); ++i) {
            const TableCell& tc = grid.cells[i];
            for (int r = tc.row; r < std::min(nRows, tc.row + tc.rowSpan); ++r) {
                for (int c = tc.column; c < std::min(nColumns, tc.column + tc.columnSpan); ++c) {
                    if (r >= 0 && c >= 0 && owner[at(r, c)] < 0) {
                        owner[at(r, c)] = static_cast<int>(i);
                    }
                }
            }
        }
        const int twips = std::max(1, kTableTwips / nColumns);
        xml.writeStartElement(w(), QStringLiteral("tbl"));
        xml.writeStartElement(w(), QStringLiteral("tblPr"));
        xml.writeEmptyElement(w(), QStringLiteral("tblStyle"));
        xml.writeAttribute(w(), QStringLiteral("val"), QStringLiteral("TableGrid"));
        xml.writeEmptyElement(w(), QStringLiteral("tblW"));
        xml.writeAttribute(w(), QStringLiteral("w"), QString::number(twips * nColumns));
        xml.writeAttribute(w(), QStringLiteral("type"), QStringLiteral("dxa"));
        xml.writeEmptyElement(w(), QStringLiteral("jc"));
        xml.writeAttribute(w(), QStringLiteral("val"), QStringLiteral("center"));
        xml.writeEndElement();
        xml.writeStartElement(w(), QStringLiteral("tblGrid"));
        for (int c = 0; c < nColumns; ++c) {
            xml.writeEmptyElement(w(), QStringLiteral("gridCol"));
            xml.writeAttribute(w(), QStringLiteral("w"), QString::number(twips));
        }
        xml.writeEndElement();
        for (int r = 0; r < nRows; ++r) {
            xml.writeStartElement(w(), QStringLiteral("tr"));
            for (int c = 0; c < nColumns;) {
                const int i = owner[at(r, c)];
                if (i < 0) {
                    cell(QString(), 1, QString(), twips);
                    ++c;
                    continue;
                }
                const TableCell& tc = grid.cells[static_cast<size_t>(i)];
                // A cell's row may start left of c where its top-left was clipped; its span runs from c on.
                const int span = std::max(1, std::min(nColumns, tc.column + tc.columnSpan) - c);
                const bool merged = tc.rowSpan > 1;
                const bool first = tc.row == r;
                cell(first ? tc.text : QString(), span,
                     merged ? (first ? QStringLiteral("restart") : QStringLiteral("continue")) : QString(),
                     twips);
                c += span;
            }
            xml.writeEndElement();
        }
        xml.writeEndElement();
        // Word runs two adjacent tables together: a paragraph keeps them apart.
        xml.writeEmptyElement(w(), QStringLiteral("p"));
    }

    // A recognised chart ("a | b" lines) as a table, its first line the header row.
    void chartTable(const QString& content) {
        TableGrid grid;
        const QStringList rows = lines(content);
        for (int r = 0; r < rows.size(); ++r) {
            const QStringList parts = rows[r].split(QLatin1Char('|'));
            grid.nColumns = std::max(grid.nColumns, static_cast<int>(parts.size()));
            for (int c = 0; c < parts.size(); ++c) {
                grid.cells.push_back({r, c, 1, 1, stripPythonSpace(parts[c])});
            }
        }
        grid.nRows = static_cast<int>(rows.size());
        table(grid);
    }
};

DocxWriter::DocxWriter(ExportOptions options)
    : options_(std::move(options)), labels_(effectiveMarkdownLabels(options_)) {}

DocxWriter::~DocxWriter() = default;

void DocxWriter::begin(const DocumentInfo& document) {
    files_.clear();
    auto state = std::make_unique<State>();
    state->document = document;
    state->target = QDir(options_.outputDir).filePath(document.stem + exportSuffix(ExportFormat::Docx));
    makeOutputFolder(options_.outputDir);
    state->staging =
        std::make_unique<QTemporaryDir>(QDir(options_.outputDir).filePath(QStringLiteral(".docx-XXXXXX")));
    if (!state->staging->isValid() || !QDir(state->staging->path()).mkpath(QStringLiteral("media"))) {
        fail("cannot write \"", state->target.toStdString(), "\": no staging folder in \"",
             options_.outputDir.toStdString(), "\"");
    }
    state->body.setFileName(state->staging->filePath(QStringLiteral("document.xml")));
    if (!state->body.open(QIODevice::WriteOnly)) {
        fail("cannot write \"", state->target.toStdString(), "\": ", state->body.errorString().toStdString());
    }
    QXmlStreamWriter& x = state->xml;
    x.setDevice(&state->body);
    x.writeStartDocument(QStringLiteral("1.0"), true);
    x.writeNamespace(QString::fromLatin1(kW), QStringLiteral("w"));
    x.writeNamespace(QString::fromLatin1(kR), QStringLiteral("r"));
    x.writeNamespace(QString::fromLatin1(kWp), QStringLiteral("wp"));
    x.writeNamespace(QString::fromLatin1(kA), QStringLiteral("a"));
    x.writeNamespace(QString::fromLatin1(kPic), QStringLiteral("pic"));
    x.writeNamespace(QString::fromLatin1(kOfficeMathNamespace), QStringLiteral("m"));
    x.writeStartElement(QString::fromLatin1(kW), QStringLiteral("document"));
    x.writeStartElement(QString::fromLatin1(kW), QStringLiteral("body"));
    state_ = std::move(state);
}

void DocxWriter::addPage(const PageResult& page) {
    if (!state_) {
        fail("docx: a page before the document began");
    }
    State& s = *state_;
    if (s.nPages++ > 0) {
        s.pageBreak();
    }
    for (const BlockResult& block : page.blocks) {
        const QString& label = block.label;
        if (!labels_.contains(label) || !block.error.isEmpty()) {
            continue;
        }
        const QString& content = block.content;
        if (label == QLatin1String("doc_title")) {
            s.paragraph(joinLines(content), QStringLiteral("Title"));
        } else if (label == QLatin1String("paragraph_title") || label == QLatin1String("abstract_title") ||
                   label == QLatin1String("reference_title") || label == QLatin1String("content_title")) {
            const TitleHeading heading = titleHeading(content);
            s.paragraph(joinLines(heading.text),
                        QStringLiteral("Heading%1").arg(std::clamp(heading.level, 1, kMaxHeadingLevel)));
        } else if (label == QLatin1String("table_title") || label == QLatin1String("figure_title") ||
                   label == QLatin1String("chart_title")) {
            s.paragraph(joinLines(content), QStringLiteral("Caption"));
        } else if (label == QLatin1String("table")) {
            if (block.table) {
                s.table(*block.table);
            } else {
                s.paragraphs(blockPlainLines(block).join(QLatin1Char('\n')));
            }
        } else if (!block.image.isNull() &&
                   (label == QLatin1String("image") || label == QLatin1String("header_image") ||
                    label == QLatin1String("footer_image") || label == QLatin1String("chart") ||
                    label == QLatin1String("seal"))) {
            s.picture(block, page.width);
            s.paragraphs(content, QString(), true);  // the text recognised in it, below it
        } else if (label == QLatin1String("chart") && !content.isEmpty()) {
            s.chartTable(content);
        } else if (label == QLatin1String("seal")) {
            s.paragraphs(content, QString(), true);
        } else if (isFormulaBlock(block)) {
            s.equation(latexOf(content));
        } else {
            // Inline formulas held apart from the markup stripping, written back as equations.
            BlockResult held = block;
            QStringList formulas;
            held.content = holdInlineMath(content, formulas);
            for (const QString& line : blockPlainLines(held)) {
                s.paragraph(line, QString(), false, &formulas);
            }
        }
    }
    if (s.xml.hasError() || s.body.error() != QFileDevice::NoError) {
        fail("cannot write \"", s.target.toStdString(), "\": ", s.body.errorString().toStdString());
    }
}

void DocxWriter::finish() {
    if (!state_) {
        fail("docx: finish before the document began");
    }
    State& s = *state_;
    QXmlStreamWriter& x = s.xml;
    // The section: A4, one-inch margins.
    x.writeStartElement(QString::fromLatin1(kW), QStringLiteral("sectPr"));
    x.writeEmptyElement(QString::fromLatin1(kW), QStringLiteral("pgSz"));
    x.writeAttribute(QString::fromLatin1(kW), QStringLiteral("w"), QStringLiteral("11906"));
    x.writeAttribute(QString::fromLatin1(kW), QStringLiteral("h"), QStringLiteral("16838"));
    x.writeEmptyElement(QString::fromLatin1(kW), QStringLiteral("pgMar"));
    for (const char* side : {"top", "right", "bottom", "left"}) {
        x.writeAttribute(QString::fromLatin1(kW), QString::fromLatin1(side), QStringLiteral("1440"));
    }
    x.writeEndElement();
    x.writeEndElement();  // body
    x.writeEndElement();  // document
    x.writeEndDocument();
    s.body.close();
    if (x.hasError() || s.body.error() != QFileDevice::NoError) {
        fail("cannot write \"", s.target.toStdString(), "\": ", s.body.errorString().toStdString());
    }

    std::vector<std::pair<QString, QString>> images;
    for (int n = 1; n <= s.nImages; ++n) {
        images.emplace_back(QStringLiteral("rIdImage%1").arg(n), QStringLiteral("media/image%1.jpeg").arg(n));
    }
    QByteArray documentRels = relationshipsXml(images, QString::fromLatin1(kImageRelationship));
    // The styles' relationship beside the pictures'.
    documentRels.replace(
        "</Relationships>",
        "<Relationship Id=\"rIdStyles\" "
        "Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles\" "
        "Target=\"styles.xml\"/></Relationships>");

    StagedFile staged(s.target);
    staged.file().close();
    {
        ZipPackage zip(staged.temporaryPath(), s.target);
        zip.addBytes("[Content_Types].xml", contentTypesXml());
        zip.addBytes("_rels/.rels", packageRelationshipsXml());
        zip.addBytes("docProps/core.xml", corePropertiesXml(s.document.stem));
        zip.addBytes("word/styles.xml", stylesXml());
        zip.addBytes("word/_rels/document.xml.rels", documentRels);
        zip.addFile(QStringLiteral("word/document.xml"), s.body.fileName(), false);
        for (const auto& [id, path] : images) {
            zip.addFile(QStringLiteral("word/") + path, s.staging->filePath(path), true);
        }
        zip.close();
    }
    staged.commit();
    files_ = {QFileInfo(s.target).absoluteFilePath()};
    state_.reset();
}

void DocxWriter::abort() {
    state_.reset();
    files_.clear();
}

QStringList DocxWriter::files() const {
    return files_;
}

}  // namespace folio
