#include "ui/chat/chat-panel.h"

#include <QAction>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFrame>
#include <QImageReader>
#include <QKeyEvent>
#include <QLabel>
#include <QMenu>
#include <QMimeData>
#include <QScrollBar>
#include <QTimer>
#include <algorithm>
#include <exception>

#include "app/documents/page-image.h"
#include "app/images/video-loader.h"
#include "ui/chat/chat-message-view.h"
#include "ui/chat/region-picker.h"

namespace folio {

namespace {

constexpr int kChipThumbnail = 40;

}  // namespace

ChatPanel::ChatPanel(EngineService& service, QWidget* parent)
    : QWidget(parent),
      session_(new ChatSession(service, this)),
      title_(new QLabel(this)),
      newButton_(new QToolButton(this)),
      scroll_(new QScrollArea(this)),
      messages_(new QWidget),
      messagesLayout_(new QVBoxLayout(messages_)),
      placeholder_(new QLabel(messages_)),
      modelNote_(new QFrame(this)),
      modelNoteText_(new QLabel(modelNote_)),
      downloadChat_(new QPushButton(modelNote_)),
      attachmentBar_(new QWidget(this)),
      attachmentLayout_(new QHBoxLayout(attachmentBar_)),
      notice_(new QLabel(this)),
      input_(new QPlainTextEdit(this)),
      attachButton_(new QToolButton(this)),
      askDocument_(new QToolButton(this)),
      sendButton_(new QPushButton(this)),
      stopButton_(new QPushButton(this)) {
    QFont titleFont = title_->font();
    titleFont.setBold(true);
    title_->setFont(titleFont);
    newButton_->setAutoRaise(true);
    newButton_->setIcon(QIcon::fromTheme(QStringLiteral("document-new")));
    newButton_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    connect(newButton_, &QToolButton::clicked, this, &ChatPanel::newConversation);
    auto* header = new QHBoxLayout;
    header->addWidget(title_);
    header->addStretch(1);
    header->addWidget(newButton_);

    // Without a chat model: which model answers instead, and the way to get one.
    modelNote_->setObjectName(QStringLiteral("modelNote"));
    modelNote_->setFrameShape(QFrame::StyledPanel);
    modelNoteText_->setWordWrap(true);
    downloadChat_->setObjectName(QStringLiteral("downloadChatModel"));
    connect(downloadChat_, &QPushButton::clicked, this, &ChatPanel::chatModelDownloadRequested);
    auto* noteLayout = new QVBoxLayout(modelNote_);
    noteLayout->setContentsMargins(8, 6, 8, 6);
    noteLayout->addWidget(modelNoteText_);
    noteLayout->addWidget(downloadChat_, 0, Qt::AlignRight);
    modelNote_->setVisible(false);
    setAcceptDrops(true);

    messagesLayout_->setContentsMargins(4, 4, 4, 4);
    messagesLayout_->setSpacing(6);
    placeholder_->setWordWrap(true);
    placeholder_->setAlignment(Qt::AlignCenter);
    placeholder_->setStyleSheet(QStringLiteral("color: palette(mid);"));
    messagesLayout_->addWidget(placeholder_);
    messagesLayout_->addStretch(1);
    scroll_->setWidget(messages_);
    scroll_->setWidgetResizable(true);
    scroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);

    attachmentLayout_->setContentsMargins(0, 0, 0, 0);
    attachmentBar_->setVisible(false);
    notice_->setWordWrap(true);
    notice_->setVisible(false);

    input_->setTabChangesFocus(true);
    input_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    input_->setFixedHeight(input_->fontMetrics().lineSpacing() * 4 + 12);
    input_->installEventFilter(this);
    connect(input_, &QPlainTextEdit::textChanged, this, &ChatPanel::updateButtons);

