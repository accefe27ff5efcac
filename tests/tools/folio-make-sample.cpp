// Writes Folio's sample document: two A4 pages of vector text (a title, numbered sections, paragraphs, a
// table ruled with lines, a displayed formula, a drawn chart as an embedded image, page numbers in the
// footer), the kind of page the document pipeline is built for. Usage: folio-make-sample OUTPUT.pdf
#include <QFont>
#include <QFontMetricsF>
#include <QGuiApplication>
#include <QImage>
#include <QPageLayout>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QStringList>
#include <cstdio>
#include <vector>

namespace {

// Page geometry in points (the writer's resolution is 72 DPI).
constexpr double kPageWidth = 595;
constexpr double kPageHeight = 842;
constexpr double kMargin = 72;
constexpr double kTextWidth = kPageWidth - 2 * kMargin;

QFont font(const char* family, double points, bool bold = false, bool italic = false) {
    QFont f(QString::fromLatin1(family));
    f.setPointSizeF(points);
    f.setBold(bold);
    f.setItalic(italic);
    return f;
}

// Lays text out from the top of the page down.
class Page {
public:
    explicit Page(QPainter& painter) : painter_(painter) {}

    void title(const QString& text, const QString& byline) {
        painter_.setFont(font("DejaVu Serif", 17, true));
        block(text, Qt::AlignHCenter, 6);
        painter_.setFont(font("DejaVu Serif", 10, false, true));
        block(byline, Qt::AlignHCenter, 18);
    }

    void heading(const QString& text) {
        y_ += 6;
        painter_.setFont(font("DejaVu Serif", 12.5, true));
        block(text, Qt::AlignLeft, 6);
    }

    void paragraph(const QString& text) {
        painter_.setFont(font("DejaVu Serif", 10));
        block(text, Qt::AlignJustify, 8);
    }

    // A numbered list item: its number in the margin of the indented text.
    void item(int number, const QString& text) {
        painter_.setFont(font("DejaVu Serif", 10));
        const double indent = 22;
        const QRectF rect(kMargin + indent, y_, kTextWidth - indent, 1000);
        const QRectF used = painter_.boundingRect(rect, Qt::TextWordWrap | Qt::AlignJustify, text);
        painter_.drawText(QRectF(kMargin + 6, y_, indent, 14), Qt::AlignLeft,
                          QStringLiteral("%1.").arg(number));
        painter_.drawText(QRectF(rect.x(), y_, rect.width(), used.height()),
                          Qt::TextWordWrap | Qt::AlignJustify, text);
        y_ += used.height() + 4;
    }

    void space(double points) { y_ += points; }

    void abstract(const QString& text) {
        painter_.setFont(font("DejaVu Serif", 9.5, false, true));
        const double inset = 24;
        const QRectF rect(kMargin + inset, y_, kTextWidth - 2 * inset, 1000);
        const QRectF used = painter_.boundingRect(rect, Qt::TextWordWrap | Qt::AlignJustify, text);
        painter_.drawText(QRectF(rect.x(), y_, rect.width(), used.height()),
                          Qt::TextWordWrap | Qt::AlignJustify, text);
        y_ += used.height() + 12;
    }

    // A displayed formula, centred, with its number at the right margin.
    void formula(const QString& text, const QString& number) {
        painter_.setFont(font("DejaVu Serif", 11.5, false, true));
        const QRectF line(kMargin, y_ + 4, kTextWidth, 22);
        painter_.drawText(line, Qt::AlignCenter, text);
        painter_.setFont(font("DejaVu Serif", 10));
        painter_.drawText(line, Qt::AlignRight | Qt::AlignVCenter, number);
        y_ += 34;
    }

    void caption(const QString& text) {
        painter_.setFont(font("DejaVu Sans", 8.5));
        block(text, Qt::AlignHCenter, 10);
    }

    // A table ruled with lines: the header row bold, numbers right-aligned.
    void table(const std::vector<QStringList>& rows, const std::vector<double>& widths) {
        const double rowHeight = 18;
        double tableWidth = 0;
        for (const double w : widths) {
            tableWidth += w;
        }
        const double left = kMargin + (kTextWidth - tableWidth) / 2;
        const double top = y_;
        painter_.setPen(QPen(Qt::black, 0.8));
        for (size_t r = 0; r < rows.size(); ++r) {
            painter_.setFont(font("DejaVu Sans", 9, r == 0));
            double x = left;
            for (size_t c = 0; c < widths.size(); ++c) {
                const QRectF cell(x + 5, top + static_cast<double>(r) * rowHeight, widths[c] - 10, rowHeight);
                const Qt::Alignment align = (c == 0 || r == 0) ? Qt::AlignLeft : Qt::AlignRight;
                painter_.drawText(cell, align | Qt::AlignVCenter, rows[r][static_cast<qsizetype>(c)]);
                x += widths[c];
            }
        }
        const double bottom = top + static_cast<double>(rows.size()) * rowHeight;
        for (size_t r = 0; r <= rows.size(); ++r) {
            const double y = top + static_cast<double>(r) * rowHeight;
            painter_.drawLine(QPointF(left, y), QPointF(left + tableWidth, y));
        }
        double x = left;
        for (size_t c = 0; c <= widths.size(); ++c) {
            painter_.drawLine(QPointF(x, top), QPointF(x, bottom));
            x += c < widths.size() ? widths[c] : 0;
        }
        y_ = bottom + 6;
    }

