#include "app/pipeline/source-input.h"

#include <chrono>

namespace folio {

namespace {

class SourceInput final : public DocumentInput {
public:
    SourceInput(std::unique_ptr<DocumentSource> source, std::vector<int> pages)
        : source_(std::move(source)), pages_(std::move(pages)) {}

    QString path() const override { return source_->path(); }
    int pageCount() const override { return source_->pageCount(); }
    int selectedCount() const override { return static_cast<int>(pages_.size()); }
    int pageIndex(int i) const override {
        return source_->resultPageIndex(pages_.at(static_cast<size_t>(i)));
    }
    PageInput page(int i) override {
        const int index = pages_.at(static_cast<size_t>(i));
        const auto start = std::chrono::steady_clock::now();
        RenderedPage rendered = source_->renderPage(index);
        PageInput input;
        input.image = std::move(rendered.image);
        input.dpi = rendered.dpi;
        input.pageIndex = source_->resultPageIndex(index);
        input.renderMs =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        return input;
    }

private:
    std::unique_ptr<DocumentSource> source_;
    std::vector<int> pages_;
};

}  // namespace

DocumentOpener sourceOpener(SourceOpen open, PageRange range, std::function<void(const QString&)> notes) {
    return [open = std::move(open), range = std::move(range),
            notes = std::move(notes)](const QString& path) -> std::unique_ptr<DocumentInput> {
        std::unique_ptr<DocumentSource> source = open(path);
        PageRange::Selection selection = range.select(source->pageCount(), path.toStdString());
        if (notes) {
            for (const std::string& note : selection.notes) {
                notes(QString::fromStdString(note));
            }
        }
        return std::make_unique<SourceInput>(std::move(source), std::move(selection.pages));
    };
}

}  // namespace folio