    auto* menu = new QMenu(this);
    attachPageAction_ = menu->addAction(QIcon::fromTheme(QStringLiteral("x-office-document")), QString(),
                                        this, &ChatPanel::attachCurrentPage);
    attachRegionAction_ = menu->addAction(QIcon::fromTheme(QStringLiteral("edit-select")), QString(), this,
                                          &ChatPanel::attachRegion);
    attachFilesAction_ = menu->addAction(QIcon::fromTheme(QStringLiteral("image-x-generic")), QString(), this,
                                         &ChatPanel::attachFiles);
    attachButton_->setMenu(menu);
    attachButton_->setPopupMode(QToolButton::InstantPopup);
    attachButton_->setIcon(QIcon::fromTheme(QStringLiteral("mail-attachment")));
    attachButton_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    sendButton_->setDefault(true);
    connect(sendButton_, &QPushButton::clicked, this, &ChatPanel::send);
    connect(stopButton_, &QPushButton::clicked, this, &ChatPanel::stop);
    askDocument_->setObjectName(QStringLiteral("askDocument"));
    attachButton_->setObjectName(QStringLiteral("attach"));
    placeholder_->setObjectName(QStringLiteral("placeholder"));
    notice_->setObjectName(QStringLiteral("notice"));
    askDocument_->setCheckable(true);
    askDocument_->setIcon(QIcon::fromTheme(QStringLiteral("document-preview")));
    askDocument_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    askDocument_->setEnabled(false);
    // Switched on, the document's passages are counted in the model's tokenizer while the question is typed.
    connect(askDocument_, &QToolButton::toggled, this, [this](bool on) {
        if (on && contextProvider_ && !session_->chatModel().isEmpty()) {
            session_->countDocumentAhead(contextProvider_());
        }
    });
    auto* actions = new QHBoxLayout;
    actions->addWidget(attachButton_);
    actions->addWidget(askDocument_);
    actions->addStretch(1);
    actions->addWidget(stopButton_);
    actions->addWidget(sendButton_);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(header);
    layout->addWidget(modelNote_);
    layout->addWidget(scroll_, 1);
    layout->addWidget(notice_);
    layout->addWidget(attachmentBar_);
    layout->addWidget(input_);
    layout->addLayout(actions);

    connect(session_, &ChatSession::turnAdded, this, [this](const QString& document, int index) {
        if (document == session_->document()) {
            addView(session_->history()[index]);
        }
    });
    connect(session_, &ChatSession::answerDelta, this,
            [this](const QString& document, int index, const QString& delta) {
                if (document == session_->document() && index < views_.size()) {
                    views_[index]->appendText(delta);
                    scrollToEnd();
                }
            });
    connect(session_, &ChatSession::reasoningDelta, this,
            [this](const QString& document, int index, const QString& delta, qint64 tokens) {
                if (document == session_->document() && index < views_.size()) {
                    views_[index]->appendReasoning(delta, tokens);
                    scrollToEnd();
                }
            });
    connect(session_, &ChatSession::answerFinished, this, [this](const QString& document, int index) {
        if (document == session_->document() && index < views_.size()) {
            views_[index]->setTurn(session_->history()[index]);
        }
        updateButtons();
    });
    connect(session_, &ChatSession::busyChanged, this, &ChatPanel::updateButtons);
    connect(session_, &ChatSession::failed, this,
            [this](const QString& message) { showMessage(message, true); });
    connect(session_, &ChatSession::documentChanged, this, &ChatPanel::rebuild);

    retranslate();
    rebuild();
    updateModel();
}

void ChatPanel::updateModel() {
    const bool ready = session_->engineReady();
    const QString chat = session_->chatModel();
    modelNote_->setVisible(ready && chat.isEmpty());
    title_->setText(chat.isEmpty() ? tr("Chat") : tr("Chat · %1").arg(chat));
    // A text-only chat model takes no pages or pictures: the attachments give way to Ask the document.
    const bool seesImages = session_->answersWith(Modality::Image);
    attachButton_->setEnabled(seesImages);
    attachButton_->setToolTip(seesImages
                                  ? tr("Attach the page, a region of it, or image and video files")
                                  : tr("%1 reads text only and cannot see pages or pictures").arg(chat));
    placeholder_->setText(
        seesImages
            ? tr("Ask about the current page, a region of it, or any image or video.\nAttach one, type a "
                 "question and press Enter.")
            : tr("Ask anything, or turn on Ask the document to ask about this document's recognised "
                 "text.\n%1 reads text only: it cannot see pages or pictures.")
                  .arg(chat));
}

void ChatPanel::showEvent(QShowEvent* event) {
    updateModel();
    QWidget::showEvent(event);
}

void ChatPanel::dragEnterEvent(QDragEnterEvent* event) {
    const QMimeData* mime = event->mimeData();
    const QList<QUrl> urls = mime->urls();
    const bool files =
        std::any_of(urls.begin(), urls.end(), [](const QUrl& url) { return url.isLocalFile(); });
    if (files || mime->hasImage()) {
        event->acceptProposedAction();
    }
}

