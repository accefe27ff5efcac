#include "ui/main-window/export-dialog.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace folio {

QString exportFormatName(ExportFormat format) {
    switch (format) {
        case ExportFormat::Markdown:
            return QObject::tr("Markdown (with an images folder)");
        case ExportFormat::Json:
            return QObject::tr("JSON (blocks, boxes, labels, order)");
        case ExportFormat::Html:
            return QObject::tr("HTML");
        case ExportFormat::SearchablePdf:
            return QObject::tr("Searchable PDF");
        case ExportFormat::Xlsx:
            return QObject::tr("XLSX (tables)");
        case ExportFormat::Docx:
            return QObject::tr("Word document (.docx)");
    }
    return {};
}

ExportDialog::ExportDialog(const QString& folder, const QList<ExportFormat>& formats, int pageCount,
                           QWidget* parent)
    : QDialog(parent), pageCount_(pageCount) {
    setWindowTitle(tr("Export"));
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    auto* row = new QHBoxLayout;
    folder_ = new QLineEdit(folder, this);
    // Wide enough for a usual path, so that the folder's name shows, not only its start.
    folder_->setMinimumWidth(folder_->fontMetrics().horizontalAdvance(QLatin1Char('x')) * 48);
    auto* browse = new QPushButton(tr("Choose…"), this);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString chosen = QFileDialog::getExistingDirectory(this, tr("Export to"), folder_->text());
        if (!chosen.isEmpty()) {
            folder_->setText(chosen);
        }
    });
    row->addWidget(folder_);
    row->addWidget(browse);
    form->addRow(tr("Folder:"), row);
    pagesField_ = new QLineEdit(this);
    pagesField_->setObjectName(QStringLiteral("exportPages"));
    pagesField_->setPlaceholderText(tr("All %n page(s); or, for example, 1-3, 8", nullptr, pageCount));
    pagesError_ = new QLabel(this);
    pagesError_->setObjectName(QStringLiteral("exportPagesError"));
    pagesError_->setStyleSheet(QStringLiteral("color: #b91c1c;"));
    pagesError_->setWordWrap(true);
    pagesError_->hide();
    connect(pagesField_, &QLineEdit::textChanged, pagesError_, &QWidget::hide);
    form->addRow(tr("Pages:"), pagesField_);
    form->addRow(QString(), pagesError_);
    layout->addLayout(form);
    for (const ExportFormat format : {ExportFormat::Markdown, ExportFormat::Json, ExportFormat::Html,
                                      ExportFormat::SearchablePdf, ExportFormat::Xlsx, ExportFormat::Docx}) {
        auto* box = new QCheckBox(exportFormatName(format), this);
        box->setChecked(formats.contains(format));
        boxes_.push_back({format, box});
        layout->addWidget(box);
    }
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Export"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
}

void ExportDialog::accept() {
    const QString text = pagesField_->text().trimmed();
    try {
        pages_ = PageRange();
        if (!text.isEmpty()) {
            pages_ = PageRange::parse(text.toStdString());
            // A range that selects none of the document's pages is said here, not after the export starts.
            pages_.select(pageCount_, tr("the document").toStdString());
        }
    } catch (const std::exception& e) {
        pagesError_->setText(QString::fromUtf8(e.what()));
        pagesError_->show();
        pagesField_->setFocus();
        return;
    }
    QDialog::accept();
}

QString ExportDialog::folder() const {
    return folder_->text();
}

QList<ExportFormat> ExportDialog::formats() const {
    QList<ExportFormat> chosen;
    for (const auto& [format, box] : boxes_) {
        if (box->isChecked()) {
            chosen << format;
        }
    }
    return chosen;
}

}  // namespace folio
