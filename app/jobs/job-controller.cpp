#include "app/jobs/job-controller.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QMetaObject>
#include <QSet>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <variant>

#include "app/documents/page-image.h"
#include "app/documents/page-range.h"
#include "app/pipeline/block-content.h"
#include "app/pipeline/block-crop.h"
#include "app/pipeline/block-request.h"
#include "app/pipeline/block-task.h"
#include "app/pipeline/source-input.h"

namespace folio {

namespace {

QImage thumbnailOf(const QImage& page) {
    if (page.isNull()) {
        return {};
    }
    return page.scaled(240, 320, Qt::KeepAspectRatio, Qt::SmoothTransformation);
}

QString textKey(const QString& path, int pageIndex, int blockId) {
    return path + QChar(0x1f) + QString::number(pageIndex) + QChar(0x1f) + QString::number(blockId);
}

struct EvDocStarted {
    DocumentInfo info;
};
struct EvLaidOut {
    DocumentInfo info;
    PageResult page;
    QImage preview;
};
struct EvText {
    QString key;
    QString path;
    int pageIndex = 0;
    int blockId = 0;
};
struct EvPageDone {
    DocumentInfo info;
    PageResult page;
};
struct EvDocDone {
    DocumentInfo info;
    DocumentOutcome outcome;
};
struct EvProgress {};
struct EvRunEnded {
    PipelineSummary summary;
    QString error;
};
struct EvBlockOutput {
    int64_t serial = 0;
    QString text;
    bool finished = false;
    QString error;
    int nTokens = 0;
    bool truncated = false;
};
using Event = std::variant<EvDocStarted, EvLaidOut, EvText, EvPageDone, EvDocDone, EvProgress, EvRunEnded,
                           EvBlockOutput>;

// A document's pages narrowed to some of them (positions in the document's page list): what a run that
// continues a document, or keeps its edited pages, reads.
class PageSubsetInput final : public DocumentInput {
public:
    PageSubsetInput(std::unique_ptr<DocumentInput> input, const std::vector<int>& positions)
        : input_(std::move(input)) {
        for (int i = 0; i < input_->selectedCount(); ++i) {
            const int position = DocumentModel::pagePosition(input_->pageIndex(i));
            if (std::binary_search(positions.begin(), positions.end(), position)) {
                selected_.push_back(i);
            }
        }
    }

    QString path() const override { return input_->path(); }
    int pageCount() const override { return input_->pageCount(); }
    int selectedCount() const override { return static_cast<int>(selected_.size()); }
    int pageIndex(int i) const override { return input_->pageIndex(selected_.at(static_cast<size_t>(i))); }
    PageInput page(int i) override { return input_->page(selected_.at(static_cast<size_t>(i))); }

private:
    std::unique_ptr<DocumentInput> input_;
    std::vector<int> selected_;
};

// A block request as an undo command: undone while it runs, it is stopped (its block goes back to what it
// was) and a redo submits it again.
class BlockRequestCommand final : public PageCommand {
public:
    BlockRequestCommand(DocumentModel& model, JobController& jobs, int doc, int page, int blockId,
                        const QString& text, std::function<void()> action)
        : PageCommand(model, doc, page, text, std::move(action)), jobs_(jobs), blockId_(blockId) {}

    void undo() override {
        running_ = jobs_.isRecognizing(document(), pageIndex(), blockId_);
        jobs_.cancelBlockRequests(document(), pageIndex(), blockId_);
        PageCommand::undo();
    }

protected:
    bool resultComplete() const override { return !running_; }

private:
    JobController& jobs_;
    int blockId_;
    bool running_ = false;
};

}  // namespace

// Events from the worker and the engine threads, waiting for the GUI thread.
struct JobController::Inbox {
    std::mutex mutex;
    bool alive = true;  // the controller exists: wake may be called
    bool posted = false;
    std::function<void()> wake;
    std::deque<Event> events;
    std::map<QString, QString> texts;  // a block's latest text, while its EvText waits
    std::optional<PipelineProgress> progress;