void ChatPanel::dropEvent(QDropEvent* event) {
    const QMimeData* mime = event->mimeData();
    QStringList paths;
    for (const QUrl& url : mime->urls()) {
        if (url.isLocalFile()) {
            paths << url.toLocalFile();
        }
    }
    if (!paths.isEmpty()) {
        attachFilePaths(paths);
    } else if (mime->hasImage()) {
        attachImage(qvariant_cast<QImage>(mime->imageData()), tr("Dropped image"));
    }
    event->acceptProposedAction();
}

void ChatPanel::setPageProvider(PageProvider provider) {
    pageProvider_ = std::move(provider);
    updateButtons();
}

void ChatPanel::setDocumentContextProvider(DocumentContextProvider provider) {
    contextProvider_ = std::move(provider);
    askDocument_->setEnabled(static_cast<bool>(contextProvider_));
}

void ChatPanel::setDocument(const QString& key) {
    session_->setDocument(key);
}

QString ChatPanel::draft() const {
    return input_->toPlainText();
}

void ChatPanel::setDraft(const QString& text) {
    input_->setPlainText(text);
}

bool ChatPanel::refusesAttachments() {
    if (session_->answersWith(Modality::Image)) {
        return false;
    }
    showMessage(ChatSession::textOnlyMessage(session_->chatModel()), true);
    return true;
}

void ChatPanel::attachImage(const QImage& image, const QString& name) {
    if (image.isNull() || refusesAttachments()) {
        return;
    }
    attachments_.append(image);
    attachmentNames_.append(name.isEmpty() ? tr("Image %1").arg(attachments_.size()) : name);
    refreshAttachments();
}

void ChatPanel::attachCurrentPage() {
    const QImage page = pageProvider_ ? pageProvider_() : QImage();
    if (page.isNull()) {
        showMessage(tr("No page is shown to attach."), true);
        return;
    }
    attachImage(page, tr("Page"));
}

void ChatPanel::attachRegion() {
    const QImage page = pageProvider_ ? pageProvider_() : QImage();
    if (page.isNull()) {
        showMessage(tr("No page is shown to select a region of."), true);
        return;
    }
    attachImage(RegionPicker::pickRegion(page, this), tr("Region"));
}

void ChatPanel::attachFiles() {
    const QStringList paths = QFileDialog::getOpenFileNames(
        this, tr("Attach images or videos"), QString(),
        tr("Images and videos (*.png *.jpg *.jpeg *.tif *.tiff *.webp *.bmp *.mp4 *.mov *.mkv *.webm *.avi "
           "*.m4v);;All files (*)"));
    attachFilePaths(paths);
}

void ChatPanel::attachVideo(const Video& video, const QString& name) {
    if (video.frames.empty() || refusesAttachments()) {
        return;
    }
    videos_.append(video);
    videoNames_.append(name);
    refreshAttachments();
}

void ChatPanel::loadVideo(const QString& path) {
    ++videosLoading_;
    const QString name = QFileInfo(path).fileName();
    showMessage(tr("Reading %1…").arg(name), false);
    videoLoads_.start([this, path, name] {
        Video video;
        QString error;
        try {
            // An odd count of frames is padded by the model's preprocessing where its encoder pairs them.
            video = load_video(path.toStdString(), VideoSampling{});
        } catch (const std::exception& e) {
            error = QString::fromUtf8(e.what());
        }
        QMetaObject::invokeMethod(
            this,
            [this, video = std::move(video), name, error] {
                --videosLoading_;
                if (error.isEmpty()) {
                    attachVideo(video, name);
                    notice_->setVisible(false);
                } else {
                    showMessage(tr("Cannot attach %1").arg(error), true);
                }
            },
            Qt::QueuedConnection);
    });
}

