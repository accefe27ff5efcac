#include "app/export/streaming-writer.h"

#include <QDir>
#include <QFile>
#include <utility>

#include "app/export/output-folder.h"
#include "engine/common/error.h"

namespace folio {

StreamingWriter::StreamingWriter(ExportOptions options, QString suffix, bool savesFigures)
    : options_(std::move(options)), suffix_(std::move(suffix)), savesFigures_(savesFigures) {
    labels_ = effectiveMarkdownLabels(options_);
}

void StreamingWriter::begin(const DocumentInfo& document) {
    if (file_) {
        file_->cancelWriting();
        file_.reset();
    }
    files_.clear();  // a finished document's files stay
    document_ = document;
    if (options_.outputDir.isEmpty()) {
        fail("export: no output folder given for ", document.stem.toStdString());
    }
    if (document.stem.isEmpty() || document.stem.contains(QLatin1Char('/'))) {
        fail(document.inputPath.toStdString(), ": no usable name for the output files (stem \"",
             document.stem.toStdString(), "\")");
    }
    makeOutputFolder(options_.outputDir);
    target_ = QDir(options_.outputDir).absoluteFilePath(document.stem + suffix_);
    file_ = std::make_unique<QSaveFile>(target_);
    if (!file_->open(QIODevice::WriteOnly)) {
        const std::string why = file_->errorString().toStdString();
        file_.reset();
        fail(target_.toStdString(), ": cannot create the file: ", why);
    }
    if (savesFigures_) {
        figures_.begin(options_.outputDir, document.stem);
    }
    merger_ = TableMerger();
    links_.clear();
    pagesWritten_ = 0;
    blocksWritten_ = 0;
    write(opening());
}

void StreamingWriter::addPage(const PageResult& page) {
    if (!file_) {
        fail(target_.toStdString(), ": a page added outside begin() and finish()");
    }
    PageResult text = page;
    text.image = QImage();
    std::vector<QString> links(text.blocks.size());
    for (size_t i = 0; i < text.blocks.size(); ++i) {
        BlockResult& block = text.blocks[i];
        if (savesFigures_ && !block.image.isNull() && labels_.contains(block.label)) {
            links[i] = figures_.add(block);
        }
        block.image = QImage();
    }
    links_.push_back(std::move(links));
    merger_.push(std::move(text));
    writeReady();
}

void StreamingWriter::finish() {
    if (!file_) {
        fail(target_.toStdString(), ": finish() without begin()");
    }
    merger_.finish();
    writeReady();
    write(closing());
    QStringList written;
    if (savesFigures_) {
        written = figures_.commit();
    }
    if (!file_->commit()) {
        const std::string why = file_->errorString().toStdString();
        file_.reset();
        figures_.discard();
        fail(target_.toStdString(), ": cannot write the file: ", why);
    }
    file_.reset();
    files_ = QStringList{target_} + written;
}

void StreamingWriter::abort() {
    if (file_) {
        file_->cancelWriting();
        file_.reset();  // removes the temporary file
    }
    figures_.discard();
    for (const QString& path : std::as_const(files_)) {
        QFile::remove(path);
    }
    files_.clear();
    links_.clear();
    merger_ = TableMerger();
}

void StreamingWriter::write(const QString& text) {
    if (text.isEmpty()) {
        return;
    }
    const QByteArray bytes = text.toUtf8();
    if (file_->write(bytes) != bytes.size()) {
        const std::string why = file_->errorString().toStdString();
        abort();
        fail(target_.toStdString(), ": cannot write: ", why);
    }
}

void StreamingWriter::writeReady() {
    for (const PageResult& page : merger_.takeReady()) {
        const std::vector<QString> links = std::move(links_.front());
        links_.pop_front();
        write(pageText(page, links, blocksWritten_, pagesWritten_));
        ++pagesWritten_;
        blocksWritten_ += static_cast<int>(page.blocks.size());
    }
}

}  // namespace folio
