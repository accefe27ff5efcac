#include "ui/chat/chat-message-view.h"

#include <QAbstractTextDocumentLayout>
#include <QApplication>
#include <QClipboard>
#include <QEvent>
#include <QHBoxLayout>
#include <QPixmap>
#include <QTextBrowser>
#include <QUrl>
#include <QVBoxLayout>
#include <QtMath>

#include "app/documents/page-image.h"

namespace folio {

namespace {

constexpr int kThumbnail = 72;

}  // namespace

// A turn's text: selectable, Markdown for an answer, wrapped anywhere when a word is wider than the panel,
// and as tall as its text so that the panel's scroll area scrolls, not each message.
class MessageText : public QTextBrowser {
public:
    MessageText(bool markdown, QWidget* parent) : QTextBrowser(parent), markdown_(markdown) {
        setFrameShape(QFrame::NoFrame);
        setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
        setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
        setWordWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
        setOpenLinks(false);
        setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
        viewport()->setAutoFillBackground(false);
        document()->setDocumentMargin(0);
        connect(document()->documentLayout(), &QAbstractTextDocumentLayout::documentSizeChanged, this,
                &MessageText::fitHeight);
    }

    void setContent(const QString& text) {
        if (markdown_) {
            setMarkdown(text);
        } else {
            setPlainText(text);
        }
        fitHeight();
    }

protected:
    void resizeEvent(QResizeEvent* event) override {
        QTextBrowser::resizeEvent(event);
        fitHeight();
    }

private:
    void fitHeight() {
        document()->setTextWidth(viewport()->width());
        const int height =
            qCeil(document()->size().height()) + contentsMargins().top() + contentsMargins().bottom();
        if (height != this->height()) {
            setFixedHeight(height);
        }
    }