void ChatPanel::attachFilePaths(const QStringList& paths) {
    if (refusesAttachments()) {
        return;
    }
    static const QStringList kVideoSuffixes = {QStringLiteral("mp4"), QStringLiteral("mov"),
                                               QStringLiteral("mkv"), QStringLiteral("webm"),
                                               QStringLiteral("avi"), QStringLiteral("m4v")};
    QStringList failures;
    for (const QString& path : paths) {
        if (kVideoSuffixes.contains(QFileInfo(path).suffix().toLower())) {
            loadVideo(path);
            continue;
        }
        QImageReader reader(path);
        reader.setAutoTransform(true);
        const QImage image = reader.read();
        if (image.isNull()) {
            failures << tr("%1: %2").arg(QFileInfo(path).fileName(), reader.errorString());
            continue;
        }
        attachImage(image, QFileInfo(path).fileName());
    }
    if (!failures.isEmpty()) {
        showMessage(tr("Cannot attach %1").arg(failures.join(QStringLiteral("; "))), true);
    }
}

void ChatPanel::clearAttachments() {
    attachments_.clear();
    attachmentNames_.clear();
    videos_.clear();
    videoNames_.clear();
    refreshAttachments();
}

void ChatPanel::send() {
    const QString text = input_->toPlainText().trimmed();
    if (text.isEmpty() && attachments_.isEmpty() && videos_.isEmpty()) {
        return;
    }
    notice_->setVisible(false);
    updateModel();
    // Ask the document: the document's blocks as they are now (pages finish and are edited meanwhile).
    std::shared_ptr<const DocumentContext> context;
    if (askDocument_->isChecked()) {
        if (session_->chatModel().isEmpty()) {
            // The OCR model reads pages; it does not answer questions about them.
            showMessage(tr("Asking the document needs a chat model: download one with the button above."),
                        true);
            return;
        }
        context = contextProvider_ ? contextProvider_() : nullptr;
        if (!context || context->empty()) {
            showMessage(tr("This document has no recognised text to ask about yet: run it first."), true);
            return;
        }
    }
    if (context) {
        session_->setDocumentContext(session_->document(), context);
    }
    if (session_->send(text, attachments_, videos_, context != nullptr)) {
        input_->clear();
        clearAttachments();
    }
    updateButtons();
}

void ChatPanel::stop() {
    session_->stop();
}

void ChatPanel::newConversation() {
    session_->clearHistory();
}

void ChatPanel::rebuild() {
    for (ChatMessageView* view : views_) {
        view->deleteLater();
    }
    views_.clear();
    for (const ChatTurn& turn : session_->history()) {
        addView(turn);
    }
    placeholder_->setVisible(views_.isEmpty());
    updateButtons();
}

void ChatPanel::addView(const ChatTurn& turn) {
    auto* view = new ChatMessageView(turn, messages_);
    connect(view, &ChatMessageView::copied, this, [this] { showMessage(tr("Answer copied."), false); });
    if (turn.fromDocument) {
        std::shared_ptr<const DocumentContext> context = session_->documentContext(session_->document());
        if (!context && contextProvider_) {
            // A conversation read back at start: its citations name the document's blocks as they are now.
            context = contextProvider_();
            if (context && !context->empty()) {
                session_->setDocumentContext(session_->document(), context);
            }
        }
        view->setCitations(context);
        connect(view, &ChatMessageView::citationClicked, this, [this, context](const QString& ref) {
            const DocumentPassage* passage = context ? context->find(ref) : nullptr;
            if (passage == nullptr) {
                showMessage(tr("The document has no block %1.").arg(ref), true);
                return;
            }
            Q_EMIT citationActivated(passage->page, passage->blockId);
        });
    }
    // Before the stretch that keeps the messages at the top.
    messagesLayout_->insertWidget(messagesLayout_->count() - 1, view);
    views_.append(view);
    placeholder_->setVisible(false);
    scrollToEnd();
}