    void pushLocked(Event event) {
        events.push_back(std::move(event));
        if (!posted && alive) {
            posted = true;
            wake();
        }
    }
    void push(Event event) {
        const std::lock_guard lock(mutex);
        pushLocked(std::move(event));
    }
    void pushText(const QString& path, int pageIndex, int blockId, const QString& text) {
        const QString key = textKey(path, pageIndex, blockId);
        const std::lock_guard lock(mutex);
        const bool waiting = texts.contains(key);
        texts[key] = text;
        if (!waiting) {
            pushLocked(EvText{key, path, pageIndex, blockId});
        }
    }
    void pushProgress(const PipelineProgress& p) {
        const std::lock_guard lock(mutex);
        const bool waiting = progress.has_value();
        progress = p;
        if (!waiting) {
            pushLocked(EvProgress{});
        }
    }
    void pushBlockOutput(EvBlockOutput output) {
        const std::lock_guard lock(mutex);
        // A waiting partial output of the same request is replaced (its text is contained in this one).
        if (!events.empty()) {
            if (auto* last = std::get_if<EvBlockOutput>(&events.back());
                last != nullptr && last->serial == output.serial && !last->finished) {
                *last = std::move(output);
                return;
            }
        }
        pushLocked(std::move(output));
    }
};

// The pipeline's callbacks, on the worker thread: each becomes an event.
struct JobController::Observer final : PipelineObserver {
    explicit Observer(std::shared_ptr<Inbox> inbox) : inbox_(std::move(inbox)) {}

