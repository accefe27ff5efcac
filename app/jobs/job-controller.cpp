#include "app/jobs/job-controller.h"

#include <QElapsedTimer>
#include <QMetaObject>
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
        QList<WaitingRerun> ready;
        for (auto it = waitingForImage_.begin(); it != waitingForImage_.end();) {
            if (it->doc == doc && it->page == page) {
                ready.append(*it);
                it = waitingForImage_.erase(it);
            } else {
                ++it;
            }
        }
        for (const WaitingRerun& rerun : std::as_const(ready)) {
            rerunBlock(rerun.doc, rerun.page, rerun.blockId, rerun.prompt);
        }
    });
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
}

void JobController::run(const QList<int>& documents) {
    for (const int doc : documents) {
        if (doc < 0 || doc >= model_.documentCount() || queue_.contains(doc) ||
            (isRunning() && jobDocuments_.values().contains(doc))) {
            continue;
        }
        // Re-runs and drawn boxes of the document are forgotten.
        for (auto it = blockRequests_.begin(); it != blockRequests_.end();) {
            it = it->doc == doc ? blockRequests_.erase(it) : std::next(it);
        }
        waitingForImage_.removeIf([doc](const WaitingRerun& rerun) { return rerun.doc == doc; });
        queue_.push_back(doc);
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
    for (const int doc : std::as_const(queue_)) {
        const QString path = model_.document(doc).path;
        jobDocuments_.insert(path, doc);
        inputs << path;
        model_.resetResults(doc);
    }
    queue_.clear();
    DocumentOpener opener = opener_ ? opener_ : sourceOpener(documentOptions_, PageRange());
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
        model_.setDocumentState(doc, DocumentState::Idle);
    }
    queue_.clear();
    if (pipeline_) {
        pipeline_->cancel();
    }
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
            startNext();
        } else if (const auto* output = std::get_if<EvBlockOutput>(&event)) {
            const auto it = blockRequests_.find(output->serial);
            if (it == blockRequests_.end()) {
                continue;
            }
            const BlockRequest request = *it;
            if (!output->finished) {
                model_.blockText(request.doc, request.page, request.blockId, output->text);
                continue;
            }
            blockRequests_.erase(it);
            const BlockResult* current = model_.block(request.doc, request.page, request.blockId);
            if (current == nullptr) {
                continue;
            }
            BlockResult block = *current;
            block.rawText = output->text;
            block.nTokens = output->nTokens;
            block.truncated = output->truncated;
            block.error = output->error;
            if (output->error.isEmpty()) {
                finalizeBlock(block);
            } else {
                Q_EMIT errorOccurred(QStringLiteral("%1, page %2, block %3: %4")
                                         .arg(model_.document(request.doc).name)
                                         .arg(request.page + 1)
                                         .arg(request.blockId + 1)
                                         .arg(output->error));
            }
            model_.setBlock(request.doc, request.page, block);
            Q_EMIT blockRecognized(request.doc, request.page, request.blockId);
        }
    }
}

void JobController::rerunBlock(int doc, int page, int blockId, const QString& prompt) {
    const BlockTaskChoice* choice = findBlockTask(prompt);
    const BlockResult* current = model_.block(doc, page, blockId);
    if (choice == nullptr || current == nullptr) {
        Q_EMIT errorOccurred(QStringLiteral("No such block or task to run: %1").arg(prompt));
        return;
    }
    const QImage& pageImage = model_.page(doc, page).result.image;
    if (pageImage.isNull() && model_.needsPageImage(doc, page)) {
        waitingForImage_.append({doc, page, blockId, prompt});
        Q_EMIT pageImageNeeded(doc, page);
        return;
    }
    if (pageImage.isNull()) {
        Q_EMIT errorOccurred(QStringLiteral("%1, page %2: run the document before recognising its blocks")
                                 .arg(model_.document(doc).name)
                                 .arg(page + 1));
        return;
    }
    if (service_.status().state != ServiceState::Ready) {
        Q_EMIT errorOccurred(QStringLiteral("The engine is not ready: load a model first"));
        return;
    }
    BlockResult block = *current;
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
    block.image = savedAsImage(block.label, recognition) ? crop : QImage();
    crop = cropForTask(crop, choice->prompt);
    model_.setBlock(doc, page, block);
    RequestSpec spec =
        blockRequest(crop, block.label, choice->prompt, recognition, pipelineOptions_.sampling);

    const int64_t serial = nextSerial_++;
    // A newer request for the same block replaces an older one.
    for (auto it = blockRequests_.begin(); it != blockRequests_.end();) {
        it = it->doc == doc && it->page == page && it->blockId == blockId ? blockRequests_.erase(it)
                                                                          : std::next(it);
    }
    blockRequests_.insert(serial, BlockRequest{doc, page, blockId});
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
        service_.submit(std::move(spec), std::move(options));
    } catch (const std::exception& e) {
        blockRequests_.remove(serial);
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
    block.box = {std::clamp(box.x1, 0, size.width()), std::clamp(box.y1, 0, size.height()),
                 std::clamp(box.x2, 0, size.width()), std::clamp(box.y2, 0, size.height())};
    if (block.box.width() < 4 || block.box.height() < 4) {
        return -1;
    }
    const int id = model_.addBlock(doc, page, block);
    rerunBlock(doc, page, id, choice->prompt);
    return id;
}

void JobController::removeBlock(int doc, int page, int blockId) {
    for (auto it = waitingForImage_.begin(); it != waitingForImage_.end();) {
        if (it->doc == doc && it->page == page && it->blockId == blockId) {
            it = waitingForImage_.erase(it);
            continue;
        }
        if (it->doc == doc && it->page == page && it->blockId > blockId) {
            --it->blockId;
        }
        ++it;
    }
    for (auto it = blockRequests_.begin(); it != blockRequests_.end();) {
        if (it->doc == doc && it->page == page) {
            if (it->blockId == blockId) {
                it = blockRequests_.erase(it);
                continue;
            }
            if (it->blockId > blockId) {
                --it->blockId;
            }
        }
        ++it;
    }
    model_.removeBlock(doc, page, blockId);
}

}  // namespace folio