void ChatPanel::refreshAttachments() {
    while (QLayoutItem* item = attachmentLayout_->takeAt(0)) {
        if (QWidget* widget = item->widget()) {
            widget->deleteLater();
        }
        delete item;
    }
    for (qsizetype i = 0; i < attachments_.size(); ++i) {
        auto* chip = new QToolButton(attachmentBar_);
        chip->setIcon(QPixmap::fromImage(attachments_[i].scaled(
            kChipThumbnail, kChipThumbnail, Qt::KeepAspectRatio, Qt::SmoothTransformation)));
        chip->setIconSize(QSize(kChipThumbnail, kChipThumbnail));
        chip->setText(attachmentNames_[i] + QStringLiteral("  ×"));
        chip->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
        chip->setToolTip(tr("Remove %1 (%2 × %3)")
                             .arg(attachmentNames_[i])
                             .arg(attachments_[i].width())
                             .arg(attachments_[i].height()));
        connect(chip, &QToolButton::clicked, this, [this, i] {
            attachments_.removeAt(i);
            attachmentNames_.removeAt(i);
            refreshAttachments();
        });
        attachmentLayout_->addWidget(chip);
    }
    for (qsizetype i = 0; i < videos_.size(); ++i) {
        auto* chip = new QToolButton(attachmentBar_);
        chip->setIcon(QPixmap::fromImage(
            toQImage(videos_[i].frames.front())
                .scaled(kChipThumbnail, kChipThumbnail, Qt::KeepAspectRatio, Qt::SmoothTransformation)));
        chip->setIconSize(QSize(kChipThumbnail, kChipThumbnail));
        chip->setText(tr("%1 (%2 frames)").arg(videoNames_[i]).arg(videos_[i].frames.size()) +
                      QStringLiteral("  ×"));
        chip->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
        chip->setToolTip(tr("Remove %1").arg(videoNames_[i]));
        connect(chip, &QToolButton::clicked, this, [this, i] {
            videos_.removeAt(i);
            videoNames_.removeAt(i);
            refreshAttachments();
        });
        attachmentLayout_->addWidget(chip);
    }
    attachmentLayout_->addStretch(1);
    attachmentBar_->setVisible(!attachments_.isEmpty() || !videos_.isEmpty());
    updateButtons();
}

void ChatPanel::updateButtons() {
    const bool busy = session_->busy();
    stopButton_->setVisible(busy);
    sendButton_->setVisible(!busy);
    sendButton_->setEnabled(!input_->toPlainText().trimmed().isEmpty() || !attachments_.isEmpty() ||
                            !videos_.isEmpty());
    const bool hasPage = static_cast<bool>(pageProvider_);
    attachPageAction_->setEnabled(hasPage);
    attachRegionAction_->setEnabled(hasPage);
    newButton_->setEnabled(!session_->history().isEmpty());
}

void ChatPanel::showMessage(const QString& message, bool error) {
    notice_->setText(message);
    notice_->setStyleSheet(error ? QStringLiteral("color: #b00020;")
                                 : QStringLiteral("color: palette(mid);"));
    notice_->setVisible(true);
    if (!error) {
        QTimer::singleShot(3000, notice_, [label = notice_, message] {
            if (label->text() == message) {
                label->setVisible(false);
            }
        });
    }
}

void ChatPanel::scrollToEnd() {
    // After the layout has placed the new text.
    QTimer::singleShot(0, scroll_, [bar = scroll_->verticalScrollBar()] { bar->setValue(bar->maximum()); });
}

bool ChatPanel::eventFilter(QObject* watched, QEvent* event) {
    // Enter sends, Shift+Enter starts a new line.
    if (watched == input_ && event->type() == QEvent::KeyPress) {
        const auto* key = static_cast<QKeyEvent*>(event);
        if ((key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) &&
            !(key->modifiers() & Qt::ShiftModifier)) {
            if (!session_->busy()) {
                send();
            }
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

void ChatPanel::changeEvent(QEvent* event) {
    if (event->type() == QEvent::LanguageChange) {
        retranslate();
    }
    QWidget::changeEvent(event);
}

void ChatPanel::retranslate() {
    updateModel();
    modelNoteText_->setText(
        tr("No chat model is loaded: the OCR model answers, which reads text well but is not made for "
           "conversation. A chat model (ERNIE-4.5-VL) loads beside it where memory allows."));
    downloadChat_->setText(tr("Download a chat model…"));
    newButton_->setText(tr("New conversation"));
    newButton_->setToolTip(tr("Forget this document's conversation"));
    input_->setPlaceholderText(tr("Ask a question…"));
    attachButton_->setText(tr("Attach"));
    askDocument_->setText(tr("Ask the document"));
    askDocument_->setToolTip(
        tr("Answer from the document's recognised text, citing the blocks each answer "
           "comes from; a click on a citation shows its block"));
    attachPageAction_->setText(tr("Current page"));
    attachRegionAction_->setText(tr("Region of the page…"));
    attachFilesAction_->setText(tr("Image or video files…"));
    sendButton_->setText(tr("Send"));
    stopButton_->setText(tr("Stop"));
    stopButton_->setToolTip(tr("Stop the answer; what it wrote so far stays"));
}

}  // namespace folio