    void documentStarted(const DocumentInfo& document) override { inbox_->push(EvDocStarted{document}); }
    void pageLaidOut(const DocumentInfo& document, const PageResult& page) override {
        inbox_->push(EvLaidOut{document, page, thumbnailOf(page.image)});
    }
    void blockText(const DocumentInfo& document, int pageIndex, int blockId, const QString& text) override {
        const QString key = textKey(document.inputPath, pageIndex, blockId);
        QString& soFar = texts_[key];
        soFar += text;
        inbox_->pushText(document.inputPath, pageIndex, blockId, soFar);
    }
    void pageFinished(const DocumentInfo& document, const PageResult& page) override {
        for (size_t i = 0; i < page.blocks.size(); ++i) {
            texts_.erase(textKey(document.inputPath, page.pageIndex, static_cast<int>(i)));
        }
        inbox_->push(EvPageDone{document, page});
    }
    void documentFinished(const DocumentInfo& document, const DocumentOutcome& outcome) override {
        inbox_->push(EvDocDone{document, outcome});
    }
    void progressChanged(const PipelineProgress& progress) override { inbox_->pushProgress(progress); }

private:
    std::shared_ptr<Inbox> inbox_;
    std::map<QString, QString> texts_;  // each block's text so far
};

JobController::JobController(EngineService& service, DocumentModel& model, QObject* parent)
    : QObject(parent), service_(service), model_(model), inbox_(std::make_shared<Inbox>()) {
    qRegisterMetaType<PipelineProgress>();
    qRegisterMetaType<DocumentOutcome>();
    qRegisterMetaType<PipelineSummary>();
    inbox_->wake = [this] {
        QMetaObject::invokeMethod(
            this, [this] { drain(); }, Qt::QueuedConnection);
    };
    // Block requests that waited for their page's image go once it is back.
    connect(&model_, &DocumentModel::pageChanged, this, [this](int doc, int page) {
        if (waitingForImage_.isEmpty() || model_.page(doc, page).result.image.isNull()) {
            return;
        }
        QList<BlockRequest> ready;
        for (auto it = waitingForImage_.begin(); it != waitingForImage_.end();) {
            if (it->doc == doc && it->page == page) {
                ready.append(*it);
                it = waitingForImage_.erase(it);
            } else {
                ++it;
            }
        }
        for (const BlockRequest& rerun : std::as_const(ready)) {
            submitBlock(rerun.doc, rerun.page, rerun.blockId, rerun.prompt);
        }
    });
    connect(&model_, &DocumentModel::blocksRenumbered, this, &JobController::onBlocksRenumbered);
    connect(&model_, &DocumentModel::documentClosed, this, &JobController::onDocumentClosed);
}

JobController::~JobController() {
    {
        const std::lock_guard lock(inbox_->mutex);
        inbox_->alive = false;
    }
    if (pipeline_) {
        pipeline_->cancel();
    }
    if (worker_.joinable()) {
        worker_.join();
    }
    for (BlockRequest& request : blockRequests_) {
        request.handle.cancel();
    }
}

void JobController::run(const QList<int>& documents, RunScope scope) {
    for (const int doc : documents) {
        if (!model_.isOpen(doc) || queue_.contains(doc) ||
            (isRunning() && jobDocuments_.values().contains(doc))) {
            continue;
        }
        if (!model_.hasPagesToRun(doc, scope)) {
            // Every page in the scope has its result (a run cancelled after its last page): nothing to run.
            const DocumentEntry& entry = model_.document(doc);
            if (entry.pagesDone == static_cast<int>(entry.pages.size()) &&
                entry.state == DocumentState::Cancelled) {
                model_.setDocumentState(doc, DocumentState::Done);
            }
            continue;
        }
        queue_.push_back(doc);
        queuedScopes_.insert(doc, scope);
        model_.setDocumentState(doc, DocumentState::Queued);
    }
    startNext();
}

void JobController::startQueued() {
    startNext();
}

void JobController::setHeld(bool held) {
    held_ = held;
    startNext();
}

void JobController::startNext() {
    if (held_ || isRunning() || queue_.isEmpty()) {
        return;
    }
    if (service_.status().state != ServiceState::Ready) {
        return;  // started by startQueued() once the engine is ready
    }
    jobDocuments_.clear();
    QStringList inputs;
    std::map<QString, std::vector<int>> subsets;  // documents that run some of their pages: which
    for (const int doc : std::as_const(queue_)) {
        const QString path = model_.document(doc).path;
        const RunScope scope = queuedScopes_.value(doc, RunScope::All);
        jobDocuments_.insert(path, doc);
        inputs << path;
        const std::vector<int> pages = model_.pagesToRun(doc, scope);
        // Re-runs and drawn boxes on the pages that run again are stopped.
        for (const int page : pages) {
            cancelBlockRequests(doc, page);
        }
        if (scope == RunScope::All || pages.size() == model_.document(doc).pages.size()) {
            model_.resetResults(doc);
        } else {
            model_.resetPages(doc, pages);
            subsets.emplace(path, pages);
        }
    }
    queue_.clear();
    queuedScopes_.clear();
    DocumentOpener opener = opener_ ? opener_ : sourceOpener(documentOptions_, PageRange());
    if (!subsets.empty()) {
        opener = [base = std::move(opener), subsets](const QString& path) -> std::unique_ptr<DocumentInput> {
            std::unique_ptr<DocumentInput> input = base(path);
            const auto it = subsets.find(path);
            if (it == subsets.end()) {
                return input;
            }
            return std::make_unique<PageSubsetInput>(std::move(input), it->second);
        };
    }
    try {
        pipeline_ = std::make_unique<DocumentPipeline>(service_, std::move(opener), pipelineOptions_);
    } catch (const std::exception& e) {
        for (const int doc : jobDocuments_) {
            model_.setDocumentState(doc, DocumentState::Failed, QString::fromUtf8(e.what()));
        }
        Q_EMIT errorOccurred(QString::fromUtf8(e.what()));
        return;
    }
    observer_ = std::make_unique<Observer>(inbox_);
    progress_ = {};
    DocumentPipeline* pipeline = pipeline_.get();
    Observer* observer = observer_.get();
    std::shared_ptr<Inbox> inbox = inbox_;
    worker_ = std::thread([pipeline, observer, inbox, inputs] {
        EvRunEnded ended;
        try {
            ended.summary = pipeline->run(inputs, *observer);
        } catch (const std::exception& e) {
            ended.error = QString::fromUtf8(e.what());
        }
        inbox->push(std::move(ended));
    });
    Q_EMIT runningChanged(true);
}

void JobController::cancel() {
    for (const int doc : std::as_const(queue_)) {
        model_.setDocumentState(
            doc, model_.document(doc).pagesDone > 0 ? DocumentState::Cancelled : DocumentState::Idle);
    }
    queue_.clear();
    queuedScopes_.clear();
    requeueAfterCancel_.clear();
    if (pipeline_) {
        pipeline_->cancel();
    }
    // Re-runs and drawn boxes under way stop too (their blocks keep what they had so far).
    QSet<int> docs;
    for (const BlockRequest& request : std::as_const(blockRequests_)) {
        docs.insert(request.doc);
    }
    for (const BlockRequest& request : std::as_const(waitingForImage_)) {
        docs.insert(request.doc);
    }
    for (const int doc : std::as_const(docs)) {
        cancelBlockRequests(doc);
    }
}

bool JobController::isRecognizing(int doc, int page, int blockId) const {
    const auto matches = [&](const BlockRequest& r) {
        return r.doc == doc && r.page == page && r.blockId == blockId;
    };
    return std::any_of(blockRequests_.begin(), blockRequests_.end(), matches) ||
           std::any_of(waitingForImage_.begin(), waitingForImage_.end(), matches);
}

void JobController::cancelBlockRequests(int doc, int page, int blockId) {
    const auto matches = [&](const BlockRequest& r) {
        return r.doc == doc && (page < 0 || r.page == page) && (blockId < 0 || r.blockId == blockId);
    };
    std::vector<std::pair<int, int>> stopped;  // page, block
    for (auto it = blockRequests_.begin(); it != blockRequests_.end();) {
        if (matches(*it)) {
            it->handle.cancel();
            stopped.emplace_back(it->page, it->blockId);
            it = blockRequests_.erase(it);
        } else {
            ++it;
        }
    }
    for (auto it = waitingForImage_.begin(); it != waitingForImage_.end();) {
        if (matches(*it)) {
            stopped.emplace_back(it->page, it->blockId);
            it = waitingForImage_.erase(it);
        } else {
            ++it;
        }
    }
    // The blocks, where they are still there, no longer wait for text.
    for (const auto& [p, b] : stopped) {
        if (const BlockResult* block = model_.block(doc, p, b); block != nullptr && block->recognising) {
            BlockResult stoppedBlock = *block;
            stoppedBlock.recognising = false;
            model_.setBlock(doc, p, stoppedBlock);
        }
    }
}

void JobController::onBlocksRenumbered(int doc, int page) {
    // Each request follows its block (the same box and task); one whose block is gone stops.
    const auto find = [&](const BlockRequest& r) {
        const std::vector<BlockResult>& blocks = model_.page(doc, page).result.blocks;
        for (const BlockResult& b : blocks) {
            if (b.box.x1 == r.box.x1 && b.box.y1 == r.box.y1 && b.box.x2 == r.box.x2 &&
                b.box.y2 == r.box.y2 && b.task == r.prompt) {
                return b.id;
            }
        }
        return -1;
    };
    for (auto it = blockRequests_.begin(); it != blockRequests_.end();) {
        if (it->doc == doc && it->page == page) {
            it->blockId = find(*it);
            if (it->blockId < 0) {
                it->handle.cancel();
                it = blockRequests_.erase(it);
                continue;
            }
        }
        ++it;
    }
    for (auto it = waitingForImage_.begin(); it != waitingForImage_.end();) {
        if (it->doc == doc && it->page == page) {
            it->blockId = find(*it);
            if (it->blockId < 0) {
                it = waitingForImage_.erase(it);
                continue;
            }
        }
        ++it;
    }
    // Blocks put back as being recognised whose request is no longer under way wait for nothing.
    const std::vector<BlockResult> blocks = model_.page(doc, page).result.blocks;
    for (const BlockResult& b : blocks) {
        if (b.recognising && !isRecognizing(doc, page, b.id)) {
            BlockResult idle = b;
            idle.recognising = false;
            model_.setBlock(doc, page, idle);
        }
    }
}

void JobController::onDocumentClosed(int doc) {
    cancelBlockRequests(doc);
    queue_.removeAll(doc);
    queuedScopes_.remove(doc);
    requeueAfterCancel_.removeAll(doc);
    if (!isRunning() || !jobDocuments_.values().contains(doc)) {
        return;
    }
    // The pipeline runs its documents as one: it stops, and the others of the run go on from where they
    // were once it has.
    for (const int other : std::as_const(jobDocuments_)) {
        const DocumentState state = model_.document(other).state;
        if (other != doc && model_.isOpen(other) &&
            (state == DocumentState::Queued || state == DocumentState::Running)) {
            requeueAfterCancel_.append(other);
        }
    }
    pipeline_->cancel();
}

void JobController::drain() {
    QElapsedTimer slice;
    slice.start();
    for (;;) {
        Event event;
        QString text;
        std::optional<PipelineProgress> progress;
        {
            const std::lock_guard lock(inbox_->mutex);
            if (inbox_->events.empty()) {
                inbox_->posted = false;
                return;
            }
            if (slice.elapsed() >= 8) {
                inbox_->wake();  // the rest in the next slice, after other events
                return;
            }
            event = std::move(inbox_->events.front());
            inbox_->events.pop_front();
            if (const auto* t = std::get_if<EvText>(&event)) {
                text = inbox_->texts[t->key];
                inbox_->texts.erase(t->key);
            } else if (std::holds_alternative<EvProgress>(event)) {
                progress = inbox_->progress;
                inbox_->progress.reset();
            }
        }

        if (const auto* started = std::get_if<EvDocStarted>(&event)) {
            const int doc = docOf(started->info.inputPath);
            if (!model_.isOpen(doc)) {
                continue;
            }
            model_.documentStarted(doc, started->info);
            Q_EMIT documentStarted(doc);
        } else if (const auto* laidOut = std::get_if<EvLaidOut>(&event)) {
            const int doc = docOf(laidOut->info.inputPath);
            const int page = DocumentModel::pagePosition(laidOut->page.pageIndex);
            model_.pageLaidOut(doc, page, laidOut->page);
            if (!laidOut->preview.isNull()) {
                model_.setPreview(doc, page, laidOut->preview);
            }
        } else if (const auto* textEvent = std::get_if<EvText>(&event)) {
            model_.blockText(docOf(textEvent->path), DocumentModel::pagePosition(textEvent->pageIndex),
                             textEvent->blockId, text);
        } else if (const auto* pageDone = std::get_if<EvPageDone>(&event)) {
            const int doc = docOf(pageDone->info.inputPath);
            if (!model_.isOpen(doc)) {
                continue;
            }
            const int page = DocumentModel::pagePosition(pageDone->page.pageIndex);
            model_.pageFinished(doc, page, pageDone->page);
            const QString where = QStringLiteral("%1, page %2").arg(model_.document(doc).name).arg(page + 1);
            if (!pageDone->page.error.isEmpty()) {
                Q_EMIT errorOccurred(where + QStringLiteral(": ") + pageDone->page.error);
            }
            for (const BlockResult& block : pageDone->page.blocks) {
                if (!block.error.isEmpty()) {
                    Q_EMIT errorOccurred(QStringLiteral("%1, block %2 (%3): %4")
                                             .arg(where)
                                             .arg(block.id + 1)
                                             .arg(block.label, block.error));
                }
            }
        } else if (const auto* docDone = std::get_if<EvDocDone>(&event)) {
            const int doc = docOf(docDone->info.inputPath);
            if (!model_.isOpen(doc)) {
                continue;
            }
            DocumentState state = DocumentState::Done;
            if (!docDone->outcome.error.isEmpty()) {
                state = DocumentState::Failed;
                Q_EMIT errorOccurred(docDone->outcome.error);
            } else if (docDone->outcome.cancelled) {
                state = DocumentState::Cancelled;
            }
            model_.setDocumentState(doc, state, docDone->outcome.error);
            Q_EMIT documentFinished(doc, docDone->outcome);
        } else if (std::holds_alternative<EvProgress>(event)) {
            if (progress) {
                progress_ = *progress;
                Q_EMIT progressChanged(progress_);
            }
        } else if (auto* ended = std::get_if<EvRunEnded>(&event)) {
            if (worker_.joinable()) {
                worker_.join();
            }
            const bool cancelled = pipeline_ && pipeline_->cancelled();
            pipeline_.reset();
            observer_.reset();
            for (const int doc : std::as_const(jobDocuments_)) {
                const DocumentState state = model_.document(doc).state;
                if (state == DocumentState::Queued || state == DocumentState::Running) {
                    model_.setDocumentState(doc, cancelled ? DocumentState::Cancelled : DocumentState::Done);
                }
                model_.runStopped(doc);
            }
            if (!ended->error.isEmpty()) {
                for (const int doc : std::as_const(jobDocuments_)) {
                    model_.setDocumentState(doc, DocumentState::Failed, ended->error);
                }
                Q_EMIT errorOccurred(ended->error);
            }
            ended->summary.cancelled = ended->summary.cancelled || cancelled;
            Q_EMIT runningChanged(false);
            Q_EMIT jobFinished(ended->summary);
            const QList<int> requeue = std::exchange(requeueAfterCancel_, {});
            run(requeue, RunScope::Missing);
            startNext();
        } else if (const auto* output = std::get_if<EvBlockOutput>(&event)) {
            const auto it = blockRequests_.find(output->serial);
            if (it == blockRequests_.end()) {
                continue;
            }
            const BlockRequest& request = *it;
            if (!output->finished) {
                model_.blockText(request.doc, request.page, request.blockId, output->text);
                continue;
            }
            const int rdoc = request.doc;
            const int rpage = request.page;
            const int rblock = request.blockId;
            blockRequests_.erase(it);
            const BlockResult* current = model_.block(rdoc, rpage, rblock);
            if (current == nullptr) {
                continue;
            }
            BlockResult block = *current;
            block.recognising = false;
            block.rawText = output->text;
            block.nTokens = output->nTokens;
            block.truncated = output->truncated;
            block.error = output->error;
            if (output->error.isEmpty()) {
                finalizeBlock(block);
            } else {
                Q_EMIT errorOccurred(QStringLiteral("%1, page %2, block %3: %4")
                                         .arg(model_.document(rdoc).name)
                                         .arg(rpage + 1)
                                         .arg(rblock + 1)
                                         .arg(output->error));
            }
            model_.setBlock(rdoc, rpage, block);
            Q_EMIT blockRecognized(rdoc, rpage, rblock);
        }
    }
}

bool JobController::canRecognize(int doc, int page) {
    if (model_.page(doc, page).result.image.isNull() && !model_.needsPageImage(doc, page)) {
        Q_EMIT errorOccurred(
            QCoreApplication::translate("folio::JobController",
                                        "%1, page %2: run the document before recognising its blocks")
                .arg(model_.document(doc).name)
                .arg(page + 1));
        return false;
    }
    if (service_.status().state != ServiceState::Ready) {
        Q_EMIT errorOccurred(QStringLiteral("The engine is not ready: load a model first"));
        return false;
    }
    return true;
}

void JobController::rerunBlock(int doc, int page, int blockId, const QString& prompt) {
    const BlockTaskChoice* choice = findBlockTask(prompt);
    if (choice == nullptr || model_.block(doc, page, blockId) == nullptr) {
        Q_EMIT errorOccurred(QStringLiteral("No such block or task to run: %1").arg(prompt));
        return;
    }
    if (!canRecognize(doc, page)) {
        return;
    }
    model_.undoStack(doc)->push(new BlockRequestCommand(
        model_, *this, doc, page, blockId, tr("Re-run block %1 as %2").arg(blockId + 1).arg(choice->name),
        [this, doc, page, blockId, prompt] { submitBlock(doc, page, blockId, prompt); }));
}

void JobController::submitBlock(int doc, int page, int blockId, const QString& prompt) {
    const BlockTaskChoice* choice = findBlockTask(prompt);
    const BlockResult* current = model_.block(doc, page, blockId);
    if (choice == nullptr || current == nullptr) {
        Q_EMIT errorOccurred(QStringLiteral("No such block or task to run: %1").arg(prompt));
        return;
    }
    const QImage& pageImage = model_.page(doc, page).result.image;
    if (pageImage.isNull() && model_.needsPageImage(doc, page)) {
        // The block takes its task now, so that it is found again if its page's blocks are renumbered.
        BlockResult waiting = *current;
        waiting.label = choice->label;
        waiting.task = choice->prompt;
        waiting.edited = false;
        waiting.recognising = true;
        model_.setBlock(doc, page, waiting);
        model_.setPageEdited(doc, page);
        waitingForImage_.append({doc, page, blockId, current->box, choice->prompt, {}});
        Q_EMIT pageImageNeeded(doc, page);
        return;
    }
    if (pageImage.isNull()) {
        Q_EMIT errorOccurred(
            QCoreApplication::translate("folio::JobController",
                                        "%1, page %2: run the document before recognising its blocks")
                .arg(model_.document(doc).name)
                .arg(page + 1));
        return;
    }
    if (service_.status().state != ServiceState::Ready) {
        Q_EMIT errorOccurred(QStringLiteral("The engine is not ready: load a model first"));
        return;
    }
    // A newer request for the same block replaces an older one.
    cancelBlockRequests(doc, page, blockId);
    BlockResult block = *model_.block(doc, page, blockId);
    QImage crop = cropBlock(pageImage, block.box, block.polygon);
    if (crop.isNull()) {
        Q_EMIT errorOccurred(QStringLiteral("The box of block %1 lies outside its page").arg(blockId + 1));
        return;
    }
    const RecognitionOptions& recognition = pipelineOptions_.recognition;
    block.label = choice->label;
    block.task = choice->prompt;
    block.rawText.clear();
    block.content.clear();
    block.table.reset();
    block.error.clear();
    block.nTokens = 0;
    block.truncated = false;
    block.edited = false;
    block.recognising = true;
    block.image = savedAsImage(block.label, recognition) ? crop : QImage();
    crop = cropForTask(crop, choice->prompt);
    model_.setBlock(doc, page, block);
    model_.setPageEdited(doc, page);
    RequestSpec spec =
        blockRequest(crop, block.label, choice->prompt, recognition, pipelineOptions_.sampling);

    const int64_t serial = nextSerial_++;
    SubmitOptions options;
    options.priority = Priority::Interactive;
    options.on_output = [inbox = inbox_, serial, text = std::make_shared<std::string>(),
                         tokens = std::make_shared<int>(0)](const RequestOutput& output) {
        *text += output.text;
        *tokens += static_cast<int>(output.tokens.size());
        EvBlockOutput out;
        out.serial = serial;
        out.text = QString::fromStdString(*text);
        out.finished = output.finish.has_value();
        out.nTokens = *tokens;
        out.truncated = output.finish == FinishReason::Length;
        if (output.finish == FinishReason::Error) {
            out.error = QString::fromStdString(output.error);
        }
        inbox->pushBlockOutput(std::move(out));
    };
    try {
        RequestHandle handle = service_.submit(std::move(spec), std::move(options));
        blockRequests_.insert(serial,
                              BlockRequest{doc, page, blockId, block.box, block.task, std::move(handle)});
    } catch (const std::exception& e) {
        block.recognising = false;
        model_.setBlock(doc, page, block);
        Q_EMIT errorOccurred(QString::fromUtf8(e.what()));
    }
}

int JobController::recognizeRegion(int doc, int page, const BlockBox& box, const QString& prompt) {
    const BlockTaskChoice* choice = findBlockTask(prompt);
    if (choice == nullptr || !model_.hasPage(doc, page)) {
        return -1;
    }
    const QSize size = model_.page(doc, page).size;
    BlockResult block;
    block.label = choice->label;
    block.score = 1.0F;
    block.drawn = true;
    block.box = {std::clamp(box.x1, 0, size.width()), std::clamp(box.y1, 0, size.height()),
                 std::clamp(box.x2, 0, size.width()), std::clamp(box.y2, 0, size.height())};
    if (block.box.width() < 4 || block.box.height() < 4 || !canRecognize(doc, page)) {
        return -1;
    }
    const int id = static_cast<int>(model_.page(doc, page).result.blocks.size());
    model_.undoStack(doc)->push(
        new BlockRequestCommand(model_, *this, doc, page, id, tr("Draw a box as %1").arg(choice->name),
                                [this, doc, page, block, prompt = choice->prompt] {
                                    const int added = model_.addBlock(doc, page, block);
                                    submitBlock(doc, page, added, prompt);
                                }));
    return id;
}

}  // namespace folio
