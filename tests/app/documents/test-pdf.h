// PDFs for the documents tests, written with QPdfWriter: pages of chosen sizes in points, each with a line of
// text and a black square at a known place; and an encrypted PDF built by hand (the standard security
// handler, revision 2), which QPdfWriter cannot write.
#pragma once

#include <QByteArray>
#include <QCryptographicHash>
#include <QFile>
#include <QMarginsF>
#include <QPageLayout>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QSizeF>
#include <QString>
#include <array>
#include <stdexcept>
#include <vector>

namespace folio::test {

struct TestPage {
    QSizeF points;  // page size in points
    QString text;   // drawn at (36, 36) pt
};

// The black square on every page: 72 pt a side with its top-left corner at (72, 72) pt.
inline constexpr double kSquareAt = 72.0;
inline constexpr double kSquareSide = 72.0;

inline void writeTestPdf(const QString& path, const std::vector<TestPage>& pages) {
    QPdfWriter writer(path);
    writer.setResolution(72);  // painter units are points
    const auto layout = [](QSizeF points) {
        return QPageLayout(QPageSize(points, QPageSize::Point, QString(), QPageSize::ExactMatch),
                           QPageLayout::Portrait, QMarginsF(0, 0, 0, 0));
    };
    writer.setPageLayout(layout(pages.front().points));
    QPainter painter(&writer);
    for (size_t i = 0; i < pages.size(); ++i) {
        if (i > 0) {
            writer.setPageLayout(layout(pages[i].points));
            writer.newPage();
        }
        QFont font(QStringLiteral("DejaVu Sans"));
        font.setPointSizeF(12);
        painter.setFont(font);
        painter.drawText(QPointF(36, 36), pages[i].text);
        painter.fillRect(QRectF(kSquareAt, kSquareAt, kSquareSide, kSquareSide), Qt::black);
    }
    painter.end();
}

namespace detail {

// RC4 over `data` with `key`.
inline QByteArray rc4(const QByteArray& key, const QByteArray& data) {
    std::array<unsigned char, 256> s{};
    for (int i = 0; i < 256; ++i) {
        s[static_cast<size_t>(i)] = static_cast<unsigned char>(i);
    }
    size_t j = 0;
    for (size_t i = 0; i < 256; ++i) {
        j = (j + s[i] + static_cast<unsigned char>(key[static_cast<qsizetype>(i) % key.size()])) & 0xff;
        std::swap(s[i], s[j]);
    }
    QByteArray out = data;
    size_t a = 0;
    size_t b = 0;
    for (qsizetype k = 0; k < out.size(); ++k) {
        a = (a + 1) & 0xff;
        b = (b + s[a]) & 0xff;
        std::swap(s[a], s[b]);
        out[k] = static_cast<char>(static_cast<unsigned char>(out[k]) ^ s[(s[a] + s[b]) & 0xff]);
    }
    return out;
}

inline QByteArray padded(const QByteArray& password) {
    static const QByteArray padding =
        QByteArray::fromHex("28BF4E5E4E758A4164004E56FFFA01082E2E00B6D0683E802F0CA9FE6453697A");
    return (password + padding).left(32);
}

}  // namespace detail

// A one-page PDF built object by object: the catalog (1), the page tree (2), the page (3) with `pageEntries`
// added to its dictionary and `resources` as its resources, its content stream (4), then `extraObjects` (5
// on); `trailerEntries` are added to the trailer.
inline QByteArray buildPdf(const QByteArray& pageEntries, const QByteArray& content,
                           const std::vector<QByteArray>& extraObjects = {},
                           const QByteArray& trailerEntries = {}, const QByteArray& resources = "<< >>") {
    std::vector<QByteArray> objects = {
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources " + resources + " " + pageEntries + " >>",
        "<< /Length " + QByteArray::number(content.size()) + " >>\nstream\n" + content + "\nendstream",
    };
    objects.insert(objects.end(), extraObjects.begin(), extraObjects.end());
    QByteArray pdf = "%PDF-1.4\n";
    std::vector<qsizetype> offsets;
    for (size_t i = 0; i < objects.size(); ++i) {
        offsets.push_back(pdf.size());
        pdf += QByteArray::number(static_cast<qulonglong>(i + 1)) + " 0 obj\n" + objects[i] + "\nendobj\n";
    }
    const qsizetype xref = pdf.size();
    const QByteArray count = QByteArray::number(static_cast<qulonglong>(objects.size() + 1));
    pdf += "xref\n0 " + count + "\n0000000000 65535 f \n";
    for (const qsizetype offset : offsets) {
        pdf += QByteArray::number(static_cast<qlonglong>(offset)).rightJustified(10, '0') + " 00000 n \n";
    }
    pdf += "trailer\n<< /Size " + count + " /Root 1 0 R " + trailerEntries + " >>\nstartxref\n" +
           QByteArray::number(static_cast<qlonglong>(xref)) + "\n%%EOF\n";
    return pdf;
}

// A one-page PDF (a blank US Letter page) encrypted with 40-bit RC4 for the user password `password`.
inline QByteArray encryptedPdf(const QByteArray& password) {
    using detail::padded;
    using detail::rc4;
    const QByteArray id = QByteArray::fromHex("0123456789abcdef0123456789abcdef");
    const QByteArray ownerKey = QCryptographicHash::hash(padded("owner"), QCryptographicHash::Md5).left(5);
    const QByteArray o = rc4(ownerKey, padded(password));
    const QByteArray permissions = QByteArray::fromHex("fcffffff");  // P = -4, little-endian
    const QByteArray key =
        QCryptographicHash::hash(padded(password) + o + permissions + id, QCryptographicHash::Md5).left(5);
    const QByteArray u = rc4(key, padded(QByteArray()));
    // The empty content stream needs no encrypting.
    return buildPdf(
        "/MediaBox [0 0 612 792]", QByteArray(),
        {"<< /Filter /Standard /V 1 /R 2 /Length 40 /P -4 /O <" + o.toHex() + "> /U <" + u.toHex() + "> >>"},
        "/Encrypt 5 0 R /ID [<" + id.toHex() + "> <" + id.toHex() + ">]");
}

inline void writeFile(const QString& path, const QByteArray& bytes) {
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size()) {
        throw std::runtime_error("cannot write " + path.toStdString());
    }
}

inline QByteArray readFile(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        throw std::runtime_error("cannot read " + path.toStdString());
    }
    return file.readAll();
}

}  // namespace folio::test