    void image(const QImage& picture, double width) {
        const double height = width * picture.height() / picture.width();
        painter_.drawImage(QRectF(kMargin + (kTextWidth - width) / 2, y_, width, height), picture);
        y_ += height + 6;
    }

    void footer(int number, const QString& running) {
        painter_.setPen(QPen(Qt::black, 0.5));
        painter_.drawLine(QPointF(kMargin, kPageHeight - 52),
                          QPointF(kPageWidth - kMargin, kPageHeight - 52));
        painter_.setFont(font("DejaVu Sans", 8));
        const QRectF line(kMargin, kPageHeight - 48, kTextWidth, 14);
        painter_.drawText(line, Qt::AlignLeft | Qt::AlignVCenter, running);
        painter_.drawText(line, Qt::AlignRight | Qt::AlignVCenter, QString::number(number));
    }

private:
    void block(const QString& text, Qt::Alignment align, double after) {
        const QRectF rect(kMargin, y_, kTextWidth, 1000);
        const QRectF used = painter_.boundingRect(rect, Qt::TextWordWrap | align, text);
        painter_.drawText(QRectF(kMargin, y_, kTextWidth, used.height()), Qt::TextWordWrap | align, text);
        y_ += used.height() + after;
    }

    QPainter& painter_;
    double y_ = kMargin;
};

// A bar chart drawn into an image, as a scanned or exported figure would be.
QImage chart() {
    QImage image(520, 240, QImage::Format_RGB888);
    image.fill(Qt::white);
    QPainter p(&image);
    p.setRenderHint(QPainter::Antialiasing);
    const QStringList labels = {"text", "title", "table", "formula", "figure", "footer"};
    const std::vector<int> values = {92, 31, 14, 9, 12, 20};
    const QRectF plot(60, 20, 440, 180);
    p.setPen(QPen(QColor(120, 120, 120), 1));
    for (int tick = 0; tick <= 100; tick += 25) {
        const double y = plot.bottom() - plot.height() * tick / 100.0;
        p.drawLine(QPointF(plot.left() - 4, y), QPointF(plot.right(), y));
        p.setFont(font("DejaVu Sans", 10));
        p.drawText(QRectF(4, y - 8, 48, 16), Qt::AlignRight | Qt::AlignVCenter, QString::number(tick));
    }
    const double slot = plot.width() / static_cast<double>(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
        const double h = plot.height() * values[i] / 100.0;
        const QRectF bar(plot.left() + slot * static_cast<double>(i) + slot * 0.2, plot.bottom() - h,
                         slot * 0.6, h);
        p.fillRect(bar, QColor(46, 94, 170));
        p.setPen(Qt::black);
        p.drawText(QRectF(bar.left() - 10, plot.bottom() + 4, bar.width() + 20, 16), Qt::AlignHCenter,
                   labels[static_cast<qsizetype>(i)]);
    }
    p.setPen(QPen(Qt::black, 1.5));
    p.drawLine(plot.bottomLeft(), plot.bottomRight());
    p.drawLine(plot.bottomLeft(), plot.topLeft());
    return image;
}

void firstPage(Page& page) {
    page.title(QStringLiteral("Reading Pages in Their Natural Order"),
               QStringLiteral("A sample document for Folio's page pipeline"));
    page.abstract(QStringLiteral(
        "Abstract. Documents reach us as pages: a report printed and scanned, a form photographed on a desk, "
        "a "
        "paper exported to PDF. To turn such a page back into text, a reader must find its parts, decide the "
        "order in which a person would read them, and recognise each part as what it is: a paragraph, a "
        "table, "
        "a formula or a figure."));
    page.heading(QStringLiteral("1 Introduction"));
    page.paragraph(QStringLiteral(
        "A page is more than a sequence of lines. Headings announce sections, paragraphs run in one or more "
        "columns, tables arrange numbers in rows and columns, and figures carry captions that belong to "
        "them. "
        "Reading a page correctly means keeping these parts apart and putting them back together in the "
        "order "
        "their author intended. The work falls into three stages:"));
    page.item(1,
              QStringLiteral("Layout analysis finds the blocks of a page and labels each one: title, text, "
                             "table, formula, figure, header or footer."));
    page.item(2, QStringLiteral("Recognition reads every block with the task that suits it: plain text for "
                                "paragraphs, structure for tables, notation for formulas."));
    page.item(
        3, QStringLiteral("Assembly joins the results into Markdown, where headings, lists and tables keep "
                          "their meaning."));
    page.space(4);
    page.heading(QStringLiteral("2 Method"));
    page.paragraph(QStringLiteral(
        "Each detected block receives a box and a score. Boxes that overlap strongly are merged, and tiny "
        "boxes "
        "are dropped. The order of the remaining blocks is predicted from their positions, so that a block "
        "at "
        "the top of a column is read before the block beneath it. The quality of an ordering is measured by "
        "the weighted distance between predicted and true positions:"));
    page.formula(QStringLiteral("E = Σᵢ wᵢ · ‖ pᵢ − p̂ᵢ ‖² ,   wᵢ ≥ 0"), QStringLiteral("(1)"));
    page.paragraph(QStringLiteral(
        "The weights favour large blocks, since a misplaced paragraph disturbs a reader far more than a "
        "misplaced page number. Blocks outside the reading order, such as running headers and footers, are "
        "kept with their boxes but left out of the text."));
    page.footer(1, QStringLiteral("Folio sample document"));
}

void secondPage(Page& page) {
    page.heading(QStringLiteral("3 Results"));
    page.paragraph(QStringLiteral(
        "We processed a small collection of pages of four kinds. Table 1 lists how many pages of each kind "
        "there were, how many blocks a page held on average, and the time a page took from rendering to "
        "Markdown."));
    page.caption(QStringLiteral("Table 1: Pages, blocks and time by kind of page."));
    page.table({{"Kind of page", "Pages", "Blocks per page", "Seconds per page"},
                {"Research paper", "48", "21.4", "0.11"},
                {"Invoice", "35", "17.9", "0.08"},
                {"Book page", "62", "9.6", "0.05"},
                {"Handwritten form", "17", "13.2", "0.09"}},
               {130, 60, 100, 110});
    page.paragraph(QStringLiteral(
        "Research papers hold the most blocks, because of their formulas, references and two-column layout. "
        "Book pages are the simplest: one column of text with a heading now and then. Figure 1 shows how the "
        "blocks of all pages divide among the most common labels."));
    page.image(chart(), 330);
    page.caption(QStringLiteral("Figure 1: Blocks per label, as a share of the largest group."));
    page.heading(QStringLiteral("4 Discussion"));
    page.paragraph(QStringLiteral(
        "Most errors come from pages whose layout is ambiguous: a caption placed beside its figure instead "
        "of "
        "below it, or a table without ruling lines whose columns must be inferred from the alignment of its "
        "numbers. Rendering pages at a higher resolution helps with small print but costs time, so the "
        "resolution is chosen per document rather than fixed."));
    page.heading(QStringLiteral("5 Conclusion"));
    page.paragraph(QStringLiteral(
        "Reading a page in its natural order depends on finding its blocks, ordering them as a person would, "
        "and recognising each with the right task. Tables and formulas need the most care, and running "
        "headers "
        "and footers are best kept out of the text. Everything shown here runs on a single workstation, "
        "without sending a page anywhere."));
    page.footer(2, QStringLiteral("Folio sample document"));
}

}  // namespace

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
        qputenv("QT_QPA_PLATFORM", "offscreen");
    }
    QGuiApplication app(argc, argv);
    if (argc != 2) {
        std::fprintf(stderr, "usage: folio-make-sample OUTPUT.pdf\n");
        return 2;
    }
    const QString output = QString::fromLocal8Bit(argv[1]);
    QPdfWriter writer(output);
    writer.setResolution(72);
    writer.setTitle(QStringLiteral("Reading Pages in Their Natural Order"));
    writer.setCreator(QStringLiteral("folio-make-sample"));
    writer.setPageLayout(QPageLayout(QPageSize(QPageSize::A4), QPageLayout::Portrait, QMarginsF(0, 0, 0, 0)));
    QPainter painter;
    if (!painter.begin(&writer)) {
        std::fprintf(stderr, "folio-make-sample: cannot write %s\n", argv[1]);
        return 1;
    }
    Page first(painter);
    firstPage(first);
    writer.newPage();
    Page second(painter);
    secondPage(second);
    if (!painter.end()) {
        std::fprintf(stderr, "folio-make-sample: cannot finish %s\n", argv[1]);
        return 1;
    }
    return 0;
}
