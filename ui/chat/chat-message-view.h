// One turn of a chat as the chat panel shows it: who speaks, the attached images as thumbnails, a reasoning
// model's thought folded above the answer (a button that says how long it thought and unfolds it), the text
// (an answer rendered as Markdown as it streams), its state, and a button that copies an answer.
#pragma once

#include <QFrame>
#include <QLabel>
#include <QToolButton>

#include <memory>

#include "app/chat/chat-session.h"
#include "app/chat/document-context.h"

namespace folio {

class MessageText;

class ChatMessageView : public QFrame {
    Q_OBJECT

public:
    explicit ChatMessageView(const ChatTurn& turn, QWidget* parent = nullptr);

    void setTurn(const ChatTurn& turn);
    void appendText(const QString& delta);
    QString text() const { return text_; }
    // More of the thought before the answer; tokens: its tokens so far.
    void appendReasoning(const QString& delta, qint64 tokens);
    QString reasoning() const { return reasoning_; }
    // Whether the thought is unfolded; it starts folded.
    bool reasoningExpanded() const;
    void setReasoningExpanded(bool expanded);
    // The fold's button and the thought's text (tests).
    QToolButton* reasoningToggle() const { return thought_; }
    QWidget* reasoningBody() const;
    // Puts the text on the clipboard.
    void copy();
    // An answer asked of the document: its citations of the context's blocks become links.
    void setCitations(std::shared_ptr<const DocumentContext> context);
    // The text as shown (Markdown, citations linked).
    QString shownText() const;
    // The line under the turn: its state, or the pages an answer from the document could not see (tests).
    QString statusText() const { return status_->text(); }

Q_SIGNALS:
    void copied();
    // A citation's link was clicked: the reference ("p3.b5").
    void citationClicked(const QString& ref);

protected:
    void changeEvent(QEvent* event) override;

private:
    void retranslate();
    void showText();
    void showReasoning();

    ChatTurn::Role role_;
    ChatTurn::State state_;
    QString text_;
    QString error_;
    QString reasoning_;
    std::shared_ptr<const DocumentContext> citations_;
    QList<int> pagesLeftOut_;
    QList<int> pagesInPart_;
    qint64 reasoningTokens_ = 0;
    QLabel* who_;
    QToolButton* thought_;
    MessageText* reasoningBody_;
    MessageText* body_;
    QLabel* status_;
    QToolButton* copy_;
    QWidget* thumbnails_;
};

}  // namespace folio