    bool markdown_;
};

ChatMessageView::ChatMessageView(const ChatTurn& turn, QWidget* parent)
    : QFrame(parent),
      role_(turn.role),
      state_(turn.state),
      who_(new QLabel(this)),
      thought_(new QToolButton(this)),
      reasoningBody_(new MessageText(false, this)),
      body_(new MessageText(turn.role == ChatTurn::Role::Assistant, this)),
      status_(new QLabel(this)),
      copy_(new QToolButton(this)),
      thumbnails_(new QWidget(this)) {
    setFrameShape(QFrame::StyledPanel);
    setObjectName(role_ == ChatTurn::Role::User ? QStringLiteral("question") : QStringLiteral("answer"));
    setAutoFillBackground(true);
    QPalette p = palette();
    p.setColor(QPalette::Window,
               role_ == ChatTurn::Role::User ? p.color(QPalette::AlternateBase) : p.color(QPalette::Base));
    setPalette(p);

    QFont bold = who_->font();
    bold.setBold(true);
    who_->setFont(bold);
    status_->setWordWrap(true);
    copy_->setAutoRaise(true);
    copy_->setIcon(QIcon::fromTheme(QStringLiteral("edit-copy")));
    copy_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    copy_->setVisible(role_ == ChatTurn::Role::Assistant);
    connect(copy_, &QToolButton::clicked, this, &ChatMessageView::copy);
    pagesLeftOut_ = turn.pagesLeftOut;
    pagesInPart_ = turn.pagesInPart;
    body_->setObjectName(QStringLiteral("text"));
    connect(body_, &QTextBrowser::anchorClicked, this, [this](const QUrl& url) {
        if (url.scheme() ==
            QLatin1String(kCitationScheme.data(), static_cast<qsizetype>(kCitationScheme.size()))) {
            Q_EMIT citationClicked(url.path());
        }
    });

    // The thought, folded: the arrow button unfolds it in a muted, indented block above the answer.
    thought_->setObjectName(QStringLiteral("reasoningToggle"));
    thought_->setCheckable(true);
    thought_->setAutoRaise(true);
    thought_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    thought_->setArrowType(Qt::RightArrow);
    thought_->setStyleSheet(QStringLiteral("QToolButton { border: none; }"));
    thought_->setVisible(false);
    connect(thought_, &QToolButton::toggled, this, [this](bool on) {
        thought_->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
        if (on) {
            reasoningBody_->setContent(reasoning_);
        }
        reasoningBody_->setVisible(on);
        retranslate();
    });
    reasoningBody_->setObjectName(QStringLiteral("reasoning"));
    reasoningBody_->setVisible(false);
    // A rule down its left side sets the thought apart from the answer below it.
    reasoningBody_->setStyleSheet(QStringLiteral(
        "QTextBrowser { border: none; border-left: 2px solid palette(mid); padding-left: 6px; }"));
    QPalette muted = reasoningBody_->palette();
    muted.setColor(QPalette::Text, muted.color(QPalette::PlaceholderText));
    reasoningBody_->setPalette(muted);
    QPalette mutedButton = thought_->palette();
    mutedButton.setColor(QPalette::ButtonText, mutedButton.color(QPalette::PlaceholderText));
    thought_->setPalette(mutedButton);

    auto* header = new QHBoxLayout;
    header->addWidget(who_);
    header->addStretch(1);
    header->addWidget(copy_);
    auto* thumbs = new QHBoxLayout(thumbnails_);
    thumbs->setContentsMargins(0, 0, 0, 0);
    for (const QImage& image : turn.images) {
        auto* thumb = new QLabel(thumbnails_);
        thumb->setPixmap(QPixmap::fromImage(
            image.scaled(kThumbnail, kThumbnail, Qt::KeepAspectRatio, Qt::SmoothTransformation)));
        thumb->setToolTip(QStringLiteral("%1 × %2").arg(image.width()).arg(image.height()));
        thumb->setFrameShape(QFrame::Box);
        thumbs->addWidget(thumb);
    }
    // A video shows its first frame.
    for (const Video& video : turn.videos) {
        if (video.frames.empty()) {
            continue;
        }
        auto* thumb = new QLabel(thumbnails_);
        thumb->setPixmap(QPixmap::fromImage(
            toQImage(video.frames.front())
                .scaled(kThumbnail, kThumbnail, Qt::KeepAspectRatio, Qt::SmoothTransformation)));
        thumb->setToolTip(tr("Video: %1 frames").arg(video.frames.size()));
        thumb->setFrameShape(QFrame::Box);
        thumb->setLineWidth(2);
        thumbs->addWidget(thumb);
    }
    // A conversation read back keeps no videos: it says that there were some.
    for (int i = 0; i < turn.videosNotKept; ++i) {
        auto* gone = new QLabel(tr("video\nnot kept"), thumbnails_);
        gone->setAlignment(Qt::AlignCenter);
        gone->setFixedSize(kThumbnail, kThumbnail);
        gone->setToolTip(tr("Videos are not kept when Folio closes: attach it again to ask about it"));
        gone->setFrameShape(QFrame::Box);
        gone->setLineWidth(2);
        thumbs->addWidget(gone);
    }
    thumbs->addStretch(1);
    thumbnails_->setVisible(!turn.images.isEmpty() || !turn.videos.isEmpty() || turn.videosNotKept > 0);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(8, 6, 8, 6);
    layout->addLayout(header);
    layout->addWidget(thumbnails_);
    layout->addWidget(thought_, 0, Qt::AlignLeft);
    layout->addWidget(reasoningBody_);
    layout->addWidget(body_);
    layout->addWidget(status_);
    setTurn(turn);
}

void ChatMessageView::setTurn(const ChatTurn& turn) {
    state_ = turn.state;
    text_ = turn.text;
    error_ = turn.error;
    reasoning_ = turn.reasoning;
    reasoningTokens_ = turn.reasoningTokens;
    pagesLeftOut_ = turn.pagesLeftOut;
    pagesInPart_ = turn.pagesInPart;
    showText();
    showReasoning();
    retranslate();
}

void ChatMessageView::appendReasoning(const QString& delta, qint64 tokens) {
    reasoning_ += delta;
    reasoningTokens_ = tokens;
    showReasoning();
    retranslate();
}

bool ChatMessageView::reasoningExpanded() const {
    return thought_->isChecked();
}

void ChatMessageView::setReasoningExpanded(bool expanded) {
    thought_->setChecked(expanded);
}

QWidget* ChatMessageView::reasoningBody() const {
    return reasoningBody_;
}

void ChatMessageView::showReasoning() {
    // Laid out only while unfolded: a long thought streaming in costs nothing folded.
    if (thought_->isChecked()) {
        reasoningBody_->setContent(reasoning_);
    }
    thought_->setVisible(!reasoning_.isEmpty());
}

void ChatMessageView::appendText(const QString& delta) {
    text_ += delta;
    showText();
}

void ChatMessageView::setCitations(std::shared_ptr<const DocumentContext> context) {
    citations_ = std::move(context);
    showText();
}

QString ChatMessageView::shownText() const {
    return citations_ ? linkCitations(text_, *citations_) : text_;
}

void ChatMessageView::showText() {
    body_->setContent(shownText());
    copy_->setEnabled(!text_.isEmpty());
    // An answer still being written keeps its place; a finished one without text (all thought) has none.
    body_->setVisible(!text_.isEmpty() ||
                      (role_ == ChatTurn::Role::Assistant && state_ == ChatTurn::State::Streaming));
}

void ChatMessageView::copy() {
    QApplication::clipboard()->setText(text_);
    Q_EMIT copied();
}

void ChatMessageView::changeEvent(QEvent* event) {
    if (event->type() == QEvent::LanguageChange) {
        retranslate();
    }
    QFrame::changeEvent(event);
}

void ChatMessageView::retranslate() {
    who_->setText(role_ == ChatTurn::Role::User ? tr("You") : tr("Folio"));
    copy_->setText(tr("Copy"));
    copy_->setToolTip(tr("Copy the answer"));
    const bool thinking = state_ == ChatTurn::State::Streaming && text_.isEmpty();
    if (thinking) {
        thought_->setText(reasoningTokens_ == 1 ? tr("Thinking… (1 token)")
                                                : tr("Thinking… (%1 tokens)").arg(reasoningTokens_));
    } else {
        thought_->setText(reasoningTokens_ == 1 ? tr("Thought for 1 token")
                                                : tr("Thought for %1 tokens").arg(reasoningTokens_));
    }
    thought_->setToolTip(thought_->isChecked() ? tr("Hide the reasoning") : tr("Show the reasoning"));
    switch (state_) {
        case ChatTurn::State::Streaming:
            status_->setText(tr("Writing…"));
            status_->setStyleSheet(QStringLiteral("color: palette(mid);"));
            break;
        case ChatTurn::State::Stopped:
            status_->setText(tr("Stopped"));
            status_->setStyleSheet(QStringLiteral("color: palette(mid);"));
            break;
        case ChatTurn::State::Failed:
            status_->setText(error_);
            status_->setStyleSheet(QStringLiteral("color: #b00020;"));
            break;
        case ChatTurn::State::Done: {
            QStringList lines;
            // A thought that used up the new tokens before "</think>".
            if (text_.isEmpty() && !reasoning_.isEmpty()) {
                lines.append(tr("The answer ran out of tokens while still reasoning."));
            }
            // The stated rule cut the document: say which pages the answer could not see, or saw in part.
            const auto numbers = [](const QList<int>& pages) {
                QStringList out;
                for (const int page : pages) {
                    out.append(QString::number(page + 1));
                }
                return out.join(QStringLiteral(", "));
            };
            if (!pagesLeftOut_.isEmpty() && pagesInPart_.isEmpty()) {
                lines.append(tr("Answered from part of the document: pages %1 did not fit in the context.")
                                 .arg(numbers(pagesLeftOut_)));
            } else if (pagesLeftOut_.isEmpty() && !pagesInPart_.isEmpty()) {
                lines.append(tr("Answered from part of the document: of pages %1 only the blocks nearest the "
                                "question fitted in the context.")
                                 .arg(numbers(pagesInPart_)));
            } else if (!pagesLeftOut_.isEmpty()) {
                lines.append(
                    tr("Answered from part of the document: pages %1 did not fit in the context, and "
                       "of pages %2 only the blocks nearest the question did.")
                        .arg(numbers(pagesLeftOut_), numbers(pagesInPart_)));
            }
            status_->setText(lines.join(QLatin1Char('\n')));
            status_->setStyleSheet(QStringLiteral("color: palette(mid);"));
            break;
        }
    }
    status_->setVisible(!status_->text().isEmpty());
}

}  // namespace folio
